package aggregate

import (
	"math"
	"math/big"

	"github.com/runnerbench/runner/internal/hist"
	"github.com/runnerbench/runner/result"
)

// pct is the reference's pct(): the sample at the reference's index into
// sorted samples, rounded to 2 dp. ok is false when there are no values.
func pct(sorted []float64, p float64) (float64, bool) {
	if len(sorted) == 0 {
		return 0, false
	}
	return result.Round(sorted[hist.Index(p, len(sorted))], 2), true
}

// exactSum is the exact sum of float64 values, kept as Shewchuk's
// non-overlapping partials (the algorithm behind Python's math.fsum): a few
// ns a value, no allocation once its few partials exist, and exact, so the
// mean it gives is the one Python's statistics.mean computes (the exact sum
// divided by n, rounded once) whatever order the values came in. A plain
// float sum can be an ulp off, which moves a 2 dp rounding when the mean sits
// near a tie (CPython's mean of 11.119, 21.659 and 61.437 rounds to 31.4
// where sum()/3 gives 31.41), and would make a recomputed report differ from
// the live one. Values must be finite (series.add drops the rest).
type exactSum struct{ partials []float64 }

func (s *exactSum) add(x float64) {
	i := 0
	for _, y := range s.partials {
		if math.Abs(x) < math.Abs(y) {
			x, y = y, x
		}
		hi := x + y
		lo := y - (hi - x)
		if lo != 0 {
			s.partials[i] = lo
			i++
		}
		x = hi
	}
	s.partials = append(s.partials[:i], x)
}

// mean is the exact sum over n, rounded once to the nearest float64.
func (s *exactSum) mean(n int64) float64 {
	if n == 0 {
		return math.NaN()
	}
	sum := new(big.Rat)
	var r big.Rat
	for _, p := range s.partials {
		sum.Add(sum, r.SetFloat64(p))
	}
	sum.Quo(sum, r.SetInt64(n))
	f, _ := sum.Float64()
	return f
}

// exactMean is Python's statistics.mean of vals.
func exactMean(vals []float64) float64 {
	var s exactSum
	for _, v := range vals {
		s.add(v)
	}
	return s.mean(int64(len(vals)))
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
