package comparison

import (
	"fmt"
	"slices"
	"strings"

	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
)

// The gate's family is decided here, once, for every path that gates: a
// run's --baseline (whose worse() checks read the comparisons), runner
// report and merge --baseline, and runner compare --fail-above. Only the
// family's metrics get a verdict and share the Bonferroni confidence, so
// two paths over one pair of runs judge the same comparisons with the same
// intervals and give one answer.

// Sources of a family (result.GateFamily.Source).
const (
	FamilyPlan    = "plan"    // the metrics the plan's worse() checks name
	FamilyDefault = "default" // every server metric with an interval
	FamilyChosen  = "metrics" // --metrics
)

// Family is which metrics a gate judges, by stage.
type Family struct {
	rec result.GateFamily
	// warn: by stage, the metrics only warn-severity worse() checks name: a
	// failure there warns, as the check does.
	warn map[string]map[string]bool
	// pct is the smallest percentage a worse() of the plan asks about (-1:
	// none).
	pct float64
}

// Record is the family as the report carries it.
func (f *Family) Record() *result.GateFamily {
	r := f.rec
	return &r
}

// Judges reports whether the gate judges metric in stage.
func (f *Family) Judges(stage, metric string) bool {
	if f.rec.Source == FamilyPlan {
		return slices.Contains(f.rec.Stages[stage], metric)
	}
	return slices.Contains(f.rec.Metrics, metric)
}

// WarnOnly reports whether metric is gated in stage by warn-severity
// worse() checks only: a regression there warns and does not fail.
func (f *Family) WarnOnly(stage, metric string) bool { return f.warn[stage][metric] }

// Threshold is the practical threshold the family asks for:
// DefaultThreshold, or the smallest worse() percentage if that is smaller,
// so a metric worse() finds worse is never shown as "same".
func (f *Family) Threshold() float64 {
	if f.pct >= 0 {
		return min(DefaultThreshold, f.pct/100)
	}
	return DefaultThreshold
}

// Gateable lists the metrics a gate can judge: server metrics with a better
// direction and an interval (what worse() accepts), in catalogue order.
func Gateable() []string {
	var out []string
	for _, m := range result.Metrics() {
		if m.Gateable() {
			out = append(out, m.Name)
		}
	}
	return out
}

// DefaultFamily is the family of a run whose plan declares no gate: every
// server metric with an interval (Gateable).
func DefaultFamily() *Family {
	return &Family{rec: result.GateFamily{Source: FamilyDefault, Metrics: Gateable()}, pct: -1}
}

// ChosenFamily is the family --metrics names (comma-separated; "all" is
// every gateable metric). A name worse() would refuse is an error saying
// why, as in a plan.
func ChosenFamily(list string) (*Family, error) {
	var names []string
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		switch {
		case n == "":
			continue
		case n == "all":
			names = append(names, Gateable()...)
			continue
		}
		if err := scenario.GateableMetric(n); err != nil {
			return nil, err
		}
		names = append(names, n)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no metric named (e.g. ttft_p95_ms,tpot_p50_ms, or all)")
	}
	return &Family{rec: result.GateFamily{Source: FamilyChosen, Metrics: inCatalogueOrder(names)}, pct: -1}, nil
}

// PlanFamily is the family of a run of these stages: the metrics their
// worse() checks name, stage by stage (a stage whose checks call no worse()
// is not gated), or DefaultFamily when none calls worse().
func PlanFamily(stages []*scenario.Stage) *Family {
	f := &Family{rec: result.GateFamily{Source: FamilyPlan, Stages: map[string][]string{}}, warn: map[string]map[string]bool{}, pct: -1}
	for _, st := range stages {
		if st == nil {
			continue
		}
		fails := map[string]bool{}
		var names []string
		for _, c := range st.Checks {
			for _, g := range c.Gates {
				names = append(names, g.Metric)
				fails[g.Metric] = fails[g.Metric] || c.Severity != scenario.SeverityWarn
				if f.pct < 0 || g.Pct < f.pct {
					f.pct = g.Pct
				}
			}
		}
		if len(names) == 0 {
			continue
		}
		f.rec.Stages[st.Name] = inCatalogueOrder(names)
		f.warn[st.Name] = map[string]bool{}
		for m, fail := range fails {
			f.warn[st.Name][m] = !fail
		}
		f.rec.Metrics = inCatalogueOrder(append(f.rec.Metrics, names...))
	}
	if len(f.rec.Stages) == 0 {
		return DefaultFamily()
	}
	return f
}

// ReportStages rebuilds, from a report's check outcomes, the stages'
// level-scope checks as far as the gate needs them (expression and
// severity): the family of a run whose records are not at hand.
func ReportStages(rep *result.Report) ([]*scenario.Stage, error) {
	var out []*scenario.Stage
	for _, rs := range rep.Stages {
		st := &scenario.Stage{Name: rs.Name}
		seen := map[string]bool{}
		for _, o := range rs.Checks {
			if o.Scope != string(scenario.ScopeLevel) || seen[o.Name+"\x00"+o.Expr] {
				continue
			}
			seen[o.Name+"\x00"+o.Expr] = true
			c := &scenario.Check{Name: o.Name, Expr: o.Expr, Scope: scenario.ScopeLevel, Severity: scenario.Severity(o.Severity)}
			if err := c.Compile(); err != nil {
				return nil, fmt.Errorf("stage %s: %w", rs.Name, err)
			}
			st.Checks = append(st.Checks, c)
		}
		out = append(out, st)
	}
	return out, nil
}

// inCatalogueOrder is names without repeats, in the catalogue's order.
func inCatalogueOrder(names []string) []string {
	var out []string
	for _, m := range result.Metrics() {
		if slices.Contains(names, m.Name) {
			out = append(out, m.Name)
		}
	}
	return out
}
