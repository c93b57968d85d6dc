package result

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/runnerbench/runner/internal/stats"
)

// Comparison is one metric of one level against the same level of a
// baseline run: the change, its confidence interval computed from the two
// runs' requests (package comparison, internal/stats), and a verdict.
type Comparison struct {
	// Metric is the metric's name (the catalogue's).
	Metric string `json:"metric"`
	// Base is the metric's value in the baseline's report (null: none).
	Base *float64 `json:"base"`
	// New is the metric's value in this report (null: none).
	New *float64 `json:"new"`
	// Statistic is what the interval is of ("p95", "mean", "rate", "ratio",
	// "share"); empty when the metric has none.
	Statistic string `json:"statistic,omitempty"`
	// Rel is the relative change (new − base)/|base|, of the statistic as
	// computed from the requests when it has an interval (of failed: the
	// failed share), else of the two values; null when the base is 0.
	Rel *float64 `json:"rel"`
	// Interval is the confidence interval of Rel.
	Interval *Interval `json:"interval,omitempty"`
	// Verdict is better, worse, same or inconclusive; empty for what is
	// shown and never judged: the client's own diagnostics, metrics without
	// a better direction or an interval, and metrics outside the gate's
	// family (not gated).
	Verdict string `json:"verdict,omitempty" jsonschema:"enum=better,enum=worse,enum=same,enum=inconclusive"`
	// Abs is the absolute change new − base (what a verdict reads when the
	// base is 0).
	Abs *float64 `json:"abs"`
	// AbsInterval is the confidence interval of Abs.
	AbsInterval *Interval `json:"abs_interval,omitempty"`
	// Reason says why a verdict is inconclusive, or why there is none.
	Reason string `json:"reason,omitempty"`
	// NBase is the baseline's samples behind the interval (requests, or the
	// trials of a share).
	NBase int `json:"n_base,omitempty"`
	// NNew is this run's samples behind the interval.
	NNew int `json:"n_new,omitempty"`
	// ReplicatesBase and ReplicatesNew are the replicates behind the
	// interval, set when both runs ran the level as several: the interval
	// then also holds how much whole replicates differed.
	ReplicatesBase int `json:"replicates_base,omitempty"`
	ReplicatesNew  int `json:"replicates_new,omitempty"`
	// Gated is set on the comparisons the gate judged: a metric of its
	// family (ComparisonSummary.Family) at a level both runs have.
	Gated bool `json:"gated,omitempty"`
}

// Interval is a confidence interval [Lo, Hi].
type Interval struct {
	// Lo is the lower limit.
	Lo float64 `json:"lo"`
	// Hi is the upper limit.
	Hi float64 `json:"hi"`
}

// ComparisonSummary says how a run's levels were compared with a baseline,
// and what the gate judged: its first line (Headline) says whether it saw
// the whole run, part of it, or could judge nothing.
type ComparisonSummary struct {
	// Confidence is the family's: every gated interval holds at once with
	// at least this probability, so an unchanged server metric is called
	// worse with probability at most (1 − Confidence)/2.
	Confidence float64 `json:"confidence"`
	// Each is each interval's confidence: Bonferroni's over the Intervals
	// comparisons (stats.FamilyConfidence).
	Each float64 `json:"each"`
	// Intervals is how many gated comparisons can be worse: with an
	// interval and enough samples in both runs, at a level both can judge.
	Intervals int `json:"intervals"`
	// Family is which metrics the gate judged, and why those.
	Family *GateFamily `json:"family,omitempty"`
	// Gated is how many comparisons the gate judged (Comparison.Gated):
	// Worse + Better + Same + Inconclusive.
	Gated        int `json:"gated"`
	Worse        int `json:"worse"`
	Better       int `json:"better"`
	Same         int `json:"same"`
	Inconclusive int `json:"inconclusive"`
	// InconclusiveWhy is the most common reason of the inconclusive ones.
	InconclusiveWhy string `json:"inconclusive_why,omitempty"`
	// Levels is how many of the new run's levels have a baseline level;
	// Unmatched how many have none.
	Levels    int `json:"levels"`
	Unmatched int `json:"unmatched"`
	// NothingGated says why the gate judged nothing at all (no stage, level
	// or metric in common): such a comparison is an error, never a pass.
	NothingGated string `json:"nothing_gated,omitempty"`
	// FailInconclusive is --fail-inconclusive: a gate that could judge
	// nothing it matched (Blind) fails.
	FailInconclusive bool `json:"fail_inconclusive,omitempty"`
	// Threshold is the practical threshold (a fraction): a change whose
	// whole interval lies within ±Threshold is "same".
	Threshold float64 `json:"threshold"`
	// Records is false when a run's request records were not at hand: no
	// comparison then has an interval, and none is better or worse.
	Records bool `json:"records"`
}

