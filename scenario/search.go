package scenario

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm"

	"github.com/runnerbench/runner/result"
)

// Search is a capacity search: instead of listing its levels, a stage looks
// for the highest load (concurrency or rate) at which each target still
// holds, by bracketing and bisection, each probe a full measured level.
type Search struct {
	// Over is what the search varies: concurrency (closed loop) or rate (open loop, requests/s).
	Over Over `yaml:"over" json:"over"`
	// Min is the lowest load probed, and the first. Default 1.
	Min float64 `yaml:"min,omitempty" json:"min,omitempty"`
	// Max is the highest load probed.
	Max float64 `yaml:"max" json:"max"`
	// Step is the precision: a concurrency search stops when the highest passing and lowest
	// failing concurrency are at most step apart (default 1); a rate search when the failing
	// rate is at most step × the passing one above it (relative; default 0.05).
	Step float64 `yaml:"step,omitempty" json:"step,omitempty"`
	// Repeats is how many more probes a load whose outcome is statistically unclear may get
	// before it is decided by its estimate (and reported as not confident). Default 3.
	Repeats *int `yaml:"repeats,omitempty" json:"repeats,omitempty"`
	// Budget bounds the search; it stops when either bound is reached.
	Budget Budget `yaml:"budget,omitempty" json:"budget,omitempty"`
	// Targets are the objectives, each a named level expression (SLO tiers); one probe serves every target.
	Targets []*Target `yaml:"targets" json:"targets"`
}

// Budget bounds a capacity search.
type Budget struct {
	// Probes is the most probes the search runs. Default 30 (1000 when time is set).
	Probes int `yaml:"probes,omitempty" json:"probes,omitempty"`
	// Time bounds the probes' measured time (their duration_s added up); no probe starts after it is used up.
	Time Duration `yaml:"time,omitempty" json:"time,omitempty"`
}

// Target is one objective of a capacity search: a level expression that holds
// at every load up to the capacity.
type Target struct {
	// Name keys the target's capacity (capacity["interactive"] in stage checks).
	Name string `yaml:"name" json:"name"`
	// Expr is an expr-lang boolean expression over a level's metrics, like a level-scope check's.
	Expr string `yaml:"expr" json:"expr"`

	// Program is the compiled Expr; Metrics the metric names it reads.
	Program *vm.Program `yaml:"-" json:"-"`
	Metrics []string    `yaml:"-" json:"-"`
}

// Over is what a capacity search varies: a load kind.
type Over = result.LoadKind

// What a search varies.
const (
	OverConcurrency = result.LoadConcurrency // closed-loop streams
	OverRate        = result.LoadRate        // open-loop arrivals per second
)

// Overs are the allowed values of search.over.
var Overs = []Over{OverConcurrency, OverRate}

// Search defaults, documented in the plan reference (docs/plans.md).
const (
	DefaultSearchMin        = 1
	DefaultConcurrencyStep  = 1
	DefaultRateStep         = 0.05
	DefaultSearchRepeats    = 3
	DefaultSearchProbes     = 30
	MaxSearchRepeats        = 20
	MaxSearchTargets        = 16
	minRateStep             = 0.001
	searchProbesWithTimeCap = MaxLevels
)

// OpenLoop reports whether the stage's load is open loop: a rate list, a
// search over rate, or a series of rates.
func (s *Stage) OpenLoop() bool {
	return len(s.Rate) > 0 || (s.Search != nil && s.Search.Over == OverRate) || (s.Series != nil && s.Series.Over == OverRate)
}

// applyDefaults fills the search's unset fields.
func (s *Search) applyDefaults() {
	if s.Min == 0 {
		s.Min = DefaultSearchMin
	}
	if s.Step == 0 {
		s.Step = DefaultConcurrencyStep
		if s.Over == OverRate {
			s.Step = DefaultRateStep
		}
	}
	if s.Repeats == nil {
		r := DefaultSearchRepeats
		s.Repeats = &r
	}
	if s.Budget.Probes == 0 {
		s.Budget.Probes = DefaultSearchProbes
		if s.Budget.Time > 0 {
			s.Budget.Probes = searchProbesWithTimeCap
		}
	}
}

