// Package checks is the checks stage of the pipeline: it evaluates a stage's
// compiled check expressions against its measured points: level-scope checks once per level (filtered by when),
// stage-scope checks once with every point. A check that reads a metric the run
// could not produce fails and names it; it never passes silently.
package checks

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/expr-lang/expr"

	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
)

// EvaluateStage runs every check of stage against res and returns the
// outcomes, level-scope checks first (by check, then level), then stage-scope
// ones. baseline is the same stage of a baseline report, or nil; its levels are
// matched to res's by label (c=N / rate=R; a search's probes by load, see
// matchLevel), so a baseline with different levels just leaves baseline nil
// where there is no match. Stage-scope checks also see the search's
// capacities (capacity, and the baseline's as baseline.capacity).
func EvaluateStage(stage *scenario.Stage, res *result.Stage, baseline *result.Stage) []result.CheckOutcome {
	var out []result.CheckOutcome
	if stage == nil || res == nil {
		return nil
	}
	until := stage.UntilPlan()
	for _, c := range stage.Checks {
		if c == nil || c.Scope == scenario.ScopeStage {
			continue
		}
		for i := range res.Points {
			base := matchLevel(baseline, res, i)
			o := evalLevel(c, i, &res.Points[i], base, probeOf(res, i))
			judgeUntil(c, &res.Points[i], until, &o)
			if baseline != nil && base == nil && readsBaseline(c) {
				// Name the gap: a guarded check passes here without having
				// compared anything, and an unguarded one must not claim
				// --baseline was missing when it was given.
				note := "the baseline has no level " + res.Points[i].Label() + " of this stage"
				if o.Message != "" {
					note += "; " + o.Message
				}
				o.Message = note
			}
			out = append(out, o)
		}
	}
	env := result.StageEnv{Points: res.Points, Capacity: res.Search.Capacities()}
	if baseline != nil {
		env.Baseline, env.BaselineCapacity = baseline.Points, baseline.Search.Capacities()
	}
	for _, c := range stage.Checks {
		if c == nil || c.Scope != scenario.ScopeStage {
			continue
		}
		if res.Interrupted || slices.ContainsFunc(res.Points, func(p result.Point) bool { return p.Interrupted }) {
			// As on an interrupted level: a trend over part of the
			// stage's levels would pass or fail on what was not measured.
			o := newOutcome(c)
			o.Status, o.Message = result.StatusSkipped, "stage was interrupted: its levels are partial or missing"
			out = append(out, o)
			continue
		}
		if !slices.ContainsFunc(res.Points, func(p result.Point) bool { return p.NRequests > 0 }) {
			o := newOutcome(c)
			o.Status, o.Message = result.StatusSkipped, "the stage measured no request: nothing to judge"
			out = append(out, o)
			continue
		}
		out = append(out, evalStage(c, env, baseline != nil))
	}
	return out
}

// NothingMeasured is the message of a level-scope check skipped on a level
// that measured no request.
const NothingMeasured = "the level measured no request: nothing to judge"

// BaselineStage returns the stage of the baseline report with that name, or
// nil (no baseline, or the baseline has no such stage).
func BaselineStage(baseline *result.Report, name string) *result.Stage {
	return baseline.StageNamed(name)
}

// MissingBaselineLevels returns the labels of res's levels that the baseline
// stage has no match for (all of them when baseline is nil), so a run can
// say which levels were compared against nothing.
func MissingBaselineLevels(baseline, res *result.Stage) []string {
	if res == nil {
		return nil
	}
	var out []string
	for i := range res.Points {
		if matchLevel(baseline, res, i) == nil {
			out = append(out, res.Points[i].Label())
		}
	}
	return out
}

// Failed reports whether any outcome fails the run (status fail).
func Failed(outcomes []result.CheckOutcome) bool {
	return slices.ContainsFunc(outcomes, func(o result.CheckOutcome) bool { return o.Status == result.StatusFail })
}

// matchLevel finds the baseline point of res's i-th point: the one with the
// same level label (and turn). A search's probe is matched by its load (the
// baseline's points at the same load, probes or listed levels, since two
// searches need not probe alike): the same repeat there (the second probe at
// c=24 with the second), else the last.
func matchLevel(baseline, res *result.Stage, i int) *result.Point {
	if baseline == nil {
		return nil
	}
	p := &res.Points[i]
	if p.Probe > 0 {
		return matchProbe(baseline, res.Points[:i], p)
	}
	label := p.Label()
	for i := range baseline.Points {
		b := &baseline.Points[i]
		if b.Label() == label && b.Key() == p.Key() {
			return b
		}
	}
	return nil
}

