package stats

import (
	"math"
	"sync"
)

// RunsInterval is the interval of the change between two groups of whole
// runs under the hypothesis that nothing changed, from each run's statistic
// alone: base and cur hold one value per run, at least two each. It is
// Student's two-sample interval with one variance, the runs' spread about
// their groups' means pooled over both groups (nb + nc − 2 degrees of
// freedom). Abs is the interval of mean(cur) − mean(base), Rel that of the
// relative change: on the log scale when every value is positive, by the
// delta method otherwise (NaN when the base mean is 0).
//
// History judges a window of runs against the runs before it with it. Its
// question is whether anything changed; where nothing did, both groups are
// draws of one distribution, with one variance, which the pooled estimate
// measures with all the runs' degrees of freedom. Compare's replicate
// interval (Welch's) does not assume that, for two runs whose replicates
// may spread differently; with a window of 3 runs its 2–4 degrees of
// freedom make the quantiles of a family of thousands of windows (t at
// 1 − 10⁻⁶) ten times wider than these, and no change could be seen.
func RunsInterval(base, cur []float64, confidence float64) (abs, rel Interval, ok bool) {
	nan := Interval{math.NaN(), math.NaN()}
	if len(base) < 2 || len(cur) < 2 || !(confidence > 0 && confidence < 1) {
		return nan, nan, false
	}
	nb, nc := float64(len(base)), float64(len(cur))
	t := cachedQuantile(1-(1-confidence)/2, nb+nc-2)
	mb, mn := mean(base), mean(cur)
	s2 := pooledVariance(base, cur)
	half := t * math.Sqrt(s2*(1/nb+1/nc))
	abs = Interval{mn - mb - half, mn - mb + half}
	switch {
	case mb == 0:
		rel = nan
	case allPositive(base) && allPositive(cur):
		lb, lc := logs(base), logs(cur)
		h := t * math.Sqrt(pooledVariance(lb, lc)*(1/nb+1/nc))
		l := mean(lc) - mean(lb)
		rel = Interval{math.Expm1(l - h), math.Expm1(l + h)}
	default:
		// The delta method on the linear scale: R = (N − B)/|B| has
		// ∂R/∂N = 1/|B| and |∂R/∂B| = |N|/B².
		an, ab := s2/nc/(mb*mb), s2/nb*mn*mn/(mb*mb*mb*mb)
		h := t * math.Sqrt(an+ab)
		r := (mn - mb) / math.Abs(mb)
		rel = Interval{r - h, r + h}
	}
	return abs, rel, true
}

// pooledVariance is the two groups' common variance: the squares about
// each group's own mean, over nb + nc − 2.
func pooledVariance(a, b []float64) float64 {
	ss := 0.0
	for _, x := range [][]float64{a, b} {
		m := mean(x)
		for _, v := range x {
			ss += (v - m) * (v - m)
		}
	}
	return ss / float64(len(a)+len(b)-2)
}

func logs(x []float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = math.Log(v)
	}
	return out
}

// quantiles memoises StudentQuantile for RunsInterval: a history asks for
// one (p, df) per window, thousands of times, and each costs a bisection.
var quantiles sync.Map // [2]float64{p, df} → float64

func cachedQuantile(p, df float64) float64 {
	k := [2]float64{p, df}
	if v, ok := quantiles.Load(k); ok {
		return v.(float64)
	}
	v := StudentQuantile(p, df)
	quantiles.Store(k, v)
	return v
}
