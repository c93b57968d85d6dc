package engines

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// SimModel is the model name llm-d-inference-sim serves in these tests: not a
// Hugging Face model, so it never looks one up.
const SimModel = "runner-test-model"

// simPackage is the simulator's main package, required by the tools module.
const simPackage = "github.com/llm-d/llm-d-inference-sim/cmd/llm-d-inference-sim"

// BuildInferenceSim builds llm-d-inference-sim from the tools module
// root/tools/engines (which pins its version) and returns the binary. The
// binary goes to a fixed place in the user's cache, so a later build whose
// inputs are unchanged finds it up to date and neither compiles nor links (a
// fraction of a second); the first build downloads the modules and compiles
// them, minutes on a small machine. A build that cannot reach the module
// proxy is an *UnavailableError.
func BuildInferenceSim(ctx context.Context, root string) (string, error) {
	return buildTool(ctx, root, "llm-d-inference-sim", simPackage)
}

// buildTool builds the tools module's main package pkg into the user's
// cache as name (see BuildInferenceSim). The build and the wait for another
// process's build of the same tool (a lock per tool, so a long Prometheus
// build does not hold up the simulator's) end with ctx: a first build that
// does not finish in time (TestContext gives it half of what go test's
// -timeout left) is an *UnavailableError that says how to build it
// beforehand, not a test binary that panics on its timeout. Go keeps what
// it compiled, so the next try goes further.
func buildTool(ctx context.Context, root, name, pkg string) (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", &UnavailableError{Reason: name + ": no go command on PATH to build it"}
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	dir = filepath.Join(dir, "runner-test-engines")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, name)
	beforehand := fmt.Sprintf("build it beforehand, as .ci/run does: (cd tools/engines && GOWORK=off go build -o %s %s)", bin, pkg)
	unlock, err := lockFile(ctx, filepath.Join(dir, name+".lock"))
	if err != nil {
		if ctx.Err() != nil {
			return "", &UnavailableError{Reason: name + ": another process's build of it did not finish in time for this test binary; " + beforehand}
		}
		return "", err
	}
	defer unlock()
	cmd := exec.CommandContext(ctx, goBin, "build", "-o", bin, pkg)
	cmd.Dir = filepath.Join(root, "tools", "engines")
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(out.String())
		if line, ok := offline(msg); ok {
			return "", &UnavailableError{Reason: name + ": cannot fetch its modules (no module proxy?): " + line}
		}
		if ctx.Err() != nil {
			return "", &UnavailableError{Reason: name + ": its first build did not finish in time for this test binary (half of what go test's -timeout left); " + beforehand}
		}
		return "", fmt.Errorf("building %s: %w\n%s", name, err, msg)
	}
	return bin, nil
}

// offline returns the line of go build's output that says the modules could
// not be downloaded, if one does (as opposed to a compile error).
func offline(msg string) (string, bool) {
	for line := range strings.Lines(msg) {
		for _, s := range []string{"dial tcp", "no such host", "GOPROXY=off", "module lookup disabled",
			"connection refused", "i/o timeout", "TLS handshake", "network is unreachable"} {
			if strings.Contains(line, s) {
				return strings.TrimSpace(line), true
			}
		}
	}
	return "", false
}

// StartInferenceSim starts llm-d-inference-sim on a free port: random
// responses, a fixed seed, the dummy tokenizer (so it never asks Hugging Face
// about the model), no KV-event publisher, a 16384-token context and 16
// sequences at once, then args. It binds every interface, like vLLM: send it
// loopback traffic only (BaseURL is on 127.0.0.1). POD_IP=127.0.0.1 is set
// for --enable-kvcache.
func StartInferenceSim(ctx context.Context, bin string, args ...string) (*Engine, error) {
	base := []string{"--model", SimModel, "--port", "PORT", "--mode", "random", "--seed", "7",
		"--force-dummy-tokenizer", "--zmq-endpoint=", "--max-model-len", "16384", "--max-num-seqs", "16"}
	return start(ctx, "llm-d-inference-sim", bin, []string{"POD_IP=127.0.0.1"}, append(base, args...))
}
