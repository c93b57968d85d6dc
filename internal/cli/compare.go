package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/runnerbench/runner/internal/compare"
	"github.com/runnerbench/runner/internal/exitcode"
	"github.com/runnerbench/runner/reporters"
	"github.com/runnerbench/runner/result"
)

const compareSynopsis = "runner compare BASE.json NEW.json [flags]\n\nPer-metric deltas between two report.json files, matched by stage and level.\nWith --fail-above, exits 1 when a metric got worse by more than that percentage."

// cmdCompare implements "runner compare".
func cmdCompare(_ context.Context, env *Env, args []string) error {
	fs := newFlagSet("compare")
	markdown := fs.Bool("markdown", false, "write a Markdown table (for a pull-request comment)")
	changed := fs.Bool("changed-only", false, "leave out metrics that did not change")
	failAbove := fs.Float64("fail-above", -1, "exit 1 when a metric regressed by more than this `percent`")
	pos, err := parseArgs(env, fs, compareSynopsis, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return exitcode.Errorf(exitcode.Invalid, "compare: expected two reports (BASE.json NEW.json), got %d", len(pos))
	}
	base, err := readReport(pos[0])
	if err != nil {
		return err
	}
	cur, err := readReport(pos[1])
	if err != nil {
		return err
	}
	res := compare.Reports(base, cur)
	var limit *float64
	if *failAbove >= 0 {
		limit = failAbove
	}
	if *markdown {
		err = compare.Markdown(env.Stdout, res, *changed, limit)
	} else {
		err = compare.Text(env.Stdout, res, *changed)
	}
	if err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	if limit != nil {
		if bad := res.Regressions(*limit); len(bad) > 0 {
			w := bad[0]
			for _, r := range bad {
				if r.RegressionPct() > w.RegressionPct() {
					w = r
				}
			}
			return exitcode.Errorf(exitcode.ChecksFailed, "compare: %d metrics regressed by more than %g%% (worst: %s %s %s, %.1f%%)",
				len(bad), *limit, w.Stage, w.Level, w.Metric, w.RegressionPct())
		}
	}
	return nil
}

func readReport(path string) (*result.Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Invalid, "compare: %w", err)
	}
	defer f.Close()
	r, err := reporters.ReadJSON(f)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Invalid, "compare: %s: %w", path, err)
	}
	return r, nil
}
