package search

import (
	"fmt"

	"github.com/runnerbench/runner/result"
)

// atCapacity are the metrics reported at a target's capacity besides the
// ones the target reads: what the deployment delivers there.
var atCapacity = []string{"output_tps_total", "output_tps_per_stream", "request_tps", "ttft_p50_ms", "ttft_p95_ms", "tpot_p50_ms", "e2e_p95_ms", "goodput"}

// result is the search's outcome if it ended with stop ("" means it wanted
// another probe: interrupted).
func (s *state) result(stop string) *result.SearchResult {
	if stop == "" {
		stop = result.SearchStopInterrupted
	}
	c := s.cfg
	r := &result.SearchResult{
		Over: c.Over, Min: c.Min, Max: c.Max, Step: c.Step,
		Probes: s.probes, ProbeTimeS: result.Round(s.timeS, 3),
		BudgetProbes: c.Budget.Probes, BudgetTimeS: c.Budget.Time.D().Seconds(),
		Stop:    stop,
		Targets: []result.SearchTarget{},
	}
	for _, tg := range s.targets {
		r.Targets = append(r.Targets, s.targetResult(tg))
	}
	return r
}

// targetResult is one target's outcome: a capacity only when the bracket is
// within the precision (or the target held at max), never a guess.
func (s *state) targetResult(tg *target) result.SearchTarget {
	out := result.SearchTarget{Name: tg.t.Name, Expr: tg.t.Expr, Status: tg.status, Notes: tg.notes}
	if out.Status == "" {
		out.Status = result.SearchUnresolved
	}
	out.Pass, out.Fail = s.loadResult(tg, tg.pass), s.loadResult(tg, tg.fail)
	switch out.Status {
	case result.SearchFound:
		out.Capacity = result.Ptr(tg.pass.x)
		out.Confident = out.Pass.Confident && out.Fail.Confident
	case result.SearchAboveMax:
		out.Capacity = result.Ptr(tg.pass.x)
		out.Confident = out.Pass.Confident
	case result.SearchBelowMin:
		out.Confident = out.Fail.Confident
	}
	for _, l := range tg.unconfirmed {
		out.Confident = false
		out.Notes = append(out.Notes, l.label+" was probed once: the search stopped before it could confirm it")
	}
	for _, l := range []*load{tg.pass, tg.fail} {
		if l != nil && !tg.v[l].clear {
			out.Notes = append(out.Notes, fmt.Sprintf("%s stayed statistically unclear after %d probes and was decided by its estimate", l.label, len(l.probes)))
		}
	}
	if out.Capacity != nil {
		out.AtCapacity = s.measuredAt(tg.pass, tg.t.Metrics)
	}
	return out
}

// loadResult is a target's decision at a load, for the report.
func (s *state) loadResult(tg *target, l *load) *result.SearchLoad {
	if l == nil {
		return nil
	}
	v := tg.v[l]
	out := &result.SearchLoad{
		Load: l.x, Label: l.label, Probes: append([]int(nil), l.nums...),
		Passed: v.passed, Confident: v.clear, Estimates: []result.SearchEstimate{},
	}
	for _, e := range v.est {
		out.Estimates = append(out.Estimates, rounded(e))
	}
	return out
}

// rounded rounds an estimate to its metric's decimals (two at least: an
// interval on a count is not a count).
func rounded(e result.SearchEstimate) result.SearchEstimate {
	dp := 4
	if m, ok := result.MetricNamed(e.Metric); ok && m.Decimals >= 0 {
		dp = max(2, m.Decimals)
	}
	for _, p := range []**float64{&e.Value, &e.Low, &e.High} {
		if *p != nil {
			*p = result.Ptr(result.Round(**p, dp))
		}
	}
	return e
}

// measuredAt is the mean of each reported metric over a load's probes.
func (s *state) measuredAt(l *load, own []string) map[string]float64 {
	out := map[string]float64{}
	for _, name := range append(append([]string(nil), atCapacity...), own...) {
		m, ok := result.MetricNamed(name)
		if !ok || !m.Numeric() {
			continue
		}
		sum, n := 0.0, 0
		for _, p := range l.probes {
			if x, ok := m.Value(p); ok {
				sum += x
				n++
			}
		}
		if n == len(l.probes) && n > 0 {
			dp := m.Decimals
			if dp < 0 {
				dp = 4
			}
			out[name] = result.Round(sum/float64(n), dp)
		}
	}
	return out
}
