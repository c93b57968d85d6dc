// Package stopping decides when a level of a stage with until: has its
// answer (every check that applies to it decided by its metrics'
// anytime-valid intervals, or a metric known to a precision), and when a
// sweep with stop_at_saturation has reached the server's saturation. Both
// are pure functions of the records (a level's requests so far; the
// levels' points and samples): the engine asks them through its sink while
// a stage runs, the run records what they decided, and a report recomputed
// from the records reads the decisions back and judges its checks on the
// requests that were sent.
//
// The intervals are internal/stats' confidence sequences, which stay valid
// however often a level is looked at (docs/statistics.md, "Stopping when
// the answer is known", has the methods and the study of their error rates
// on the built-in simulator).
package stopping

import (
	"slices"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/checks"
	"github.com/runnerbench/runner/internal/stats"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
)

// Stage is a stage's stopping rules.
type Stage struct {
	plan  *scenario.Stage
	until *scenario.UntilPlan
}

// New returns the stage's stopping rules, or nil when it has neither
// until: nor stop_at_saturation.
func New(st *scenario.Stage) *Stage {
	if st == nil {
		return nil
	}
	u := st.UntilPlan()
	if u == nil {
		return nil
	}
	return &Stage{plan: st, until: u}
}

// Confidence is the stage's confidence.
func (s *Stage) Confidence() float64 { return s.until.Confidence }

