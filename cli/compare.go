package cli

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/comparison"
	"github.com/runnerbench/runner/internal/exitcode"
	"github.com/runnerbench/runner/pipeline"
	"github.com/runnerbench/runner/records"
	"github.com/runnerbench/runner/reporters/compare"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
)

const compareSynopsis = `runner compare BASE NEW [flags]

Compare two runs level by level: each metric's change with a confidence
interval computed from the runs' requests, and a verdict (better, worse,
same, inconclusive). BASE and NEW are result directories or their
report.json files; the intervals need the records beside report.json
(requests.jsonl, run.jsonl). The first line says what the gate judged: the
metrics NEW's plan gates with worse() (every server metric with an interval
when it gates none; --metrics to choose), at how many levels, with what
verdicts. Exits 2 when BASE measured something else, by the rule a run's
--baseline applies (another plan, or a stage that asked the server for
another load: API, mode, load, requested lengths), or when nothing could be
gated (no stage, level or metric in common); with --fail-above, 1 when a gated metric is worse with the stated
confidence and by more than that percentage.`

// cmdCompare implements "runner compare".
func cmdCompare(_ context.Context, env *Env, args []string) error {
	fs := newFlagSet("compare")
	markdown := fs.Bool("markdown", false, "write a Markdown table (for a pull-request comment)")
	all := fs.Bool("all", false, "show every row, not only what was judged worse or better")
	fs.Bool("changed-only", false, "kept for scripts: what was judged worse or better is all that is shown by default")
	var failAbove percentFlag
	fs.Var(&failAbove, "fail-above", "exit 1 when a gated metric is significantly worse by more than this `percent` (default: never)")
	failInconclusive := fs.Bool("fail-inconclusive", false, "exit 1 when the gate could judge nothing it matched (every gated comparison inconclusive)")
	metrics := fs.String("metrics", "", "the `metrics` the gate judges, comma-separated, or all (default: those NEW's worse() checks name, else all)")
	confidence := fs.Float64("confidence", 0.95, "the `confidence` that no unchanged metric is called worse, for all comparisons together")
	var wide bool
	registerWide(fs, &wide)
	pos, err := parseArgs(env, fs, compareSynopsis, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return exitcode.Errorf(exitcode.Invalid, "compare: expected two runs (BASE NEW: result directories or report.json files), got %d", len(pos))
	}
	if !(*confidence > 0 && *confidence < 1) {
		return exitcode.Errorf(exitcode.Invalid, "compare: --confidence %g is not between 0 and 1 (e.g. 0.95)", *confidence)
	}
	var runs [2]comparison.Run
	for i, p := range pos {
		rep, samples, err := readRun(p)
		if err != nil {
			return exitcode.Errorf(exitcode.Invalid, "compare: %s: %w", p, err)
		}
		runs[i] = comparison.Run{Report: rep, Samples: samples}
	}
	// The rule --baseline applies before a run: another plan, or a stage
	// that asked the server for another load, is not a change.
	if err := comparison.Unlike(runs[0].Report, runs[1].Report.Plan.Name, comparison.ReportWants(runs[1].Report)); err != nil {
		return exitcode.Errorf(exitcode.Invalid, "compare: %s does not match %s: %v", pos[0], pos[1], err)
	}
	fam, err := gateFamily(pos[1], runs[1], *metrics)
	if err != nil {
		return err
	}
	o := compare.Options{All: *all, Family: fam, Width: fitWidth(env, wide)}
	threshold := fam.Threshold()
	if failAbove.v != nil {
		o.FailAbove = failAbove.v
		threshold = min(threshold, *failAbove.v/100)
	}
	res, err := comparison.Compare(runs[0], runs[1], comparison.Options{Confidence: *confidence, Threshold: threshold, Family: fam, FailInconclusive: *failInconclusive})
	if err != nil {
		return exitcode.Errorf(exitcode.Invalid, "compare: %w", err)
	}
	if why := res.Summary.NothingGated; why != "" {
		return exitcode.Errorf(exitcode.Invalid, "compare: nothing was gated: %s", why)
	}
	if *markdown {
		err = compare.Markdown(env.Stdout, res, o)
	} else {
		err = compare.Text(env.Stdout, res, o)
	}
	if err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	if o.FailAbove != nil && !res.Summary.Records {
		fmt.Fprintf(env.Stderr, "compare: --fail-above cannot fail: %s\n", res.Notes[0])
	}
	return gateError(env, res, o)
}

