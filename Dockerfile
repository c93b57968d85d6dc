# The runner image: one static binary (CGO_ENABLED=0: no libc to match) on
# distroless/static, which has CA certificates and time zones but no shell or
# package manager, running as the image's non-root user (65532). Runner needs
# nothing else: plans, prompt files and results come in through volumes
# (deploy/kubernetes). Build from the repository root:
#
#   docker build -t REGISTRY/runner:TAG .
#
# The entrypoint is the binary: `docker run IMAGE plan.yaml ...`,
# `docker run IMAGE merge ...`.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X github.com/runnerbench/runner/cli.Version=${VERSION}" -o /out/runner ./cmd/runner

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/runner /runner
USER 65532:65532
ENTRYPOINT ["/runner"]
