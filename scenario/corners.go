package scenario

import (
	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"

	"github.com/runnerbench/runner/result"
)

// Box is a metric's interval: where its true value lies, as far as the
// requests measured so far can say.
type Box struct {
	Metric    *result.Metric
	Low, High float64
}

// maxCorners bounds the corners SameAtCorners tries: past it only the
// all-low and all-high corners are (an expression reading more than ten
// noisy metrics).
const maxCorners = 10

// Evaluate runs a level expression on p; one that cannot be evaluated (a
// null metric) is false, as a check that reads one fails.
func Evaluate(prog *vm.Program, p *result.Point) bool {
	out, err := expr.Run(prog, result.LevelEnv{Point: *p})
	b, _ := out.(bool)
	return err == nil && b
}

// SameAtCorners reports whether a level expression gives want at every
// corner of the boxes, p's other metrics as they are: for an expression
// monotone in each metric (latency and throughput bounds are), that is
// everywhere inside them. A capacity search decides a target at a load by
// it, and a level that runs until decided a check.
func SameAtCorners(prog *vm.Program, p result.Point, boxes []Box, want bool) bool {
	corner := func(mask func(i int) bool) bool {
		q := p
		for i, b := range boxes {
			x := b.Low
			if mask(i) {
				x = b.High
			}
			b.Metric.SetValue(&q, &x)
		}
		return Evaluate(prog, &q) == want
	}
	if len(boxes) > maxCorners {
		return corner(func(int) bool { return false }) && corner(func(int) bool { return true })
	}
	for c := range 1 << len(boxes) {
		if !corner(func(i int) bool { return c&(1<<i) != 0 }) {
			return false
		}
	}
	return true
}