// GateFamily is which metrics a gate judged (package comparison decides).
type GateFamily struct {
	// Source is plan (the metrics the plan's worse() checks name), default
	// (every server metric with an interval) or metrics (--metrics).
	Source string `json:"source" jsonschema:"enum=plan,enum=default,enum=metrics"`
	// Metrics are the metrics judged, of every stage together.
	Metrics []string `json:"metrics"`
	// Stages are a plan's by stage: a stage whose checks call no worse()
	// is not gated.
	Stages map[string][]string `json:"stages,omitempty"`
}

// String names the family in one phrase.
func (f *GateFamily) String() string {
	switch {
	case f == nil:
		return "nothing"
	case f.Source == "default":
		return "the default family (every server metric with an interval)"
	case f.Source == "metrics":
		return "--metrics " + strings.Join(f.Metrics, ",")
	}
	same := true
	for _, ms := range f.Stages {
		same = same && strings.Join(ms, ",") == strings.Join(f.Metrics, ",")
	}
	if same {
		return "the plan's worse() metrics (" + strings.Join(f.Metrics, ", ") + ")"
	}
	var parts []string
	for _, name := range sortedKeys(f.Stages) {
		parts = append(parts, name+": "+strings.Join(f.Stages[name], ", "))
	}
	return "the plan's worse() metrics (" + strings.Join(parts, "; ") + ")"
}

