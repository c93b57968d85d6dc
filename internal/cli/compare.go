package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/comparison"
	"github.com/runnerbench/runner/internal/compare"
	"github.com/runnerbench/runner/internal/exitcode"
	"github.com/runnerbench/runner/pipeline"
	"github.com/runnerbench/runner/reporters"
	"github.com/runnerbench/runner/result"
)

const compareSynopsis = `runner compare BASE NEW [flags]

Compare two runs level by level: each metric's change with a confidence
interval computed from the runs' requests, and a verdict (better, worse,
same, inconclusive). BASE and NEW are result directories or their
report.json files; the intervals need the records beside report.json
(requests.jsonl, run.jsonl). With --fail-above, exits 1 when a server metric
is worse with the stated confidence and by more than that percentage.`

// cmdCompare implements "runner compare".
func cmdCompare(_ context.Context, env *Env, args []string) error {
	fs := newFlagSet("compare")
	markdown := fs.Bool("markdown", false, "write a Markdown table (for a pull-request comment)")
	changed := fs.Bool("changed-only", false, "leave out metrics that did not change, or are never judged")
	failAbove := fs.Float64("fail-above", -1, "exit 1 when a server metric is significantly worse by more than this `percent`")
	confidence := fs.Float64("confidence", 0.95, "the `confidence` that no unchanged metric is called worse, for all comparisons together")
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
	o := compare.Options{ChangedOnly: *changed}
	threshold := comparison.DefaultThreshold
	if *failAbove >= 0 {
		o.FailAbove = failAbove
		threshold = min(threshold, *failAbove/100)
	}
	res, err := comparison.Compare(runs[0], runs[1], comparison.Options{Confidence: *confidence, Threshold: threshold})
	if err != nil {
		return exitcode.Errorf(exitcode.Invalid, "compare: %w", err)
	}
	if *markdown {
		err = compare.Markdown(env.Stdout, res, o)
	} else {
		err = compare.Text(env.Stdout, res, o)
	}
	if err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	if o.FailAbove == nil {
		return nil
	}
	if !res.Summary.Records {
		fmt.Fprintf(env.Stderr, "compare: --fail-above cannot fail: %s\n", res.Notes[0])
	}
	return gateError(res, *failAbove)
}

// gateError is the gate's answer: nil, or exit 1 naming each failing
// metric with its change, interval and the samples behind it.
func gateError(res *comparison.Result, failAbove float64) error {
	bad := res.Failures(failAbove)
	if len(bad) == 0 {
		return nil
	}
	lines := []string{fmt.Sprintf("compare: %d metric(s) significantly worse by more than %g%% (%s confidence for all %d gated comparisons together, %s each):",
		len(bad), failAbove, pctText(res.Summary.Confidence), res.Summary.Gated, pctText(res.Summary.Each))}
	for _, f := range bad {
		lines = append(lines, fmt.Sprintf("  %s %s %s: %s", f.Stage, f.Label, f.Metric, f.Describe()))
	}
	return exitcode.Errorf(exitcode.ChecksFailed, "%s", strings.Join(lines, "\n"))
}

func pctText(f float64) string { return fmt.Sprintf("%.4g%%", f*100) }

// readRun reads a run to compare: path is its result directory or the
// report.json in it. Its records, when beside the report, give the
// per-request samples (nil without them: an old report alone).
func readRun(path string) (*result.Report, func(stage, label string) *aggregate.Samples, error) {
	file, dir := path, filepath.Dir(path)
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		file, dir = filepath.Join(path, reporters.FileJSON), path
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	rep, err := reporters.ReadJSON(f)
	if err != nil {
		if file != path {
			err = fmt.Errorf("%s: %w", file, err)
		}
		return nil, nil, err
	}
	if !pipeline.HasRecords(dir) {
		return rep, nil, nil
	}
	samples, err := pipeline.RecordSamples(dir, rep)
	if err != nil {
		return nil, nil, err
	}
	return rep, samples, nil
}
