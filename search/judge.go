package search

import (
	"math"
	"slices"

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
	// clipAt is how many typical deviations from its load's median a probe
	// may weigh at most (see values).
	clipAt = 3
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

// exact reports whether the outcome read only values no accident can move
// (load settings, flags): it needs no second probe to confirm it.
func (v *verdict) exact() bool {
	for _, e := range v.est {
		if e.Interval != result.IntervalExact || e.Value == nil {
			return false
		}
	}
	return true
}

// judge decides a target at a load: it evaluates the target on an estimate
// of the load's metrics (their mean over its probes, flags and text from the
// latest), then at every corner of their intervals.
func (s *state) judge(t *scenario.Target, l *load) *verdict {
	est := *l.probes[len(l.probes)-1]
	v := &verdict{}
	var boxes []scenario.Box
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
	v.passed = scenario.Evaluate(t.Program, &est)
	switch {
	case nullAll && !nullSome:
		// No probe at this load produced the metric (every request failed):
		// a target that reads it cannot hold, and that is not noise.
		v.passed, v.clear = false, true
	case nullSome, lowConf:
		v.clear = false
	default:
		v.clear = scenario.SameAtCorners(t.Program, est, boxes, v.passed)
	}
	v.decided = v.clear || len(l.probes) > *s.cfg.Repeats
	return v
}

// estimate is a metric's estimate at a load, its interval (nil: exact), and
// how many probes had it null.
func (s *state) estimate(m *result.Metric, l *load) (result.SearchEstimate, *scenario.Box, int) {
	e := result.SearchEstimate{Metric: m.Name, Interval: result.IntervalExact}
	k, n := 0.0, 0.0 // goodput: requests meeting the SLO, of all
	for _, p := range l.probes {
		if x, ok := m.Value(p); ok {
			k += math.Round(x * float64(p.NRequests))
			n += float64(p.NRequests)
		}
	}
	vals := s.values(m, l)
	nulls := len(l.probes) - len(vals)
	if len(vals) == 0 {
		return e, nil, nulls
	}
	mean := meanOf(vals)
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
	return e, &scenario.Box{Metric: m, Low: lo, High: hi}, nulls
}

// raw is a metric's non-null values at a load, in probe order.
func raw(m *result.Metric, l *load) []float64 {
	var vals []float64
	for _, p := range l.probes {
		if x, ok := m.Value(p); ok {
			vals = append(vals, x)
		}
	}
	return vals
}

// values is a metric's values at a load as the search weighs them: at a
// load probed three times or more, a probe further from the load's median
// than clipAt typical deviations (the metric's robust scale) counts as if it
// were that far. One accident (a stalled client) then moves neither the
// load's estimate nor the noise much; with two probes nobody can tell which
// one is the accident, and both count as they are.
func (s *state) values(m *result.Metric, l *load) []float64 {
	vals := raw(m, l)
	r := s.scale(m)
	if len(vals) < 3 || r == 0 {
		return vals
	}
	med := median(vals)
	lo, hi := med-clipAt*r*math.Abs(med), med+clipAt*r*math.Abs(med)
	out := make([]float64, len(vals))
	for i, x := range vals {
		out[i] = min(max(x, lo), hi)
	}
	return out
}

// scale is a metric's typical relative run-to-run deviation, robustly:
// 1.4826 × the median absolute relative deviation of the probes from their
// load's median, over every load probed more than once, each deviation
// scaled by √(m/(m−1)) for the m probes of its load (so that it estimates a
// standard deviation for normal noise). 0 when fewer than three deviations
// are known.
func (s *state) scale(m *result.Metric) float64 {
	if r, ok := s.scaleCache[m.Name]; ok {
		return r
	}
	var devs []float64
	for _, l := range s.loads {
		vals := raw(m, l)
		if len(vals) < 2 {
			continue
		}
		med := median(vals)
		if med == 0 {
			continue
		}
		k := math.Sqrt(float64(len(vals)) / float64(len(vals)-1))
		for _, x := range vals {
			devs = append(devs, k*math.Abs(x/med-1))
		}
	}
	r := 0.0
	if len(devs) >= 3 {
		r = 1.4826 * median(devs)
	}
	s.scaleCache[m.Name] = r
	return r
}

// noise is a metric's relative run-to-run noise (a standard deviation, as a
// share of the value) and its degrees of freedom, pooled over the loads
// probed more than once (their values as values weighs them), or the prior
// before any load was.
func (s *state) noise(m *result.Metric) (rel, dof float64) {
	if c, ok := s.noiseCache[m.Name]; ok {
		return c[0], c[1]
	}
	ss, d := 0.0, 0.0
	for _, l := range s.loads {
		vals := s.values(m, l)
		if len(vals) < 2 {
			continue
		}
		mean := meanOf(vals)
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

func meanOf(xs []float64) float64 {
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
