package aggregate

import (
	"math"

	"github.com/runnerbench/runner/internal/hist"
	"github.com/runnerbench/runner/result"
)

// chartBuckets is about how many bars a level's distribution is folded into:
// enough to show its shape (a tail, two modes), few enough to read.
const chartBuckets = 24

// chartFloorMs is the lowest bar's bound: every smaller sample (a 0 µs gap
// between two tokens of one chunk, included) is counted in the first bar.
// A bar below it would tell apart what the client cannot time.
const chartFloorMs = 0.1

// chartDensities are the bars a decade a chart may have, coarsest first.
var chartDensities = []int{3, 6, 12, 24, 48, 96, 192}

// chart folds a histogram into bars on a log scale, whatever the data's
// spread: bounds at 10^(k/m) ms (rounded to 2 significant digits for up to
// 24 bars a decade, 3 for more), m the density that gives the data's
// span nearest chartBuckets bars, from the first bound at or above the
// smallest sample (at least chartFloorMs) to the first at or above the
// largest. A 0.67 ms ITL beside a 2 s stall is then as readable as a
// 300 ms TTFT: a linear scale would put the first in the first bar of 50 ms.
// A sample goes into the first bar whose bound is at or above its histogram
// bucket's representative value. The percentiles never come from these bars.
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

// chartBounds returns ascending log-spaced bar bounds from the first at or
// above lo (and chartFloorMs) to the first at or above hi.
func chartBounds(lo, hi float64) []float64 {
	lo = max(lo, chartFloorMs)
	hi = max(hi, lo)
	decades := math.Log10(hi / lo)
	m := chartDensities[len(chartDensities)-1]
	if decades > 0 {
		best := math.Inf(1)
		for _, d := range chartDensities {
			if off := math.Abs(math.Log(float64(d) * decades / chartBuckets)); off < best {
				m, best = d, off
			}
		}
	}
	digits := 2
	if m > 24 {
		digits = 3
	}
	var out []float64
	for k := math.Floor(math.Log10(lo) * float64(m)); ; k++ {
		b := roundSig(math.Pow(10, k/float64(m)), digits)
		if b < lo && len(out) == 0 || len(out) > 0 && b <= out[len(out)-1] {
			continue
		}
		out = append(out, b)
		if b >= hi {
			return out
		}
	}
}

// roundSig rounds x to n significant digits.
func roundSig(x float64, n int) float64 {
	if x == 0 {
		return 0
	}
	p := math.Pow(10, float64(n)-math.Ceil(math.Log10(math.Abs(x))))
	return math.Round(x*p) / p
}
