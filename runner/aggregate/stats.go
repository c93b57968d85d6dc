package aggregate

import (
	"math"
	"math/big"
	"slices"

	"github.com/runnerbench/runner/result"
)

// pctIndex is the reference's percentile index into n sorted samples:
// min(n−1, round(p·(n−1))) with Python's round, which rounds the float64
// product half to even. The product is the same IEEE multiplication Python
// does, so a product that lands on .5 exactly (0.5·1, 0.5·3, 0.95·10 = 9.5
// after rounding of the binary 0.95) goes to the even neighbour.
func pctIndex(p float64, n int) int {
	if n <= 0 {
		return 0
	}
	idx := int(math.RoundToEven(float64(p * float64(n-1))))
	return max(0, min(n-1, idx))
}

// pct is the reference's pct(): sort, take the sample at pctIndex, round to
// 2 dp. It sorts vals in place. ok is false when there are no values.
func pct(sorted []float64, p float64) (float64, bool) {
	if len(sorted) == 0 {
		return 0, false
	}
	return result.Round(sorted[pctIndex(p, len(sorted))], 2), true
}

// exactMean is Python's statistics.mean of floats: the exact sum of the
// values divided by n, rounded once to the nearest float64. A plain float
// sum can be an ulp off, which moves a 2 dp rounding when the mean sits near
// a tie (CPython's mean of 11.119, 21.659 and 61.437 rounds to 31.4 where
// sum()/3 gives 31.41). The sum is kept exactly as Shewchuk's non-overlapping
// partials (the algorithm behind Python's math.fsum), which costs a few ns a
// value and no allocation; only the final few partials go through big.Rat.
func exactMean(vals []float64) float64 {
	if len(vals) == 0 {
		return math.NaN()
	}
	var buf [8]float64
	partials := buf[:0]
	for _, x := range vals {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return naiveMean(vals)
		}
		i := 0
		for _, y := range partials {
			if math.Abs(x) < math.Abs(y) {
				x, y = y, x
			}
			hi := x + y
			lo := y - (hi - x)
			if lo != 0 {
				partials[i] = lo
				i++
			}
			x = hi
		}
		partials = append(partials[:i], x)
	}
	sum := new(big.Rat)
	var r big.Rat
	for _, p := range partials {
		if math.IsInf(p, 0) { // the running sum overflowed float64
			return naiveMean(vals)
		}
		sum.Add(sum, r.SetFloat64(p))
	}
	sum.Quo(sum, r.SetInt64(int64(len(vals))))
	f, _ := sum.Float64()
	return f
}

// naiveMean is the fallback for non-finite input (which propagates anyway).
func naiveMean(vals []float64) float64 {
	var s float64
	for _, v := range vals {
		s += v
	}
	return s / float64(len(vals))
}

// sampleStdev is Python's statistics.stdev (n−1 denominator) of integer
// samples given their count, sum and sum of squares, computed exactly:
// variance = (n·Σx² − (Σx)²) / (n·(n−1)), then a correctly rounded square
// root, as CPython 3.12+ does. ok is false for n < 2.
func sampleStdev(n int64, sum int64, sumSq *big.Int) (float64, bool) {
	if n < 2 {
		return 0, false
	}
	bn := big.NewInt(n)
	num := new(big.Int).Mul(bn, sumSq)
	s := big.NewInt(sum)
	num.Sub(num, s.Mul(s, s))
	if num.Sign() <= 0 {
		return 0, true
	}
	den := new(big.Int).Mul(bn, big.NewInt(n-1))
	const prec = 256
	v := new(big.Float).SetPrec(prec).SetInt(num)
	v.Quo(v, new(big.Float).SetPrec(prec).SetInt(den))
	v.Sqrt(v)
	f, _ := v.Float64()
	return f, true
}

// series is one per-request metric of a shard or a level: exact samples (up
// to the level's bound), and a running count, sum and max over every sample.
// Samples past the bound are not kept here: the shard batches them into the
// level's histogram (see Shard.spill), so a shard's memory stays flat.
type series struct {
	vals []float64
	n    int64
	sum  float64 // Neumaier-compensated; the mean once samples have spilled
	comp float64
	max  float64
}

// maxSample bounds a believable sample (1e12 ms is 31 years; 1e12 tokens/s
// is no stream). Beyond it a value is a bug upstream, and a few of them
// would overflow a sum into +Inf, which JSON cannot encode.
const maxSample = 1e12

// valid reports whether v is a sample worth counting.
func valid(v float64) bool { return v >= -maxSample && v <= maxSample } // false for NaN

// add counts v, keeping it when keep is set. Invalid values (which no clock
// produces) are dropped so they cannot poison a mean or a sort.
func (s *series) add(v float64, keep bool) bool {
	if !valid(v) {
		return false
	}
	if keep {
		s.vals = append(s.vals, v)
	}
	if s.n == 0 || v > s.max {
		s.max = v
	}
	s.n++
	s.sum, s.comp = neumaier(s.sum, s.comp, v)
	return true
}

// neumaier adds v to the compensated sum (sum, comp).
func neumaier(sum, comp, v float64) (float64, float64) {
	t := sum + v
	if math.Abs(sum) >= math.Abs(v) {
		comp += (sum - t) + v
	} else {
		comp += (v - t) + sum
	}
	return t, comp
}

// merge appends o into s.
func (s *series) merge(o *series) {
	s.vals = append(s.vals, o.vals...)
	if o.n > 0 && (s.n == 0 || o.max > s.max) {
		s.max = o.max
	}
	s.n += o.n
	s.sum, s.comp = neumaier(s.sum, s.comp, o.sum)
	s.comp += o.comp
}

// summary is what a finished series reports.
type summary struct {
	n      int64
	exact  bool // percentiles come from exact samples
	sorted []float64
	h      *hist // every sample (exact ones included); for charts and spilled percentiles
	mean   float64
	max    float64
}

// finish sorts the exact samples and folds everything into a summary; spill
// holds the samples past the exact bound (nil if none). With chart set, or
// when samples spilled, it also builds the full histogram. meanOnly series
// are neither sorted nor charted.
func (s *series) finish(chart, meanOnly bool, spill *hist) summary {
	out := summary{n: s.n, exact: int64(len(s.vals)) == s.n, max: s.max}
	if s.n == 0 {
		return out
	}
	if out.exact {
		out.mean = exactMean(s.vals)
	} else {
		out.mean = (s.sum + s.comp) / float64(s.n)
	}
	if meanOnly {
		return out
	}
	slices.Sort(s.vals)
	out.sorted = s.vals
	if chart || !out.exact {
		h := newHist()
		for _, v := range s.vals {
			h.record(v)
		}
		h.merge(spill)
		out.h = h
	}
	return out
}

// quantile applies the percentile rule, exactly when it can.
func (s *summary) quantile(p float64) (float64, bool) {
	if s.n == 0 {
		return 0, false
	}
	if s.exact {
		return pct(s.sorted, p)
	}
	v, ok := s.h.quantile(p)
	return result.Round(v, 2), ok
}
