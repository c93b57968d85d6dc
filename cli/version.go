package cli

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/runnerbench/runner/result"
)

// Version is the release version, set at build time with
// -ldflags "-X github.com/runnerbench/runner/cli.Version=v1.2.3".
// Without it the main module's version from the build info is used: since
// Go 1.24 a build from a checkout stamps its commit's pseudo-version there
// (v0.0.0-<date>-<commit>, "+dirty" with uncommitted changes), as go
// install @main does; a build without VCS information says "dev". The
// README's Install section shows these shapes, and a test holds it to a
// real build's.
var Version = ""

// VersionString is the version reports record as runner_version.
func VersionString() string {
	info, ok := debug.ReadBuildInfo()
	return versionOf(Version, info, ok)
}

func versionOf(set string, info *debug.BuildInfo, ok bool) string {
	switch {
	case set != "":
		return set
	case ok && info.Main.Version != "" && info.Main.Version != "(devel)":
		return info.Main.Version
	}
	return "dev"
}

const versionSynopsis = "runner version\n\nPrint the version, the Go version and the report schema version."

// cmdVersion implements "runner version".
func cmdVersion(_ context.Context, env *Env, args []string) error {
	fs := newFlagSet("version")
	if _, err := parseArgs(env, fs, versionSynopsis, args); err != nil {
		return err
	}
	_, err := fmt.Fprintf(env.Stdout, "runner %s (%s, %s/%s, report schema %d)\n",
		VersionString(), runtime.Version(), runtime.GOOS, runtime.GOARCH, result.SchemaVersion)
	return err
}
