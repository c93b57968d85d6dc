package aggregate

import (
	"math"

	"github.com/runnerbench/runner/internal/hist"
	"github.com/runnerbench/runner/result"
)

// chartBuckets is about how many bars a level's distribution is folded into:
// enough to show its shape (a tail, two modes), few enough to read.
const chartBuckets = 24

// chart folds a histogram into about chartBuckets bars of round bounds that
// span the data: equal widths when the data spans less than a decade (a
// tight TTFT spread still shows its shape), else a log scale of 12 bounds a
// decade. A sample goes into the first bar whose bound is at or above its
// histogram bucket's representative value.
func chart(h *hist.Histogram) []result.Bucket {
	bars := h.Bars()
	if len(bars) == 0 {
		return nil
	}
	lo, hi := bars[0].Ms(), bars[len(bars)-1].Ms()
	bounds := chartBounds(lo, hi)
	out := make([]result.Bucket, len(bounds))
	j := 0
	for _, b := range bars {
		v := b.Ms()
		for j < len(bounds)-1 && v > bounds[j] {
			j++
		}
		out[j].Count += b.Count
	}
	for i := range out {
		out[i].UpperMs = bounds[i]
	}
	return out
}

// chartBounds returns ascending bar bounds from the first at or above lo to
// the first at or above hi.
func chartBounds(lo, hi float64) []float64 {
	if hi <= lo {
		return []float64{roundSig(hi, 3)}
	}
	var out []float64
	if lo > 0 && hi/lo > 10 {
		k := math.Floor(math.Log10(lo) * 12)
		for {
			b := roundSig(math.Pow(10, k/12), 3)
			k++
			if b < lo && len(out) == 0 {
				continue
			}
			out = append(out, b)
			if b >= hi {
				return out
			}
		}
	}
	step := niceStep((hi - lo) / chartBuckets)
	for b := math.Floor(lo/step) * step; ; b += step {
		b = roundSig(b, 6)
		if b < lo {
			continue
		}
		out = append(out, b)
		if b >= hi {
			return out
		}
	}
}

// niceStep rounds x up to 1, 2 or 5 times a power of ten.
func niceStep(x float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= x {
			return m * p
		}
	}
	return 10 * p
}

// roundSig rounds x to n significant digits.
func roundSig(x float64, n int) float64 {
	if x == 0 {
		return 0
	}
	p := math.Pow(10, float64(n)-math.Ceil(math.Log10(math.Abs(x))))
	return math.Round(x*p) / p
}