// gateFamily is the family the gate judges: --metrics, else the one the
// new run's recorded checks declare (its records' when at hand, else its
// report's), decided as the run's own --baseline decides it.
func gateFamily(path string, cur comparison.Run, metrics string) (*comparison.Family, error) {
	if metrics != "" {
		fam, err := comparison.ChosenFamily(metrics)
		if err != nil {
			return nil, exitcode.Errorf(exitcode.Invalid, "compare: --metrics: %v", err)
		}
		return fam, nil
	}
	var stages []*scenario.Stage
	var err error
	if dir := runDir(path); cur.Samples != nil {
		stages, err = pipeline.RecordedStages(dir)
	} else {
		stages, err = comparison.ReportStages(cur.Report)
	}
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Invalid, "compare: %s: its checks: %w", path, err)
	}
	return comparison.PlanFamily(stages), nil
}

// gateError is the gate's answer: nil, or exit 1 naming each failing
// metric with its change, interval and the samples behind it; a regression
// only warn-severity worse() checks gate is listed on stderr and passes.
// With --fail-inconclusive, a gate that could judge nothing fails.
func gateError(env *Env, res *comparison.Result, o compare.Options) error {
	s := res.Summary
	var bad, warn []comparison.Finding
	if o.FailAbove != nil {
		bad, warn = compare.Gate(res, *o.FailAbove, o.Family)
	}
	for _, f := range warn {
		fmt.Fprintf(env.Stderr, "compare: warn: %s %s %s: %s (gated by warn-severity worse() checks only)\n", f.Stage, f.Label, f.Metric, f.Describe())
	}
	if len(bad) == 0 {
		if s.FailInconclusive && s.Blind() {
			return exitcode.Errorf(exitcode.ChecksFailed, "compare: --fail-inconclusive: %s", s.Headline())
		}
		return nil
	}
	lines := []string{fmt.Sprintf("compare: %d metric(s) significantly worse by more than %g%% (%s confidence for all %d gated comparisons with an interval together, %s each):",
		len(bad), *o.FailAbove, pctText(s.Confidence), s.Intervals, pctText(s.Each))}
	for _, f := range bad {
		lines = append(lines, fmt.Sprintf("  %s %s %s: %s", f.Stage, f.Label, f.Metric, f.Describe()))
	}
	return exitcode.Errorf(exitcode.ChecksFailed, "%s", strings.Join(lines, "\n"))
}

// runDir is the result directory path names: itself, or the directory of
// its report.json.
func runDir(path string) string {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return path
	}
	return filepath.Dir(path)
}

func pctText(f float64) string { return fmt.Sprintf("%.4g%%", f*100) }

// readRun reads a run to compare: path is its result directory or the
// report.json in it. Its records, when beside the report, give the
// per-request samples (nil without them: an old report alone).
func readRun(path string) (*result.Report, func(stage, label string) *aggregate.Samples, error) {
	file, dir := path, runDir(path)
	if dir == path {
		file = filepath.Join(path, records.FileReport)
	}
	rep, err := records.ReadReport(file)
	if err != nil {
		if file != path {
			err = fmt.Errorf("%s: %w", file, err)
		}
		return nil, nil, err
	}
	if !records.HasRecords(dir) {
		return rep, nil, nil
	}
	samples, err := pipeline.RecordSamples(dir, rep)
	if err != nil {
		return nil, nil, err
	}
	return rep, samples, nil
}

// percentFlag is an optional percentage: unset until given, so its help
// shows no default (a -1 standing for "never" meant nothing to a reader),
// and never negative.
type percentFlag struct{ v *float64 }

func (f *percentFlag) String() string {
	if f == nil || f.v == nil {
		return ""
	}
	return strconv.FormatFloat(*f.v, 'g', -1, 64)
}

// Set implements flag.Value.
func (f *percentFlag) Set(s string) error {
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || x < 0 || math.IsInf(x, 0) || math.IsNaN(x) {
		return fmt.Errorf("%q is not a percentage (a number of at least 0, e.g. 10)", s)
	}
	f.v = &x
	return nil
}
