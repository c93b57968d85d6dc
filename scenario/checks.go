package scenario

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"

	"github.com/runnerbench/runner/internal/suggest"
	"github.com/runnerbench/runner/result"
)

// metrics lists the metric names a check expression can read (the metric
// catalogue's), sorted for binary search.
func metrics() []string {
	metricOnce.Do(func() {
		metricNames = result.MetricNames()
		slices.Sort(metricNames)
	})
	return metricNames
}

var (
	metricOnce  sync.Once
	metricNames []string
)

// CompileCheck compiles a check expression for its scope (level or stage), and
// returns the program and the metric names it reads. A level-scope
// expression's worse() calls must name a metric the gate can judge and a
// percentage (GatesOf lists them). Exported for tools that build checks
// outside a plan file (and for tests).
func CompileCheck(src string, scope Scope) (*vm.Program, []string, error) {
	opts := []expr.Option{expr.Env(result.LevelEnv{}), expr.AsBool(), expr.Patch(nullableBools{})}
	if scope == ScopeStage {
		opts = []expr.Option{expr.Env(result.StageEnv{}), expr.AsBool(), expr.Patch(baselineCapacity{}), expr.Patch(nullableBools{})}
	}
	prog, err := expr.Compile(src, opts...)
	if err != nil {
		return nil, nil, err
	}
	if _, err := gates(src, prog.Node()); err != nil {
		return nil, nil, err
	}
	return prog, append(readMetrics(prog.Node()), capacityReads(prog.Node())...), nil
}

// GatesOf lists the worse() calls of a program CompileCheck compiled.
func GatesOf(prog *vm.Program) []Gate {
	if prog == nil {
		return nil
	}
	g, _ := gates(prog.Source().String(), prog.Node())
	return g
}

// readMetrics walks an expression's AST for the metric names it reads: bare
// identifiers (level scope), members of points' items (stage scope, ".ttft_p95_ms")
// and members of the baseline ("baseline.ttft_p95_ms").
func readMetrics(root ast.Node) []string {
	known := metrics()
	var out []string
	add := func(s string) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	ast.Walk(&root, visitor(func(n ast.Node) {
		switch n := n.(type) {
		case *ast.IdentifierNode:
			if _, ok := slices.BinarySearch(known, n.Value); ok {
				add(n.Value)
			}
		case *ast.MemberNode:
			prop, ok := n.Property.(*ast.StringNode)
			if !ok {
				return
			}
			if _, ok := slices.BinarySearch(known, prop.Value); !ok {
				return
			}
			id, isID := n.Node.(*ast.IdentifierNode)
			if isID && (id.Value == "capacity" || id.Value == baselineCapacityField) {
				return // a target's name, not a metric
			}
			if isID && (id.Value == "baseline" || id.Value == "probe") {
				add(id.Value + "." + prop.Value)
				return
			}
			add(prop.Value)
		}
	}))
	return out
}

type visitor func(ast.Node)

func (f visitor) Visit(n *ast.Node) { f(*n) }

var (
	unknownNameRE = regexp.MustCompile(`unknown name (\w+)`)
	noFieldRE     = regexp.MustCompile(`has no field (\w+)`)
	notBoolRE     = regexp.MustCompile(`^expected bool, but got (.+)$`)
)

func (v *validator) compileChecks() {
	for i, s := range v.plan.Stages {
		if s == nil {
			continue
		}
		v.compileTargets(i, s)
		for j, c := range s.Checks {
			if c == nil || strings.TrimSpace(c.Expr) == "" {
				continue
			}
			cp := fmt.Sprintf("stages[%d].checks[%d]", i, j)
			at := v.pos(cp + ".expr")
			c.Line, c.Column = at.line, at.col
			if !slices.Contains(Scopes, c.Scope) {
				continue // reported by validate
			}
			prog, metrics, err := CompileCheck(c.Expr, c.Scope)
			if err != nil {
				v.exprError(cp+".expr", c.Expr, c.Scope, err)
			} else {
				c.Program, c.Metrics, c.Gates = prog, metrics, GatesOf(prog)
				v.capacityRefs(cp+".expr", s, c)
				v.probeRefs(cp+".expr", s, metrics)
			}
			if c.When != "" && c.Scope == ScopeLevel {
				prog, metrics, err := CompileCheck(c.When, ScopeLevel)
				if err != nil {
					v.exprError(cp+".when", c.When, ScopeLevel, err)
				} else {
					c.WhenProgram, c.WhenMetrics = prog, metrics
					c.Gates = append(c.Gates, GatesOf(prog)...)
				}
			}
		}
		v.batchChecks(i, s)
		v.untilChecks(i, s)
	}
}