// matchProbe is matchLevel for a probe p, after the points before it.
func matchProbe(baseline *result.Stage, before []result.Point, p *result.Point) *result.Point {
	load := p.LoadLabel()
	repeat := 0
	for j := range before {
		if before[j].Probe > 0 && before[j].LoadLabel() == load {
			repeat++
		}
	}
	var at []*result.Point
	for i := range baseline.Points {
		if b := &baseline.Points[i]; b.LoadLabel() == load {
			at = append(at, b)
		}
	}
	switch {
	case len(at) == 0:
		return nil
	case repeat < len(at):
		return at[repeat]
	}
	return at[len(at)-1]
}

func newOutcome(c *scenario.Check) result.CheckOutcome {
	scope, sev := c.Scope, c.Severity
	if scope == "" {
		scope = scenario.DefaultScope
	}
	if sev == "" {
		sev = scenario.DefaultSeverity
	}
	name := c.Name
	if name == "" {
		name = c.Expr
	}
	return result.CheckOutcome{Name: name, Expr: c.Expr, Scope: string(scope), Severity: string(sev)}
}

// failStatus is what a failing check reports: warn for severity warn.
func failStatus(c *scenario.Check) string {
	if c.Severity == scenario.SeverityWarn {
		return result.StatusWarn
	}
	return result.StatusFail
}

// probeOf is the probe requests' point of res's i-th point's level (a
// stage with probe:; nil otherwise): the point after the level's own that
// covers its probe requests. A part of the level (a turn, a model, the
// probes themselves) reads its level's.
func probeOf(res *result.Stage, i int) *result.Point {
	for ; i >= 0 && res.Points[i].Part(); i-- { // back to the level's own point
	}
	for j := i + 1; i >= 0 && j < len(res.Points) && res.Points[j].Part(); j++ {
		if res.Points[j].ProbeRequests {
			return &res.Points[j]
		}
	}
	return nil
}

func evalLevel(c *scenario.Check, idx int, p, base, probe *result.Point) result.CheckOutcome {
	o := newOutcome(c)
	o.Level = &idx
	o.LevelLabel = p.Label()
	if p.Interrupted {
		// The run was stopped inside this level: its numbers cover part of
		// the level, so neither a pass nor a fail would be honest.
		o.Status, o.Message = result.StatusSkipped, "level was interrupted: its metrics are partial"
		return o
	}
	if p.NRequests == 0 {
		// failed == 0 holds on nothing: a level that measured no request
		// (its stage stopped before it sent one) has nothing to judge. The
		// run fails on the level itself (RunProblems), not on its checks.
		o.Status, o.Message = result.StatusSkipped, NothingMeasured
		return o
	}
	if c.Program == nil {
		o.Status, o.Message = failStatus(c), "check was not compiled (load the plan with scenario.Load)"
		return o
	}
	env := result.LevelEnv{Point: *p, Baseline: base, Probe: probe, Worse: worseOn(p, base)}
	if c.WhenProgram != nil {
		w, err := expr.Run(c.WhenProgram, env)
		if err != nil {
			o.Status, o.Message = failStatus(c), fmt.Sprintf("when %q could not be evaluated: %v", c.When, oneLine(err))
			return o
		}
		if b, _ := w.(bool); !b {
			o.Status, o.Message = result.StatusSkipped, fmt.Sprintf("when %q is false", c.When)
			return o
		}
	}
	o.Values = map[string]any{}
	var nulls []string
	for _, m := range c.Metrics {
		val, null := levelValue(m, p, base, probe)
		o.Values[m] = val
		if null {
			nulls = append(nulls, m)
		}
	}
	nulls = gateValues(c, p, base, o.Values, nulls)
	o.Status, o.Message = verdict(c, env, nulls)
	if base == nil && o.Status != result.StatusPass && readsBaseline(c) && strings.HasPrefix(o.Message, "could not be evaluated") {
		o.Message = "needs a baseline: run with --baseline, or guard the expression with \"baseline == nil || ...\" (" + o.Message + ")"
	}
	return o
}

// readsBaseline reports whether a check reads a baseline metric, or asks
// worse().
func readsBaseline(c *scenario.Check) bool {
	if len(c.Gates) > 0 {
		return true
	}
	for _, m := range c.Metrics {
		if strings.HasPrefix(m, "baseline.") {
			return true
		}
	}
	return false
}

// worseOn is worse() on level p: whether a metric's comparison with the
// baseline's level, which the report made before its checks
// (comparison.Result.Attach), fails the gate. Without a baseline level it
// errs, as reading baseline.* does.
func worseOn(p, base *result.Point) func(string, float64) (bool, error) {
	return func(metric string, pct float64) (bool, error) {
		if base == nil {
			return false, errors.New("worse() compares with the baseline, and there is none")
		}
		if c := comparisonOf(p, metric); c != nil {
			return c.Fails(pct), nil
		}
		return false, nil // neither run has the metric: nothing got worse
	}
}

func comparisonOf(p *result.Point, metric string) *result.Comparison {
	for i := range p.BaselineComparison {
		if p.BaselineComparison[i].Metric == metric {
			return &p.BaselineComparison[i]
		}
	}
	return nil
}

