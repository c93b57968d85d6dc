package checks

import (
	"fmt"
	"math"
	"strings"

	"github.com/runnerbench/runner/internal/stats"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
)

// Need is an interval a check of a level that runs until: is decided by:
// a metric's, at a confidence.
type Need struct {
	Metric     string
	Confidence float64
}

// Needs lists the intervals check c is decided by on a level that runs
// until:, at the stage's confidence conf: each percentile or share it
// reads, at the confidence that keeps the check's chance of a wrong
// decision at most 1 − conf however many it reads (Bonferroni over them).
// Nil for a check no interval can decide (scenario.Decidable).
func Needs(c *scenario.Check, conf float64) []Need {
	if c == nil || !scenario.Decidable(c) {
		return nil
	}
	var seq []string
	for _, name := range c.Metrics {
		if m, ok := result.MetricNamed(name); ok {
			if kind, _ := m.UntilSpec(); kind == result.UntilSequence {
				seq = append(seq, name)
			}
		}
	}
	each := stats.FamilyConfidence(conf, len(seq))
	out := make([]Need, len(seq))
	for i, m := range seq {
		out[i] = Need{Metric: m, Confidence: each}
	}
	return out
}

// interval is p's anytime interval of metric at conf, if the report
// computed one.
func interval(p *result.Point, metric string, conf float64) (result.AnytimeInterval, bool) {
	for _, a := range p.Anytime {
		if a.Metric == metric && math.Abs(a.Confidence-conf) < 1e-12 {
			return a, true
		}
	}
	return result.AnytimeInterval{}, false
}

// Decide says whether check c is decided on level p by p's anytime
// intervals at the stage's confidence conf, and if so whether it passes:
// decided when the expression gives the same answer at every corner of
// the intervals of the metrics it reads (for a bound on a metric, when the
// interval lies wholly on one side of it).
func Decide(c *scenario.Check, p *result.Point, conf float64) (decided, passed bool) {
	needs := Needs(c, conf)
	if len(needs) == 0 || c.Program == nil {
		return false, false
	}
	boxes := make([]scenario.Box, 0, len(needs))
	for _, n := range needs {
		a, ok := interval(p, n.Metric, n.Confidence)
		if !ok {
			return false, false
		}
		m, _ := result.MetricNamed(n.Metric)
		lo, hi := math.Inf(-1), math.Inf(1)
		if a.Low != nil {
			lo = *a.Low
		}
		if a.High != nil {
			hi = *a.High
		}
		boxes = append(boxes, scenario.Box{Metric: m, Low: lo, High: hi})
	}
	passed = scenario.Evaluate(c.Program, p)
	return scenario.SameAtCorners(c.Program, *p, boxes, passed), passed
}

// untilLevel reports whether p is a level that ran until a rule (its
// checks then are judged by their intervals).
func untilLevel(p *result.Point) bool { return p.Stop != nil && p.Stop.Reason != result.StopFixed }

// judgeUntil revises outcome o of check c on an until level p: a check an
// interval decides is marked undecided when its intervals still straddle
// its threshold, and reads what the stage's undecided rule says; a check
// no interval can decide says it was judged on its value.
func judgeUntil(c *scenario.Check, p *result.Point, u *scenario.UntilPlan, o *result.CheckOutcome) {
	if u == nil || !untilLevel(p) || o.Status == result.StatusSkipped {
		return
	}
	needs := Needs(c, u.Confidence)
	if len(needs) == 0 {
		if why := notDecidable(c); why != "" {
			o.Message = joinMsg(o.Message, "judged on its value when the level stopped: "+why)
		}
		return
	}
	if decided, _ := Decide(c, p, u.Confidence); decided {
		return
	}
	o.Undecided = true
	var ivs []string
	for _, n := range needs {
		if a, ok := interval(p, n.Metric, n.Confidence); ok {
			ivs = append(ivs, fmt.Sprintf("%s %s", n.Metric, a.Text()))
		} else {
			ivs = append(ivs, n.Metric+" has no interval (too few requests)")
		}
	}
	what := fmt.Sprintf("undecided when the level stopped (%s): %s at %s", p.Stop.Short(), strings.Join(ivs, ", "), result.ConfidenceText(needs[0].Confidence))
	switch u.Undecided {
	case scenario.UndecidedStatus:
		o.Status = result.StatusUndecided
	case scenario.UndecidedFail:
		o.Status, what = failStatus(c), what+"; undecided: fail"
	default:
		what += "; judged on the point value"
	}
	o.Message = joinMsg(what, o.Message)
}

// notDecidable names why no interval decides check c: the metrics it reads
// that have none across looks, the baseline, worse().
func notDecidable(c *scenario.Check) string {
	if len(c.Gates) > 0 {
		return "worse() compares with the baseline"
	}
	var none []string
	for _, name := range c.Metrics {
		if strings.HasPrefix(name, "baseline.") {
			return "it reads the baseline"
		}
		if m, ok := result.MetricNamed(name); ok {
			if kind, _ := m.UntilSpec(); kind == result.UntilNone {
				none = append(none, name)
			}
		}
	}
	if len(none) == 0 {
		return ""
	}
	return strings.Join(none, ", ") + " has no interval that holds across looks"
}

func joinMsg(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}
