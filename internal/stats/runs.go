package stats

import "math"

// RunsInterval is the replicate interval (replicateDelta's) of the change
// between two groups of whole runs, from each run's statistic alone: base
// and cur hold one value per run, at least two each. Abs is the interval of
// mean(cur) − mean(base), Rel that of the relative change: on the log scale
// when every value is positive, by the delta method otherwise (NaN when
// the base mean is 0). History uses it to find the windows worth a full
// Compare, whose interval holds this one (the union with the requests'),
// so a window this interval cannot call worse or better, Compare cannot
// either.
func RunsInterval(base, cur []float64, confidence float64) (abs, rel Interval, ok bool) {
	nan := Interval{math.NaN(), math.NaN()}
	if len(base) < 2 || len(cur) < 2 || !(confidence > 0 && confidence < 1) {
		return nan, nan, false
	}
	p := 1 - (1-confidence)/2
	mb, mn := mean(base), mean(cur)
	vb, vn := meanVariance(base), meanVariance(cur)
	half := welchT(p, vn, len(cur), vb, len(base)) * math.Sqrt(vn+vb)
	abs = Interval{mn - mb - half, mn - mb + half}
	switch {
	case mb == 0:
		rel = nan
	case allPositive(base) && allPositive(cur):
		rel = logRelInterval(base, cur, p)
	default:
		an, ab := vn/(mb*mb), vb*mn*mn/(mb*mb*mb*mb)
		h := welchT(p, an, len(cur), ab, len(base)) * math.Sqrt(an+ab)
		r := (mn - mb) / math.Abs(mb)
		rel = Interval{r - h, r + h}
	}
	return abs, rel, true
}