// gateValues records what each worse() call of the check reads (the
// comparison, in one line) and adds to nulls the metrics it asks about that
// this run could not produce: such a check fails and names them, as one
// reading the metric does.
func gateValues(c *scenario.Check, p, base *result.Point, values map[string]any, nulls []string) []string {
	for _, g := range c.Gates {
		key := "worse(" + g.Metric + ")"
		if cmp := comparisonOf(p, g.Metric); cmp != nil {
			values[key] = cmp.Describe()
		} else if base != nil {
			values[key] = "not compared"
		}
		if _, null := metricValue(p, g.Metric); null && !slices.Contains(nulls, g.Metric) {
			nulls = append(nulls, g.Metric)
		}
	}
	return nulls
}

// evalStage runs a stage-scope check on env; hasBase says whether a
// baseline stage was given (without one, its metrics are not null: a guard
// with baseline == nil is the supported way to use them).
func evalStage(c *scenario.Check, env result.StageEnv, hasBase bool) result.CheckOutcome {
	o := newOutcome(c)
	if c.Program == nil {
		o.Status, o.Message = failStatus(c), "check was not compiled (load the plan with scenario.Load)"
		return o
	}
	o.Values = map[string]any{}
	var nulls []string
	for _, m := range c.Metrics {
		name, fromBase := strings.CutPrefix(m, "baseline.")
		var val any
		var null bool
		if target, ok := scenario.CapacityTarget(name); ok {
			val, null = capacityValue(env.Capacity, target)
			if fromBase {
				val, null = capacityValue(env.BaselineCapacity, target)
			}
		} else {
			src := env.Points
			if fromBase {
				src = env.Baseline
			}
			val, null = pointValues(src, name)
		}
		o.Values[m] = val
		if null && (!fromBase || hasBase) {
			nulls = append(nulls, m)
		}
	}
	o.Status, o.Message = verdict(c, env, nulls)
	return o
}

// pointValues is a metric's value on every point, and whether any is null.
func pointValues(points []result.Point, name string) (any, bool) {
	vals := make([]any, len(points))
	null := false
	for i := range points {
		v, isNull := metricValue(&points[i], name)
		vals[i] = v
		null = null || isNull
	}
	return vals, null
}

// capacityValue is a target's capacity and whether it is null: the search
// decided none (it ran out of budget, or the target failed at min), or the
// stage has no such target.
func capacityValue(caps map[string]*float64, target string) (any, bool) {
	if c := caps[target]; c != nil {
		return *c, false
	}
	return nil, true
}

// verdict runs the program. A null metric fails the check whatever the
// expression says, so "ttft_p95_ms < 500" never passes on a level where no
// request succeeded.
func verdict(c *scenario.Check, env any, nulls []string) (status, msg string) {
	if len(nulls) > 0 {
		return failStatus(c), nullMessage(nulls)
	}
	v, err := expr.Run(c.Program, env)
	if err != nil {
		return failStatus(c), "could not be evaluated: " + oneLine(err)
	}
	if b, _ := v.(bool); b {
		return result.StatusPass, ""
	}
	return failStatus(c), "expression is false"
}

// nullMessage names the null values a check read: metrics the run could not
// produce, capacities a search decided none for.
func nullMessage(nulls []string) string {
	var metrics, caps []string
	for _, n := range nulls {
		if _, ok := scenario.CapacityTarget(strings.TrimPrefix(n, "baseline.")); ok {
			caps = append(caps, n)
		} else {
			metrics = append(metrics, n)
		}
	}
	var parts []string
	if len(metrics) > 0 {
		parts = append(parts, fmt.Sprintf("metric %s is null (not produced by this run)", strings.Join(metrics, ", ")))
	}
	if len(caps) > 0 {
		parts = append(parts, fmt.Sprintf("%s is null (the search decided no capacity: see its status)", strings.Join(caps, ", ")))
	}
	return strings.Join(parts, "; ")
}

// levelValue returns the value a level-scope metric name reads (dereferenced)
// and whether it is null. A baseline metric with no baseline is not "null": an
// expression guarded by baseline != nil is the supported way to use it.
func levelValue(m string, p, base, probe *result.Point) (any, bool) {
	if name, ok := strings.CutPrefix(m, "baseline."); ok {
		if base == nil {
			return nil, false
		}
		return metricValue(base, name)
	}
	if name, ok := strings.CutPrefix(m, "probe."); ok {
		if probe == nil {
			return nil, true // no probe requests measured at this level
		}
		return metricValue(probe, name)
	}
	return metricValue(p, m)
}

// metricValue reads a Point's metric by name (dereferenced) and whether it
// is null: not produced by this run.
func metricValue(p *result.Point, name string) (any, bool) {
	m, ok := result.MetricNamed(name)
	if !ok {
		return nil, false
	}
	return m.Raw(p)
}

func oneLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