func sortedKeys(m map[string][]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Blind reports whether the gate judged comparisons and could decide none
// of them: every one inconclusive (no records, a starved machine).
func (s *ComparisonSummary) Blind() bool {
	return s.NothingGated == "" && s.Gated > 0 && s.Worse+s.Better+s.Same == 0
}

// Headline is the comparison's first line: what the gate judged and how
// much of the run it saw, with the counts.
func (s *ComparisonSummary) Headline() string {
	if s.NothingGated != "" {
		return "Nothing gated: " + s.NothingGated
	}
	state := "Compared"
	switch {
	case s.Blind() && s.Unmatched > 0:
		state = "Judged nothing, and partial"
	case s.Blind():
		state = "Judged nothing"
	case s.Unmatched > 0:
		state = "Partial"
	}
	line := fmt.Sprintf("%s: gated %d (%d worse, %d better, %d same, %d inconclusive), %d of %d levels unmatched",
		state, s.Gated, s.Worse, s.Better, s.Same, s.Inconclusive, s.Unmatched, s.Levels+s.Unmatched)
	if s.Blind() {
		line += "; every gated comparison is inconclusive"
		if s.InconclusiveWhy != "" {
			line += " (" + s.InconclusiveWhy + ")"
		}
	}
	return line + "; judged: " + s.Family.String()
}

// Fails is the gate's rule on a comparison (stats.Delta.Fails): the verdict
// is worse, and the change is worse by more than pct percent.
func (c *Comparison) Fails(pct float64) bool { return c.delta().Fails(pct / 100) }

// WorseBy is how much worse the metric got, as a fraction of the base
// (stats.Delta.WorseBy): negative when it got better, ±Inf for a change
// from 0, NaN when there is no change to tell.
func (c *Comparison) WorseBy() float64 { return c.delta().WorseBy() }

// delta is the comparison as the stats package reads it.
func (c *Comparison) delta() stats.Delta {
	var better Better // an unknown metric: lower is better
	if m, ok := MetricNamed(c.Metric); ok {
		better = m.Better
	}
	return stats.Delta{Better: better.Direction(), Rel: orNaN(c.Rel), Abs: orNaN(c.Abs), Verdict: stats.Verdict(c.Verdict)}
}

func orNaN(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// Change is the change as people read it: relative ("+12.3%"), or absolute
// when the base is 0 ("+0.025"); "–" when there is none.
func (c *Comparison) Change() string {
	switch {
	case c.Rel != nil:
		return pct(*c.Rel)
	case c.Abs != nil:
		return strconv.FormatFloat(*c.Abs, 'g', 4, 64)
	}
	return "–"
}

// IntervalText is the interval of Change ("[+8.1%, +16.5%]"), or "". A
// limit farther than Unbounded from the change (as a ratio of the new value
// to the base) is shown as unbounded: the data can say no more than that
// ("[+12.0%, unbounded]"), and a number there would only look precise.
func (c *Comparison) IntervalText() string {
	switch {
	case c.Rel != nil && c.Interval != nil:
		lo, hi := pct(c.Interval.Lo), pct(c.Interval.Hi)
		r := 1 + *c.Rel
		if c.Interval.Lo <= -1 || r > 0 && r/(1+c.Interval.Lo) > Unbounded {
			lo = "unbounded"
		}
		if r > 0 && (1+c.Interval.Hi)/r > Unbounded || r <= 0 && c.Interval.Hi > Unbounded {
			hi = "unbounded"
		}
		if lo == hi {
			return "unbounded"
		}
		return "[" + lo + ", " + hi + "]"
	case c.Rel == nil && c.AbsInterval != nil:
		f := func(x float64) string { return strconv.FormatFloat(x, 'g', 3, 64) }
		return "[" + f(c.AbsInterval.Lo) + ", " + f(c.AbsInterval.Hi) + "]"
	}
	return ""
}

// Unbounded is how far (a factor, on the ratio of the new value to the
// base) an interval's limit may lie from the change before it is shown as
// unbounded: an interval spanning more than ten times the change either way
// says the data cannot tell its size.
const Unbounded = 10

// Samples says what the interval rests on ("p95 of 200 and 210 requests",
// "... in 8 and 8 replicates").
func (c *Comparison) Samples() string {
	if c.Statistic == "" {
		return ""
	}
	unit := "requests"
	if c.Statistic == "share" {
		unit = "trials"
	}
	s := fmt.Sprintf("%s of %d and %d %s", c.Statistic, c.NBase, c.NNew, unit)
	if c.ReplicatesBase > 1 && c.ReplicatesNew > 1 {
		s += fmt.Sprintf(" in %d and %d replicates", c.ReplicatesBase, c.ReplicatesNew)
	}
	return s
}

// Describe is the comparison in one line: change, interval, verdict, and
// the samples behind it or the reason it is inconclusive.
func (c *Comparison) Describe() string {
	parts := []string{c.Change()}
	if iv := c.IntervalText(); iv != "" {
		parts = append(parts, iv)
	}
	if c.Verdict != "" {
		parts = append(parts, c.Verdict)
	}
	s := strings.Join(parts, " ")
	if n := c.Samples(); n != "" {
		s += " (" + n + ")"
	}
	if c.Reason != "" {
		s += ": " + c.Reason
	}
	return s
}

// pct formats a fraction as a signed percentage, with two decimals below
// 10% so a small interval keeps its width.
func pct(x float64) string {
	v := x * 100
	if math.Abs(v) < 10 {
		return fmt.Sprintf("%+.2f%%", v)
	}
	return fmt.Sprintf("%+.1f%%", v)
}