// probeRefs refuses a check that reads the probe requests' point
// (probe.METRIC) on a stage that sends none: it could only fail.
func (v *validator) probeRefs(path string, s *Stage, metrics []string) {
	if s.Probe != nil {
		return
	}
	for _, m := range metrics {
		if strings.HasPrefix(m, "probe.") {
			v.errf(path, "%s: reads %s, but the stage sends no probe requests: add probe: {rate: 1} to the stage", path, m)
			return
		}
	}
}

// exprError reports a compile error at its place inside the expression, with
// the closest metric names for an unknown one.
func (v *validator) exprError(path, src string, scope Scope, err error) {
	at := v.pos(path)
	msg := err.Error()
	var fe *file.Error
	if errors.As(err, &fe) {
		msg = fe.Message
		switch {
		case v.dec != nil && v.dec.block[path]:
			// A | or > block starts on the line after its indicator; the
			// column is the content's indentation plus the offset in it.
			first := at.line // the first content line (0-based index into lines)
			at.line += fe.Line
			at.col = fe.Column + 1
			if first < len(v.lines) {
				line := v.lines[first]
				at.col += len(line) - len(strings.TrimLeft(line, " "))
			}
		case fe.Line <= 1:
			at.col += fe.Column
			if v.dec != nil && v.dec.quoted[path] {
				at.col++
			}
		default:
			at.line += fe.Line - 1
		}
	}
	msg = explain(src, msg, scope)
	what := "check"
	if strings.Contains(path, ".search.targets[") {
		what = "target"
	}
	v.probs.add(at, "%s: invalid %s expression: %s", path, what, msg)
}

// ExplainExpr is the message of err, a compile error of expression src in
// scope, with the hint a newcomer needs: the closest metric names for an
// unknown one, how to write a number or a comparison. For anything that
// compiles a check expression outside a plan (the board's --rank).
func ExplainExpr(src string, scope Scope, err error) string {
	msg, _, _ := strings.Cut(err.Error(), "\n") // expr's errors draw a caret below
	var fe *file.Error
	if errors.As(err, &fe) {
		msg = fe.Message
	}
	return explain(src, msg, scope)
}

// explain adds its hint to msg, the message of a compile error of src.
func explain(src, msg string, scope Scope) string {
	if m := notBoolRE.FindStringSubmatch(msg); m != nil {
		msg = notBool(src, m[1])
	} else if hint := syntaxHint(src, msg); hint != "" {
		msg += hint
	}
	names := metrics()
	if scope == ScopeStage {
		names = append([]string{"points", "baseline", "capacity"}, names...)
	} else {
		names = append([]string{"baseline"}, names...)
	}
	for _, re := range []*regexp.Regexp{unknownNameRE, noFieldRE} {
		if m := re.FindStringSubmatch(msg); m != nil {
			if scope == ScopeLevel && re == unknownNameRE && m[1] == "capacity" {
				msg += " (capacity is read by a stage-scope check: add scope: stage)"
			} else if scope == ScopeStage && m[1] == worseFunc {
				msg += " (worse() compares one level with the baseline's: use it in a level-scope check)"
			} else if scope == ScopeStage && re == unknownNameRE && slices.Contains(metrics(), m[1]) {
				msg += fmt.Sprintf(" (a stage-scope check sees points: write e.g. all(points, .%s ...))", m[1])
			} else if hint := metricHint(m[1], names); hint != "" {
				msg += hint
			}
			break
		}
	}
	return msg
}

// notBool is the message for an expression that is not true or false: a
// number (a bare metric, "ttft_p95_ms") is a comparison left unfinished.
func notBool(src, got string) string {
	got = strings.TrimPrefix(got, "*")
	src = strings.TrimSpace(src)
	switch got {
	case "float64", "int", "int64", "float32", "int32", "uint", "uint64":
		return fmt.Sprintf("a check must be a comparison that is true or false, but %q is a number: compare it with a limit (e.g. %s < 500)", src, src)
	}
	return fmt.Sprintf("the expression must be true or false, but it gives %s", got)
}

// unitRE finds a number written with a unit ("300ms", "1.5 s", "2%").
var unitRE = regexp.MustCompile(`((\d+(?:\.\d+)?)\s*(ms|us|µs|ns|s|sec|secs|seconds|m|min|h|%))(?:$|[^\w/])`)

// wordRE finds the names in an expression.
var wordRE = regexp.MustCompile(`\w+`)