// search validates a stage's search block.
func (v *validator) search(path string, st *Stage) {
	s, sp := st.Search, path+".search"
	if !v.has(sp + ".over") {
		v.errf(sp, "%s: missing over: concurrency or rate", sp)
	}
	enum(v, sp+".over", s.Over, Overs)
	v.searchBounds(sp, s)
	if s.Repeats != nil && (*s.Repeats < 0 || *s.Repeats > MaxSearchRepeats) {
		v.errf(sp+".repeats", "%s: repeats must be between 0 and %d, got %d", sp, MaxSearchRepeats, *s.Repeats)
	}
	if b := s.Budget; b.Probes < 0 || b.Probes > MaxLevels {
		v.errf(sp+".budget.probes", "%s.budget: probes must be between 1 and %d, got %d", sp, MaxLevels, b.Probes)
	} else if b.Probes == 0 && v.has(sp+".budget.probes") {
		v.errf(sp+".budget.probes", "%s.budget: probes must be at least 1 (leave it out for the default)", sp)
	}
	v.nonNegDur(sp+".budget.time", s.Budget.Time)
	if st.Requests.IsZero() && st.Duration == 0 {
		v.errf(path, "%s: a search stage needs duration or requests: how long each probe measures", path)
	}
	if len(st.Requests.List) > 0 {
		v.errf(path+".requests", "%s: a search stage takes one requests count for every probe, not a list", path)
	}
	if n := st.Requests.Each; s.Over == OverConcurrency && n > 0 && float64(n) < s.Max {
		v.errf(path+".requests", "%s: requests (%d) is below search.max (%g): probes near max could not keep their concurrency; use duration, or requests >= max", path, n, s.Max)
	}
	v.searchTargets(sp, s)
}

// searchBounds checks min, max and step for what the search varies.
func (v *validator) searchBounds(sp string, s *Search) {
	if !v.has(sp + ".max") {
		v.errf(sp, "%s: missing max: the highest load to probe", sp)
	}
	for _, f := range []struct {
		key string
		x   float64
	}{{"min", s.Min}, {"max", s.Max}} {
		if !v.has(sp + "." + f.key) {
			continue
		}
		switch x := f.x; s.Over {
		case OverConcurrency:
			if x < 1 || x > MaxConcurrency || x != math.Trunc(x) {
				v.errf(sp+"."+f.key, "%s: %s: a concurrency must be a whole number between 1 and %d, got %g", sp, f.key, MaxConcurrency, x)
			}
		case OverRate:
			if !(x > 0) || x > MaxRate {
				v.errf(sp+"."+f.key, "%s: %s: a rate must be above 0 and at most %g requests/s, got %g", sp, f.key, MaxRate, x)
			}
		}
	}
	lo := s.Min
	if !v.has(sp + ".min") {
		lo = DefaultSearchMin
	}
	if v.has(sp+".max") && s.Max <= lo {
		v.errf(sp+".max", "%s: max (%g) must be above min (%g)", sp, s.Max, lo)
	}
	if !v.has(sp + ".step") {
		return
	}
	switch {
	case s.Over == OverConcurrency && (s.Step < 1 || s.Step != math.Trunc(s.Step) || s.Step > MaxConcurrency):
		v.errf(sp+".step", "%s: step is the precision in streams for a concurrency search: a whole number >= 1, got %g", sp, s.Step)
	case s.Over == OverRate && !(s.Step >= minRateStep && s.Step < 1):
		v.errf(sp+".step", "%s: step is the relative precision of a rate search: at least %g and below 1 (0.05 = within 5%%), got %g", sp, minRateStep, s.Step)
	}
}

// searchTargets checks the targets' names; their expressions are compiled
// with the checks (compileTargets).
func (v *validator) searchTargets(sp string, s *Search) {
	if len(s.Targets) == 0 {
		v.errf(sp+".targets", "%s: needs at least one target: {name: ..., expr: ...}", sp)
	}
	if len(s.Targets) > MaxSearchTargets {
		v.errf(sp+".targets", "%s: more than %d targets", sp, MaxSearchTargets)
	}
	seen := map[string]int{}
	for i, t := range s.Targets {
		tp := fmt.Sprintf("%s.targets[%d]", sp, i)
		if t == nil {
			v.errf(tp, "%s: empty target", tp)
			continue
		}
		if strings.TrimSpace(t.Name) == "" {
			v.errf(tp+".name", "%s: missing name (it keys the capacity: capacity[\"name\"])", tp)
		} else if j, dup := seen[t.Name]; dup {
			v.errf(tp+".name", "%s: duplicate target name %q (also targets[%d])", tp, t.Name, j)
		} else {
			seen[t.Name] = i
			v.name(tp+".name", t.Name)
		}
		if strings.TrimSpace(t.Expr) == "" {
			v.errf(tp+".expr", "%s: missing expr", tp)
		}
	}
}

// compileTargets compiles every search target as a level expression. A
// target may not read the baseline (the search decides while it runs, and a
// report recomputed without the baseline must decide alike), and goodput
// needs the stage's slo.
func (v *validator) compileTargets(i int, st *Stage) {
	if st.Search == nil {
		return
	}
	for j, t := range st.Search.Targets {
		if t == nil || strings.TrimSpace(t.Expr) == "" {
			continue
		}
		tp := fmt.Sprintf("stages[%d].search.targets[%d].expr", i, j)
		if err := t.compile(); err != nil {
			v.exprError(tp, t.Expr, ScopeLevel, err)
			continue
		}
		if readsIdent(t.Program.Node(), "probe") {
			v.errf(tp, "%s: a search target cannot read probe: give it a level check (probe.ttft_p95_ms < ...) instead", tp)
		}
		if readsIdent(t.Program.Node(), "baseline") {
			v.errf(tp, "%s: a search target cannot read baseline: the search decides while it runs (compare capacities in a stage check: capacity[%q] >= baseline.capacity[%q])", tp, t.Name, t.Name)
		}
		if slices.Contains(t.Metrics, "goodput") && st.SLO == nil {
			v.errf(tp, "%s: goodput needs the stage's slo (slo: {ttft_ms: ..., tpot_ms: ...})", tp)
		}
	}
}

