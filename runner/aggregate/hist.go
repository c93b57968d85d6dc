package aggregate

import (
	"math"
	"math/bits"

	"github.com/runnerbench/runner/result"
)

// hist is a log-linear histogram of durations in whole microseconds, the same
// layout HdrHistogram uses with 3 significant digits: values below 2048µs get
// a bucket each (exact), and every power of two above is split into 1024
// equal buckets, so a bucket's width is at most 1/1024 of its lower bound
// (±0.05% when reported at its midpoint). Values are clamped to [0, 1h].
//
// It is written here rather than taken from hdrhistogram-go because the
// percentile rule must be the reference's (index round_half_even(p·(n−1)) into
// the sorted samples), which needs the cumulative counts, and because a
// histogram only lives at the level (one per metric), never per worker, so
// its 184 KiB do not multiply by the concurrency.
type hist struct {
	counts []uint64
	total  uint64
}

const (
	histSubBits = 10
	histSub     = 1 << histSubBits // buckets per power of two
	histMaxUs   = 3_600_000_000    // 1h in µs
)

// histLen is the bucket count that covers [0, histMaxUs].
var histLen = histIndex(histMaxUs) + 1

func newHist() *hist { return &hist{counts: make([]uint64, histLen)} }

// histIndex maps a value in µs to its bucket: below 2·histSub the value itself;
// above, shift = (position of the top bit) − histSubBits, index = shift·histSub +
// v>>shift, which runs contiguously over the buckets of each power of two.
func histIndex(us uint64) int {
	shift := bits.Len64(us) - 1 - histSubBits
	if shift < 0 {
		shift = 0
	}
	return shift<<histSubBits + int(us>>uint(shift))
}

// histBucket returns the lowest value of bucket i and its width, both in µs.
func histBucket(i int) (low, width uint64) {
	if i < 2*histSub {
		return uint64(i), 1
	}
	shift := i>>histSubBits - 1
	mant := uint64(i - shift<<histSubBits)
	return mant << uint(shift), 1 << uint(shift)
}

// toUs converts milliseconds to whole microseconds, clamped to the
// histogram's range; NaN counts as 0 so bad input cannot panic an index.
func toUs(ms float64) uint64 {
	us := ms*1000 + 0.5
	switch {
	case !(us >= 0): // negative or NaN
		return 0
	case us >= histMaxUs:
		return histMaxUs
	}
	return uint64(us)
}

// record adds one value in ms.
func (h *hist) record(ms float64) {
	h.counts[histIndex(toUs(ms))]++
	h.total++
}

// merge adds o's counts into h.
func (h *hist) merge(o *hist) {
	if o == nil {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.total += o.total
}

// value returns the bucket's representative value in ms: the exact value for
// the unit-wide buckets, the midpoint for the wider ones.
func histValue(i int) float64 {
	low, width := histBucket(i)
	if width == 1 {
		return float64(low) / 1000
	}
	return (float64(low) + float64(width-1)/2) / 1000
}

// quantile applies the reference's percentile rule to the histogram: the
// sample at sorted index min(n−1, round_half_even(p·(n−1))), estimated by the
// representative value of the bucket that holds it. ok is false when empty.
func (h *hist) quantile(p float64) (ms float64, ok bool) {
	if h == nil || h.total == 0 {
		return 0, false
	}
	k := pctIndex(p, int(h.total))
	var cum uint64
	for i, c := range h.counts {
		cum += c
		if cum > uint64(k) {
			return histValue(i), true
		}
	}
	return histValue(len(h.counts) - 1), true // unreachable: cum reaches total
}

// chartBounds are the upper bounds (ms) of the chart buckets: a 1-2-5 series
// from 0.1 ms to 1 h, about three buckets a decade, so a chart of a level
// has a few dozen bars at most.
var chartBounds = func() []float64 {
	var b []float64
	for dec := 0.1; dec < 3.6e6; dec *= 10 {
		for _, m := range []float64{1, 2, 5} {
			if v := result.Round(dec*m, 1); v < 3.6e6 {
				b = append(b, v)
			}
		}
	}
	return append(b, 3.6e6)
}()

// chart folds the histogram into chartBounds, trimming empty buckets at both
// ends so the chart spans the data. A sample goes into the first chart bucket
// whose bound is >= its histogram bucket's representative value.
func (h *hist) chart() []result.Bucket {
	if h == nil || h.total == 0 {
		return nil
	}
	counts := make([]int64, len(chartBounds))
	j := 0
	for i, c := range h.counts {
		if c == 0 {
			continue
		}
		v := histValue(i)
		for j < len(chartBounds)-1 && v > chartBounds[j] {
			j++
		}
		counts[j] += int64(min(c, math.MaxInt64))
	}
	lo, hi := 0, len(counts)-1
	for counts[lo] == 0 {
		lo++
	}
	for counts[hi] == 0 {
		hi--
	}
	out := make([]result.Bucket, 0, hi-lo+1)
	for i := lo; i <= hi; i++ {
		out = append(out, result.Bucket{UpperMs: chartBounds[i], Count: counts[i]})
	}
	return out
}