// timeUnits are the units unitRE finds that a _ms or _s metric converts, in
// seconds.
var timeUnits = map[string]float64{"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "sec": 1, "secs": 1, "seconds": 1, "m": 60, "min": 60, "h": 3600}

// syntaxHint says how to write what a newcomer most often writes wrong, for
// an expression expr could not parse: a number with a unit ("< 300ms": the
// unit is in the metric's name), or "=" for "==".
func syntaxHint(src, msg string) string {
	if m := unitRE.FindStringSubmatch(src); m != nil {
		return unitHint(src, m[1], m[2], m[3])
	}
	if strings.Contains(msg, `Operator("=")`) {
		return " (to compare, write ==)"
	}
	return ""
}

// unitHint is syntaxHint's for num written with unit: the number to write,
// converted to the unit in the name of the metric src reads (ttft_p95_ms:
// milliseconds) when it can be.
func unitHint(src, written, num, unit string) string {
	var m *result.Metric
	for _, w := range wordRE.FindAllString(src, -1) {
		if mm, ok := result.MetricNamed(w); ok {
			m = mm
			break
		}
	}
	if m == nil {
		return fmt.Sprintf(" (numbers take no unit: write %s, in the unit the metric's name ends with: _ms, _s)", num)
	}
	per, isTime := timeUnits[unit]
	switch {
	case isTime && (m.Unit == "ms" || m.Unit == "s"):
		v, _ := strconv.ParseFloat(num, 64)
		if m.Unit == "ms" {
			v *= per * 1000
		} else {
			v *= per
		}
		return fmt.Sprintf(" (numbers take no unit: write %s for %s; the unit is in the metric's name: %s is in %s)",
			strconv.FormatFloat(v, 'f', -1, 64), written, m.Name, unitWord(m.Unit))
	case unit == "%" && m.Percent():
		v, _ := strconv.ParseFloat(num, 64)
		return fmt.Sprintf(" (numbers take no unit: %s is a share from 0 to 1, so write %s for %s)", m.Name, strconv.FormatFloat(v/100, 'f', -1, 64), written)
	}
	return fmt.Sprintf(" (numbers take no unit: write %s; %s is counted in %s)", num, m.Name, m.Unit)
}

// unitWord spells a time unit out.
func unitWord(u string) string {
	if u == "ms" {
		return "milliseconds"
	}
	return "seconds"
}

// metricHint suggests the metric a synonym stands for ("tpot_median_ms"),
// else up to three metric names close to s.
func metricHint(s string, names []string) string {
	if lower := strings.ToLower(s); lower != s && slices.Contains(names, lower) {
		return fmt.Sprintf(" (did you mean %s? names are lower case)", lower)
	}
	if m, ok := result.MetricForAlias(s); ok {
		return fmt.Sprintf(" (did you mean %s?)", m.Name)
	}
	out := suggest.Several(s, names, 3)
	switch len(out) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf(" (did you mean %s?)", out[0])
	}
	return fmt.Sprintf(" (did you mean one of %s?)", strings.Join(out, ", "))
}

// Compile compiles the check's expression and its when condition for its
// scope, for a check that did not come through Load (one read back from a
// run's records).
func (c *Check) Compile() error {
	scope := c.Scope
	if scope == "" {
		scope = DefaultScope
	}
	prog, metrics, err := CompileCheck(c.Expr, scope)
	if err != nil {
		return fmt.Errorf("check %q: %w", c.Name, err)
	}
	c.Program, c.Metrics, c.Gates = prog, metrics, GatesOf(prog)
	if c.When != "" && scope == ScopeLevel {
		w, metrics, err := CompileCheck(c.When, ScopeLevel)
		if err != nil {
			return fmt.Errorf("check %q: when: %w", c.Name, err)
		}
		c.WhenProgram, c.WhenMetrics = w, metrics
		c.Gates = append(c.Gates, GatesOf(w)...)
	}
	return nil
}

// nullableBools lets a check read a metric that is a nullable flag (steady:
// null without slices) as the bool it is: each read of it becomes
// `metric == true`, since expr gives a *bool where a bool is wanted (the
// expression as a whole, !, &&). A null one never reaches the expression:
// the check fails first, naming it, as for any null metric.
type nullableBools struct{}

// Visit implements ast.Visitor.
func (nullableBools) Visit(n *ast.Node) {
	var name string
	switch m := (*n).(type) {
	case *ast.IdentifierNode:
		name = m.Value
	case *ast.MemberNode:
		if p, ok := m.Property.(*ast.StringNode); ok {
			name = p.Value
		}
	}
	if name == "" || !slices.Contains(boolPtrMetrics(), name) {
		return
	}
	ast.Patch(n, &ast.BinaryNode{Operator: "==", Left: *n, Right: &ast.BoolNode{Value: true}})
}

// boolPtrMetrics are the metrics whose Point field is a *bool.
func boolPtrMetrics() []string {
	boolPtrOnce.Do(func() {
		pt := reflect.TypeFor[result.Point]()
		for i := range pt.NumField() {
			f := pt.Field(i)
			if tag := f.Tag.Get("expr"); tag != "" && tag != "-" && f.Type == reflect.TypeFor[*bool]() {
				boolPtrNames = append(boolPtrNames, tag)
			}
		}
	})
	return boolPtrNames
}

var (
	boolPtrOnce  sync.Once
	boolPtrNames []string
)
