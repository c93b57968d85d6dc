package scenario

import (
	"fmt"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"

	"github.com/runnerbench/runner/result"
)

// Gate is one worse(metric, pct) call of a level-scope check: it asks
// whether the metric is significantly worse than the baseline's by more than
// pct percent (result.Comparison.Fails).
type Gate struct {
	Metric string
	Pct    float64
}

// worseFunc is the name checks call the statistical gate by (the expr name
// of result.LevelEnv.Worse).
const worseFunc = "worse"

// gates finds the worse() calls of a compiled expression, and checks each
// names a metric the gate can judge and a percentage written as a number:
// the error is placed at the offending argument, as a compile error is.
func gates(src string, root ast.Node) ([]Gate, error) {
	var out []Gate
	var err error
	ast.Walk(&root, visitor(func(n ast.Node) {
		call, ok := n.(*ast.CallNode)
		if !ok || err != nil {
			return
		}
		if id, ok := call.Callee.(*ast.IdentifierNode); !ok || id.Value != worseFunc || len(call.Arguments) != 2 {
			return
		}
		var g Gate
		if g.Metric, err = gateMetric(src, call.Arguments[0]); err != nil {
			return
		}
		if g.Pct, err = gatePct(src, call.Arguments[1]); err != nil {
			return
		}
		out = append(out, g)
	}))
	return out, err
}

// gateMetric is worse()'s metric: a quoted name of a server metric with an
// interval.
func gateMetric(src string, arg ast.Node) (string, error) {
	s, ok := arg.(*ast.StringNode)
	if !ok {
		return "", at(src, arg, `worse() takes the metric as a quoted name, e.g. worse("ttft_p95_ms", 10)`)
	}
	if err := GateableMetric(s.Value); err != nil {
		return "", at(src, arg, "worse(): "+err.Error())
	}
	return s.Value, nil
}

// GateableMetric returns nil when a gate can judge the metric (a server
// metric with a better direction and an interval), else why not, with the
// names it may have meant: what worse() and runner compare --metrics accept.
func GateableMetric(name string) error {
	m, ok := result.MetricNamed(name)
	if !ok {
		return fmt.Errorf("unknown metric %s%s", name, metricHint(name, gateable()))
	}
	if why := m.NotGateable(); why != "" {
		return fmt.Errorf("%s %s", m.Name, why)
	}
	return nil
}

// gatePct is worse()'s percentage: a number ≥ 0 written in the expression,
// so the gate is known when the plan loads.
func gatePct(src string, arg ast.Node) (float64, error) {
	var v float64
	switch n := arg.(type) {
	case *ast.IntegerNode:
		v = float64(n.Value)
	case *ast.FloatNode:
		v = n.Value
	default:
		return 0, at(src, arg, "worse() takes the percentage as a number, e.g. worse(\"ttft_p95_ms\", 10) for 10%")
	}
	if v < 0 {
		return 0, at(src, arg, fmt.Sprintf("worse(): the percentage %g is negative", v))
	}
	return v, nil
}

// gateable names the metrics worse() accepts (for "did you mean").
func gateable() []string {
	var out []string
	for _, m := range result.Metrics() {
		if m.Gateable() {
			out = append(out, m.Name)
		}
	}
	return out
}

// at is a compile error at node's place in src.
func at(src string, node ast.Node, msg string) error {
	return (&file.Error{Location: node.Location(), Message: msg}).Bind(file.NewSource(src))
}