// needs are the intervals level p's checks are decided by (each check that
// applies to it), and the until metric's at the stage's confidence.
func (s *Stage) needs(p *result.Point, rule scenario.UntilRule) []checks.Need {
	var out []checks.Need
	add := func(n checks.Need) {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	if rule.Metric != "" {
		add(checks.Need{Metric: rule.Metric, Confidence: s.until.Confidence})
	}
	for _, c := range s.held(p) {
		for _, n := range checks.Needs(c, s.until.Confidence) {
			add(n)
		}
	}
	return out
}

// held are the level-scope checks that apply to level p (their when: is
// true) and that an interval can decide: the checks an until level waits
// for.
func (s *Stage) held(p *result.Point) []*scenario.Check {
	var out []*scenario.Check
	for _, c := range s.plan.Checks {
		if c == nil || c.Scope == scenario.ScopeStage || !scenario.Decidable(c) {
			continue
		}
		if c.WhenProgram != nil && !scenario.Evaluate(c.WhenProgram, p) {
			continue
		}
		out = append(out, c)
	}
	return out
}

// Intervals are the anytime-valid intervals level p (of the level whose
// until: rule is rule) is judged by, from its samples smp: each check's
// metrics and the until metric. A metric whose sample is too small for a
// sequence has none (a check reading it is undecided).
func (s *Stage) Intervals(p *result.Point, rule scenario.UntilRule, smp *aggregate.Samples) []result.AnytimeInterval {
	if smp == nil {
		return nil
	}
	var out []result.AnytimeInterval
	for _, n := range s.needs(p, rule) {
		m, ok := result.MetricNamed(n.Metric)
		if !ok {
			continue
		}
		_, spec := m.UntilSpec()
		iv, ok := stats.AnytimeInterval(spec.Statistic, smp.Sample(spec.Sample), n.Confidence)
		if !ok {
			continue
		}
		a := result.AnytimeInterval{Metric: n.Metric, Confidence: n.Confidence}
		if !isInf(iv.Lo) {
			a.Low = result.Ptr(iv.Lo)
		}
		if !isInf(iv.Hi) {
			a.High = result.Ptr(iv.Hi)
		}
		out = append(out, a)
	}
	return out
}

func isInf(x float64) bool { return x > 1e300 || x < -1e300 }

// Min is the fewest measured requests level p (of rule rule, listed at
// idx) must have finished before a look may stop it: the plan's
// min_requests, or by default what the statistics its checks and its until
// metric read need (StatMin), at least its concurrency in a closed loop
// (stats.MinWaves times it when the sweep stops at saturation, whose
// throughput interval needs them), at most its max_requests.
func (s *Stage) Min(idx int, p *result.Point, rule scenario.UntilRule) int {
	if n := s.until.MinRequests.At(idx); n > 0 {
		return n
	}
	need := 1
	for _, n := range s.needs(p, rule) {
		m, _ := result.MetricNamed(n.Metric)
		_, spec := m.UntilSpec()
		need = max(need, StatMin(spec.Statistic))
	}
	if p.Rate == nil {
		need = max(need, p.Concurrency)
		if s.until.StopAtSaturation {
			// The saturation stop compares the level's throughput with the
			// next one's, which needs stats.MinWaves waves of it.
			need = max(need, stats.MinWaves*p.Concurrency)
		}
	}
	if hi := s.until.MaxRequests.At(idx); hi > 0 {
		need = min(need, hi)
	}
	return need
}

// StatMin is the fewest samples a statistic is looked at with by default:
// the project's low-confidence count (stats.MinSamples: a p95 20, a p99
// 100), and for a mean stats.MinAnytimeMeanSamples, below which its
// sequence is not given.
func StatMin(st stats.Statistic) int {
	if st.Kind == stats.KindMean {
		return max(stats.MinSamples(st), stats.MinAnytimeMeanSamples)
	}
	return stats.MinSamples(st)
}

// Look is what level idx's rule says of the level so far, point p with
// p.Anytime set (Intervals), after done measured requests finished: nil to
// go on, or the stop (decided, by the checks that decided it; precise).
func (s *Stage) Look(idx int, p *result.Point, done int) *result.LevelStop {
	rule := s.until.RuleAt(idx)
	if rule.Fixed() || done < s.Min(idx, p, rule) {
		return nil
	}
	stop := &result.LevelStop{Rule: rule.String(), Requests: done, Confidence: s.until.Confidence}
	if rule.Metric != "" {
		if !precise(p, rule, s.until.Confidence) {
			return nil
		}
		stop.Reason, stop.By = result.StopPrecise, []string{rule.Metric}
		return stop
	}
	for _, c := range s.held(p) {
		if decided, _ := checks.Decide(c, p, s.until.Confidence); !decided {
			return nil
		}
		stop.By = append(stop.By, c.Name)
	}
	stop.Reason = result.StopDecided
	return stop
}

// precise reports whether p's interval of the rule's metric lies within
// ±Within of its value.
func precise(p *result.Point, rule scenario.UntilRule, conf float64) bool {
	m, ok := result.MetricNamed(rule.Metric)
	if !ok {
		return false
	}
	v, ok := m.Value(p)
	if !ok || v == 0 {
		return false
	}
	for _, a := range p.Anytime {
		if a.Metric != rule.Metric || a.Confidence != conf || a.Low == nil || a.High == nil {
			continue
		}
		tol := rule.Within * abs(v)
		return *a.Low >= v-tol && *a.High <= v+tol
	}
	return false
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// Finish completes level p of the stage (listed at idx) for the report:
// its anytime intervals from smp, and its stop: what the run recorded
// (decided, precise, capped), the checks still undecided at a cap (judged
// on the requests sent, with the report's checks), or fixed for a level
// of a stage with until: that sent its count. A stage that only stops at
// saturation has no stops.
func (s *Stage) Finish(idx int, p *result.Point, smp *aggregate.Samples) {
	if !s.until.HasUntil() || p.Turn > 0 {
		return
	}
	rule := s.until.RuleAt(idx)
	if rule.Fixed() {
		p.Stop = &result.LevelStop{Rule: scenario.UntilFixed, Reason: result.StopFixed}
		return
	}
	p.Anytime = s.Intervals(p, rule, smp)
	if p.Stop == nil || p.Stop.Reason != result.StopCapped {
		return
	}
	p.Stop.Undecided = nil
	if rule.Metric != "" {
		if !precise(p, rule, s.until.Confidence) {
			p.Stop.Undecided = []string{rule.String()}
		}
		return
	}
	for _, c := range s.held(p) {
		if decided, _ := checks.Decide(c, p, s.until.Confidence); !decided {
			p.Stop.Undecided = append(p.Stop.Undecided, c.Name)
		}
	}
}

// FinishStage completes every level of the stage's result res for the
// report (Finish, each listed level by its index, a multi-turn level's
// turns left as they are), its samples by label from samples; sweep is the
// sweep's stop as the run recorded it.
func (s *Stage) FinishStage(res *result.Stage, samples func(label string) *aggregate.Samples, sweep *result.SweepStop) {
	if s == nil {
		return
	}
	res.SweepStop = sweep
	idx := 0
	for i := range res.Points {
		p := &res.Points[i]
		if p.Turn > 0 {
			continue
		}
		s.Finish(idx, p, samples(p.Label()))
		idx++
	}
}
