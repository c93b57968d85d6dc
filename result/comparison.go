package result

import (
	"fmt"
	"math"
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
	// shown and never judged: the client's own diagnostics and metrics
	// without a better direction.
	Verdict string `json:"verdict,omitempty" jsonschema:"enum=better,enum=worse,enum=same,enum=inconclusive"`
	// Abs is the absolute change new − base (what a verdict reads when the
	// base is 0).
	Abs *float64 `json:"abs"`
	// AbsInterval is the confidence interval of Abs.
	AbsInterval *Interval `json:"abs_interval,omitempty"`
	// Reason says why a verdict is inconclusive.
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
	// Gated is set on the comparisons that can be worse (server metrics with
	// enough samples in both runs): the family the confidence is shared by.
	Gated bool `json:"gated,omitempty"`
}

// Interval is a confidence interval [Lo, Hi].
type Interval struct {
	// Lo is the lower limit.
	Lo float64 `json:"lo"`
	// Hi is the upper limit.
	Hi float64 `json:"hi"`
}

// ComparisonSummary says how a run's levels were compared with a baseline.
type ComparisonSummary struct {
	// Confidence is the family's: every gated interval holds at once with
	// at least this probability, so an unchanged server metric is called
	// worse with probability at most (1 − Confidence)/2.
	Confidence float64 `json:"confidence"`
	// Each is each interval's confidence: Bonferroni's over the Gated
	// comparisons (stats.FamilyConfidence).
	Each float64 `json:"each"`
	// Gated is how many comparisons can be worse (Comparison.Gated).
	Gated int `json:"gated"`
	// Threshold is the practical threshold (a fraction): a change whose
	// whole interval lies within ±Threshold is "same".
	Threshold float64 `json:"threshold"`
	// Records is false when a run's request records were not at hand: no
	// comparison then has an interval, and none is better or worse.
	Records bool `json:"records"`
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

// Changed reports whether the comparison is worth a reader's eye when only
// changes are shown: a better or worse verdict, or a change an interval could
// not decide. Same, equal values, what is never judged, and changes without
// an interval (a maximum, ITL) are left out; when records were missing
// (records false) no change has an interval, and every judged change counts.
func (c *Comparison) Changed(records bool) bool {
	switch c.Verdict {
	case string(stats.Worse), string(stats.Better):
		return true
	case string(stats.Inconclusive):
		return c.Abs != nil && *c.Abs != 0 && (c.Statistic != "" || !records)
	}
	return false
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

// IntervalText is the interval of Change ("[+8.1%, +16.5%]"), or "".
func (c *Comparison) IntervalText() string {
	switch {
	case c.Rel != nil && c.Interval != nil:
		return "[" + pct(c.Interval.Lo) + ", " + pct(c.Interval.Hi) + "]"
	case c.Rel == nil && c.AbsInterval != nil:
		f := func(x float64) string { return strconv.FormatFloat(x, 'g', 3, 64) }
		return "[" + f(c.AbsInterval.Lo) + ", " + f(c.AbsInterval.Hi) + "]"
	}
	return ""
}

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