// compile compiles the target's expression as a level expression.
func (t *Target) compile() error {
	prog, metrics, err := CompileCheck(t.Expr, ScopeLevel)
	if err != nil {
		return err
	}
	t.Program, t.Metrics = prog, metrics
	return nil
}

// Compile compiles every target of a search that did not come through Load
// (one read back from a run's records).
func (s *Search) Compile() error {
	for _, t := range s.Targets {
		if err := t.compile(); err != nil {
			return fmt.Errorf("search target %q: %w", t.Name, err)
		}
	}
	return nil
}

// TargetNames lists the targets' names in plan order (an empty entry,
// which the validator reports, names none).
func (s *Search) TargetNames() []string {
	out := make([]string, 0, len(s.Targets))
	for _, t := range s.Targets {
		if t != nil {
			out = append(out, t.Name)
		}
	}
	return out
}

// readsIdent reports whether an expression reads the identifier name.
func readsIdent(root ast.Node, name string) bool {
	found := false
	ast.Walk(&root, visitor(func(n ast.Node) {
		if id, ok := n.(*ast.IdentifierNode); ok && id.Value == name {
			found = true
		}
	}))
	return found
}

// baselineCapacity rewrites baseline.capacity, which stage-scope checks
// write, into the environment's field for it: stage-scope baseline stays the
// list of the baseline's levels (all(baseline, ...) keeps working), and the
// field's own name has a space, so no expression can spell it otherwise.
type baselineCapacity struct{}

// baselineCapacityField is StageEnv.BaselineCapacity's expr name.
const baselineCapacityField = "baseline capacity"

// Visit implements ast.Visitor.
func (baselineCapacity) Visit(n *ast.Node) {
	m, ok := (*n).(*ast.MemberNode)
	if !ok {
		return
	}
	id, isID := m.Node.(*ast.IdentifierNode)
	prop, isStr := m.Property.(*ast.StringNode)
	if isID && isStr && id.Value == "baseline" && prop.Value == "capacity" {
		ast.Patch(n, &ast.IdentifierNode{Value: baselineCapacityField})
	}
}

// capacityReads lists the capacities a stage-scope expression reads by a
// constant name, as `capacity["name"]` and `baseline.capacity["name"]`, so a
// null one fails the check and is named.
func capacityReads(root ast.Node) []string {
	var out []string
	ast.Walk(&root, visitor(func(n ast.Node) {
		m, ok := n.(*ast.MemberNode)
		if !ok {
			return
		}
		id, isID := m.Node.(*ast.IdentifierNode)
		prop, isStr := m.Property.(*ast.StringNode)
		if !isID || !isStr {
			return
		}
		var name string
		switch id.Value {
		case "capacity":
			name = CapacityMetric(prop.Value)
		case baselineCapacityField:
			name = "baseline." + CapacityMetric(prop.Value)
		default:
			return
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}))
	return out
}

// CapacityMetric is how a check's read of a target's capacity is named in
// its outcome: capacity["interactive"].
func CapacityMetric(target string) string { return "capacity[" + strconv.Quote(target) + "]" }

// CapacityTarget is the target a name made by CapacityMetric reads, and
// whether name is one.
func CapacityTarget(name string) (string, bool) {
	q, ok := strings.CutPrefix(name, "capacity[")
	if !ok || !strings.HasSuffix(q, "]") {
		return "", false
	}
	t, err := strconv.Unquote(strings.TrimSuffix(q, "]"))
	return t, err == nil
}

// capacityRefs checks that a stage-scope check reads capacities only on a
// search stage, and only of targets the search has.
func (v *validator) capacityRefs(path string, st *Stage, c *Check) {
	if c.Scope != ScopeStage || c.Program == nil {
		return
	}
	reads := readsIdent(c.Program.Node(), "capacity") || readsIdent(c.Program.Node(), baselineCapacityField)
	if !reads {
		return
	}
	if st.Search == nil {
		v.errf(path, "%s: capacity is a search stage's (this stage lists its levels; give it search: {...})", path)
		return
	}
	names := st.Search.TargetNames()
	for _, m := range c.Metrics {
		t, ok := CapacityTarget(strings.TrimPrefix(m, "baseline."))
		if ok && !slices.Contains(names, t) {
			v.errf(path, "%s: the search has no target %q%s", path, t, refHint(t, names))
		}
	}
}
