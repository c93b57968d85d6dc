package aggregate

import (
	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/runnerbench/runner/result"
)

// hist is a histogram of durations in whole microseconds, clamped to [0, 1h]:
// an HdrHistogram with 3 significant digits. With those settings values below
// 2048µs get a bucket each (exact), and every power of two above is split into
// 1024 equal buckets, so a bucket's width is at most 1/1024 of its lower bound
// (±0.05% when reported at its midpoint). It holds about 184 KiB of counts,
// which is why a histogram only lives at the level (one per metric), never per
// worker: shards batch their samples and fold them in under the level's lock.
//
// The library's own percentile (ValueAtPercentile) is not used: it takes the
// round_half_up(p·n)-th sample and reports the top of its bucket, where the
// reference's rule is the sample at sorted index round_half_even(p·(n−1))
// (the p50 of 1, 2, 3, 4 is 2 by the library's rule, 3 by the reference's).
// quantile walks the cumulative counts of the histogram's Distribution to
// apply the reference's rule, and reports the bucket's midpoint.
type hist struct {
	h *hdrhistogram.Histogram
	// bars caches the non-empty buckets of h, in ascending order, as of the
	// total count barsN. Counts only grow, so an unchanged total means
	// unchanged counts; Finish reads a histogram several times (percentiles
	// and chart) and builds the list once.
	bars  []hdrhistogram.Bar
	barsN int64
}

const (
	histMinUs  = 1             // lowest discernible value: 1µs
	histMaxUs  = 3_600_000_000 // 1h in µs
	histDigits = 3             // significant digits: buckets ≤ 1/1024 of their value
)

func newHist() *hist { return &hist{h: hdrhistogram.New(histMinUs, histMaxUs, histDigits)} }

// toUs converts milliseconds to whole microseconds, clamped to the
// histogram's range (NaN counts as 0), so RecordValue never refuses a value.
func toUs(ms float64) int64 {
	us := ms*1000 + 0.5
	if !(us >= 0) { // negative or NaN
		us = 0
	}
	return int64(min(us, histMaxUs))
}

// record adds one value in ms. RecordValue cannot fail on a clamped value (it
// only refuses negative or too large ones).
func (h *hist) record(ms float64) { _ = h.h.RecordValue(toUs(ms)) }

// total is the number of values recorded.
func (h *hist) total() int64 { return h.h.TotalCount() }

// merge adds o's counts into h. Both have the same range, so nothing is
// dropped.
func (h *hist) merge(o *hist) {
	if o == nil {
		return
	}
	h.h.Merge(o.h)
}

// nonEmpty returns the non-empty buckets in ascending order.
func (h *hist) nonEmpty() []hdrhistogram.Bar {
	if n := h.h.TotalCount(); h.bars == nil || h.barsN != n {
		all := h.h.Distribution()
		bars := all[:0]
		for _, b := range all {
			if b.Count != 0 {
				bars = append(bars, b)
			}
		}
		// Copy out so the cache does not pin the full list, empty buckets
		// included (up to every bucket of the histogram).
		h.bars, h.barsN = append(make([]hdrhistogram.Bar, 0, len(bars)), bars...), n
	}
	return h.bars
}

// barValue returns the bucket's representative value in ms: the exact value
// for the unit-wide buckets, the midpoint for the wider ones.
func barValue(b hdrhistogram.Bar) float64 {
	return float64(b.From+b.To) / 2 / 1000
}

// quantile applies the reference's percentile rule to the histogram: the
// sample at sorted index min(n−1, round_half_even(p·(n−1))), estimated by the
// representative value of the bucket that holds it. ok is false when empty.
func (h *hist) quantile(p float64) (ms float64, ok bool) {
	if h == nil || h.total() == 0 {
		return 0, false
	}
	k := int64(pctIndex(p, int(h.total())))
	bars := h.nonEmpty()
	var cum int64
	for _, b := range bars {
		cum += b.Count
		if cum > k {
			return barValue(b), true
		}
	}
	return barValue(bars[len(bars)-1]), true // unreachable: cum reaches total
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
	if h == nil || h.total() == 0 {
		return nil
	}
	counts := make([]int64, len(chartBounds))
	j := 0
	for _, b := range h.nonEmpty() {
		v := barValue(b)
		for j < len(chartBounds)-1 && v > chartBounds[j] {
			j++
		}
		counts[j] += b.Count
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
