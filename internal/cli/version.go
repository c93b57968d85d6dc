package cli

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/runnerbench/runner/result"
)

// Version is the release version, set at build time with
// -ldflags "-X github.com/runnerbench/runner/internal/cli.Version=v1.2.3".
// Without it the module version and VCS revision from the build info are used.
var Version = ""

// VersionString is the version reports record as runner_version.
func VersionString() string {
	v := Version
	info, ok := debug.ReadBuildInfo()
	if v == "" && ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		v = info.Main.Version
	}
	if v == "" {
		v = "dev"
	}
	if ok {
		var rev, dirty string
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = "+dirty"
				}
			}
		}
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if rev != "" && v == "dev" {
			v += "-" + rev + dirty
		}
	}
	return v
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
