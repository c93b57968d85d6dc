package cli

import (
	"context"

	"github.com/runnerbench/runner/internal/exitcode"
)

// cmdRun implements "runner run PLAN.yaml" and "runner PLAN.yaml".
//
// PLACEHOLDER owned by the lead, who replaces this file: it parses the flags
// into RunOptions, loads and validates the plan and the stage selection, and
// stops there.
func cmdRun(ctx context.Context, env *Env, args []string) error {
	opts, err := parseRunOptions(env, args)
	if err != nil {
		return err
	}
	p, err := loadPlan(env, opts.PlanPath)
	if err != nil {
		return err
	}
	if _, err := selectStages(p, opts.Stages); err != nil {
		return err
	}
	return exitcode.Errorf(exitcode.RunFailed, "run: not wired yet")
}
