package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/history"
	"github.com/runnerbench/runner/internal/atomicfile"
	"github.com/runnerbench/runner/internal/exitcode"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/store"
)

const historySynopsis = `runner history --db DSN --plan NAME [flags]

Each metric of a plan's published runs over time (a sparkline per metric,
--markdown, --html FILE), with the runs where it changed: a window of the
latest runs (--window) that differs from the runs before it (--before), judged
as runner compare judges replicated runs, the family being every window of
every series, so an unchanged history carries no mark with --confidence
(docs/statistics.md, "History"). A series is one identity: the stage's
load, endpoint and model and the run's labels; runs that differ in any of
them are separate series, named, and the note says where it changed
(--replicate-label KEY: runs that differ only by that label, a night or a
date, are one series; commit is one unless --replicate-label is given). With
--fail-on-change, exits 1 when the newest run is in a window significantly
worse than the runs before it.`

// cmdHistory implements "runner history".
func cmdHistory(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet("history")
	var df dbFlags
	df.register(fs)
	var q store.SeriesQuery
	var metrics, where, replicate stringList
	fs.StringVar(&q.Plan, "plan", "", "the plan's `name` (required)")
	fs.StringVar(&q.Stage, "stage", "", "only this `stage`")
	fs.StringVar(&q.Label, "level", "", "only this level `label` (c=16, rate=4)")
	fs.Var(&metrics, "metric", "only this `metric` (repeatable; a metric that is not judged is shown too)")
	fs.Var(&where, "where", "only runs labelled `key=value` (repeatable)")
	fs.Var(&replicate, "replicate-label", "a label `key` that tells runs of one series apart (night, date): runs that differ only by it are one series (repeatable; default commit)")
	since := fs.String("since", "", "only runs started in the last `DURATION` (30d, 12h, 2w) or since a date (2026-01-31)")
	var o history.Options
	fs.IntVar(&o.Window, "window", history.DefaultWindow, "the latest `runs` judged together")
	fs.IntVar(&o.Before, "before", history.DefaultBefore, "at most this many `runs` before the window to judge it against")
	fs.Float64Var(&o.Confidence, "confidence", 0.95, "the `confidence` that an unchanged history carries no mark, over every window of every series together")
	markdown := fs.Bool("markdown", false, "write Markdown instead of the terminal view")
	htmlOut := fs.String("html", "", "also write a self-contained HTML chart page to `file`")
	failOn := fs.Bool("fail-on-change", false, "exit 1 when the newest run is in a window significantly worse than the runs before it")
	failAbove := fs.Float64("fail-above", 0, "with --fail-on-change, only a change worse by more than this `percent`")
	if _, err := parseArgs(env, fs, historySynopsis, args); err != nil {
		return err
	}
	if q.Plan == "" {
		return exitcode.Errorf(exitcode.Invalid, "history: --plan NAME is required")
	}
	var err error
	if q.Where, err = parseWhere(where); err != nil {
		return exitcode.Errorf(exitcode.Invalid, "history: %v", err)
	}
	if q.Since, err = parseSince(*since, time.Now()); err != nil {
		return exitcode.Errorf(exitcode.Invalid, "history: --since: %v", err)
	}
	for _, m := range metrics {
		if _, ok := result.MetricNamed(m); !ok {
			return exitcode.Errorf(exitcode.Invalid, "history: --metric: no metric %q%s", m, suggest(m, metricNames()))
		}
	}
	q.Metrics = metrics
	o.Replicate = replicate
	if len(replicate) == 0 {
		// A commit label names the run (RunName shows it), not what it
		// measured: a history follows one series across commits.
		o.Replicate = []string{"commit"}
	}
	db, err := openDB(ctx, env, "history", df.dsn, df.allowEnv, true)
	if err != nil {
		return err
	}
	defer db.Close()
	s, err := db.Series(ctx, q)
	if err != nil {
		return exitcode.Errorf(exitcode.RunFailed, "history: %v", err)
	}
	if len(s.Runs) == 0 {
		return exitcode.Errorf(exitcode.Invalid, "history: no published runs of plan %q in %s match", q.Plan, db)
	}
	samples := func(run int, stage, label string) (*aggregate.Samples, error) {
		return db.Samples(ctx, s.Runs[run].ID, stage, label)
	}
	h, err := history.Build(s, samples, o)
	if err != nil {
		return exitcode.Errorf(exitcode.Invalid, "history: %v", err)
	}
	if err := writeHistory(env, h, q.Plan, metrics, *markdown, *htmlOut); err != nil {
		return err
	}
	if !*failOn {
		return nil
	}
	return historyGate(h, *failAbove)
}

func writeHistory(env *Env, h *history.History, plan string, metrics []string, markdown bool, htmlOut string) error {
	var err error
	if markdown {
		err = h.Markdown(env.Stdout, plan, metrics)
	} else {
		err = h.Text(env.Stdout, plan, metrics)
	}
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	if htmlOut == "" {
		return nil
	}
	var b strings.Builder
	if err := h.HTML(&b, plan, metrics); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	if err := atomicfile.Write(htmlOut, []byte(b.String())); err != nil {
		return exitcode.Errorf(exitcode.RunFailed, "history: --html: %v", err)
	}
	return nil
}

// historyGate is --fail-on-change's answer: exit 1 naming every series
// whose newest run is in a significantly worse window.
func historyGate(h *history.History, failAbove float64) error {
	bad := h.Failures(failAbove / 100)
	if len(bad) == 0 {
		return nil
	}
	lines := []string{fmt.Sprintf("history: %d metric(s) significantly worse in the newest runs (%s confidence for the newest windows of all %d series together):",
		len(bad), pctText(h.Confidence), h.GateWindows)}
	for _, f := range bad {
		lines = append(lines, fmt.Sprintf("  %s %s %s: %s", f.Series.Stage, f.Series.Label, f.Series.Metric, h.Describe(f.Point)))
	}
	return exitcode.Errorf(exitcode.ChecksFailed, "%s", strings.Join(lines, "\n"))
}

// parseWhere reads --where key=value flags.
func parseWhere(where []string) (map[string]string, error) {
	if len(where) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, w := range where {
		k, v, err := result.ParseLabel(w)
		if err != nil {
			return nil, fmt.Errorf("--where: %v", err)
		}
		out[k] = v
	}
	return out, nil
}

// parseSince reads --since: a duration back from now (30d, 12h, 2w, 90m)
// or a date or time (2026-01-31, RFC 3339).
func parseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	unit := map[byte]time.Duration{'d': 24 * time.Hour, 'w': 7 * 24 * time.Hour}[s[len(s)-1]]
	if unit > 0 {
		n, err := strconv.ParseFloat(s[:len(s)-1], 64)
		if err != nil || n < 0 {
			return time.Time{}, fmt.Errorf("%q is not a duration (30d, 12h, 2w) or a date (2026-01-31)", s)
		}
		return now.Add(-time.Duration(n * float64(unit))), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return time.Time{}, fmt.Errorf("%q is not a duration (30d, 12h, 2w) or a date (2026-01-31)", s)
	}
	return now.Add(-d), nil
}

func metricNames() []string {
	ms := result.Metrics()
	out := make([]string, len(ms))
	for i := range ms {
		out[i] = ms[i].Name
	}
	return out
}
