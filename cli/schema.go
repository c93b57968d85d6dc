package cli

import (
	"context"

	"github.com/runnerbench/runner/internal/exitcode"
	"github.com/runnerbench/runner/schema"
)

const schemaSynopsis = "runner schema [plan|report]\n\nPrint the JSON Schema of a plan (default) or of report.json."

// cmdSchema implements "runner schema".
func cmdSchema(_ context.Context, env *Env, args []string) error {
	fs := newFlagSet("schema")
	pos, err := parseArgs(env, fs, schemaSynopsis, args)
	if err != nil {
		return err
	}
	which := "plan"
	switch len(pos) {
	case 0:
	case 1:
		which = pos[0]
	default:
		return exitcode.Errorf(exitcode.Invalid, "schema: expected one of plan or report, got %d arguments", len(pos))
	}
	var b []byte
	switch which {
	case "plan":
		b = schema.Plan()
	case "report":
		b = schema.Report()
	default:
		return exitcode.Errorf(exitcode.Invalid, "schema: unknown schema %q: expected plan or report%s", which, suggest(which, []string{"plan", "report"}))
	}
	_, err = env.Stdout.Write(b)
	return err
}
