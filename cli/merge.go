package cli

import (
	"context"
	"errors"

	"github.com/runnerbench/runner/internal/exitcode"
	"github.com/runnerbench/runner/internal/logging"
	"github.com/runnerbench/runner/pipeline"
)

const mergeSynopsis = `runner merge SHARD_DIR... --out DIR [flags]

Merge the result directories of a sharded run's shards (runner PLAN --shard i/N
or --shards N) into one result directory, as one process running the whole
plan would have left it: plan.yaml, every shard's requests, run.jsonl with
one record per level (the union of the shards' windows, all their token gaps,
one shard's server counters) and every report. Checks are evaluated once, on
the merged levels; with --baseline they compare against that report. Shards
of different plans, runner versions, shard counts or schedules, a shard
missing or given twice, or levels that do not match are refused (exit 2).
Exits as a run would have.`

// cmdMerge implements "runner merge SHARD_DIR... --out DIR".
func cmdMerge(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet("merge")
	o, reports := reportFlags(fs, "write the merged result directory into `dir` (required; not one of the shards')")
	var pub dbFlags
	fs.StringVar(&pub.dsn, "publish", "", "publish the merged run into this results `database` (see runner publish --help)")
	fs.Var(&pub.allowEnv, "allow-env", "`NAME@HOST`: PGPASSWORD@HOST gives --publish's PostgreSQL password (repeatable)")
	dirs, err := parseArgs(env, fs, mergeSynopsis, args)
	if err != nil {
		return err
	}
	if len(dirs) == 0 {
		return exitcode.Errorf(exitcode.Invalid, "merge: no shard directories given (usage: runner merge SHARD_DIR... --out DIR)")
	}
	if o.Out == "" {
		return exitcode.Errorf(exitcode.Invalid, "merge: --out DIR is required: the merged result directory")
	}
	baseline, err := o.reportInputs(*reports)
	if err != nil {
		return err
	}
	shards, err := pipeline.ReadShards(dirs)
	if err == nil {
		err = shards.CheckOut(o.Out) // before anything touches --out
	}
	if err != nil {
		return exitcode.Errorf(exitcode.Invalid, "merge: %w", err)
	}
	after := publishAfter{dsn: pub.dsn, allowEnv: pub.allowEnv, quiet: o.Quiet}
	if err := after.check(ctx, env, "merge"); err != nil {
		return err
	}
	log, _ := logging.New(env.Stderr, o.LogFormat, o.LogLevel, false)
	// --out holds one result, as a run's does: an earlier merge there is
	// replaced, anything else refused (after CheckOut: never a shard's own).
	if err := prepareOutDir(o.Out, o.Baseline, log); err != nil {
		return err
	}
	rep, err := shards.Write(o.Out, baseline)
	if err != nil {
		code := exitcode.RunFailed
		if errors.Is(err, pipeline.ErrRefused) {
			code = exitcode.Invalid
		}
		return exitcode.Errorf(code, "merge: %w", err)
	}
	writeErr := writeReports(env, o, o.Out, o.Out, rep, baseline, log)
	return exitError(rep, after.publish(ctx, env, "merge", o.Out), writeErr)
}
