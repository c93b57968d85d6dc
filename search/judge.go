package search

import (
	"math"
	"slices"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"

	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
)

// The noise model. A metric's run-to-run noise is taken to be relative (a
// share of its value) and the same at every load: its estimate pools the
// squared relative deviations of every load probed more than once, with
// their degrees of freedom (Student's t then widens the interval for a noise
// measured on few repeats). Before any load has been repeated the noise is
// unknown, and is taken as priorNoise with priorDOF degrees of freedom: a
// single probe within 21.5% (t₂ × 5%) of a bound is unclear, and repeated.
// The prior is not mixed into a measured noise, which it would swamp: 5% is
// many times the noise of a steady server's medians.
const (
	priorNoise = 0.05
	priorDOF   = 2
	// maxCorners bounds the corners tried: past it only the all-low and
	// all-high corners are (a target reading more than ten noisy metrics).
	maxCorners = 10
)

// verdict is a target's outcome at one load.
type verdict struct {
	passed bool
	// clear: the outcome is the same across every metric's interval.
	clear bool
	// decided: clear, or the load has had all its repeats (then it is
	// decided by its estimate, and not confident).
	decided bool
	est     []result.SearchEstimate
}

// box is a noisy metric's interval.
type box struct {
	m      *result.Metric
	lo, hi float64
}

// judge decides a target at a load: it evaluates the target on an estimate
// of the load's metrics (their mean over its probes, flags and text from the
// latest), then at every corner of their intervals.
func (s *state) judge(t *scenario.Target, l *load) *verdict {
	est := *l.probes[len(l.probes)-1]
	v := &verdict{}
	var boxes []box
	nullAll, nullSome, lowConf := false, false, false
	for _, name := range t.Metrics {
		m, ok := result.MetricNamed(name)
		if !ok || !m.Numeric() {
			continue
		}
		e, b, nulls := s.estimate(m, l)
		switch {
		case nulls == len(l.probes):
			nullAll = true
		case nulls > 0:
			nullSome = true
		}
		lowConf = lowConf || e.Interval == result.IntervalLowConfidence
		m.SetValue(&est, e.Value)
		if b != nil {
			boxes = append(boxes, *b)
		}
		v.est = append(v.est, e)
	}
	v.passed = holds(t.Program, &est)
	switch {
	case nullAll && !nullSome:
		// No probe at this load produced the metric (every request failed):
		// a target that reads it cannot hold, and that is not noise.
		v.passed, v.clear = false, true
	case nullSome, lowConf:
		v.clear = false
	default:
		v.clear = sameAtCorners(t.Program, est, boxes, v.passed)
	}
	v.decided = v.clear || len(l.probes) > *s.cfg.Repeats
	return v
}

// estimate is a metric's estimate at a load, its interval (nil: exact), and
// how many probes had it null.
func (s *state) estimate(m *result.Metric, l *load) (result.SearchEstimate, *box, int) {
	e := result.SearchEstimate{Metric: m.Name, Interval: result.IntervalExact}
	var vals []float64
	k, n := 0.0, 0.0 // goodput: requests meeting the SLO, of all
	for _, p := range l.probes {
		x, ok := m.Value(p)
		if !ok {
			continue
		}
		vals = append(vals, x)
		k += math.Round(x * float64(p.NRequests))
		n += float64(p.NRequests)
	}
	nulls := len(l.probes) - len(vals)
	if len(vals) == 0 {
		return e, nil, nulls
	}
	mean := 0.0
	for _, x := range vals {
		mean += x
	}
	mean /= float64(len(vals))
	e.Value = &mean
	var lo, hi float64
	switch {
	case m.Kind == result.KindLoad:
		return e, nil, nulls
	case m.Name == "goodput" && n > 0:
		// Each request meets the SLO or not: a binomial share, pooled over
		// the load's probes.
		mean = k / n
		lo, hi = wilson(k, n)
		e.Interval = result.IntervalWilson
	case len(vals) == 1 && slices.Contains(l.probes[0].LowConfidence, m.Name):
		e.Interval = result.IntervalLowConfidence
		return e, nil, nulls
	default:
		rel, dof := s.noise(m)
		half := tQuantile(dof) * rel * math.Abs(mean) / math.Sqrt(float64(len(vals)))
		lo, hi = mean-half, mean+half
		e.Interval = result.IntervalNoise
	}
	if m.Integer() {
		lo, hi = math.Floor(lo), math.Ceil(hi)
	}
	e.Low, e.High = &lo, &hi
	return e, &box{m: m, lo: lo, hi: hi}, nulls
}

// noise is a metric's relative run-to-run noise (a standard deviation, as a
// share of the value) and its degrees of freedom, pooled over the loads
// probed more than once, with the prior.
func (s *state) noise(m *result.Metric) (rel, dof float64) {
	if c, ok := s.noiseCache[m.Name]; ok {
		return c[0], c[1]
	}
	ss, d := 0.0, 0.0
	for _, l := range s.loads {
		var vals []float64
		for _, p := range l.probes {
			if x, ok := m.Value(p); ok {
				vals = append(vals, x)
			}
		}
		if len(vals) < 2 {
			continue
		}
		mean := 0.0
		for _, x := range vals {
			mean += x
		}
		mean /= float64(len(vals))
		if mean == 0 {
			continue // all zero: says nothing about a relative noise
		}
		for _, x := range vals {
			ss += (x/mean - 1) * (x/mean - 1)
		}
		d += float64(len(vals) - 1)
	}
	rel = priorNoise
	if d > 0 {
		rel = math.Sqrt(ss / d)
	} else {
		d = priorDOF
	}
	s.noiseCache[m.Name] = [2]float64{rel, d}
	return rel, d
}

// holds runs a target on a point; an expression that cannot be evaluated
// (a null metric) does not hold, as a check that reads one fails.
func holds(prog *vm.Program, p *result.Point) bool {
	out, err := expr.Run(prog, result.LevelEnv{Point: *p})
	b, _ := out.(bool)
	return err == nil && b
}

// sameAtCorners reports whether the target gives want at every corner of the
// boxes (for a target monotone in each metric, which latency and throughput
// bounds are, that is everywhere inside them).
func sameAtCorners(prog *vm.Program, est result.Point, boxes []box, want bool) bool {
	corner := func(mask func(i int) bool) bool {
		p := est
		for i, b := range boxes {
			x := b.lo
			if mask(i) {
				x = b.hi
			}
			b.m.SetValue(&p, &x)
		}
		return holds(prog, &p) == want
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
