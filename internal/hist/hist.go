// Package hist is the latency histogram every part of Runner shares: an
// HdrHistogram of whole microseconds with 3 significant digits, the
// reference generator's percentile rule applied to it, and an exact JSON form
// so histograms can be written beside the request records and merged across
// shards bucket for bucket.
//
// With those settings values below 2048µs get a bucket each (exact), and
// every power of two above is split into 1024 equal buckets, so a bucket's
// width is at most 1/1024 of its lower bound (±0.05% when reported at its
// midpoint). Values are clamped to [0, 1h]. A histogram holds about 184 KiB
// of counts, so keep one per metric per level, not one per worker.
//
// The library's own percentile (ValueAtPercentile) is not used: it takes the
// round_half_up(p·n)-th sample and reports the top of its bucket, where the
// reference's rule is the sample at sorted index round_half_even(p·(n−1))
// (the p50 of 1, 2, 3, 4 is 2 by the library's rule, 3 by the reference's).
package hist

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram is a histogram of durations. The zero value is not usable; call New.
type Histogram struct {
	h *hdrhistogram.Histogram
	// bars caches the non-empty buckets, in ascending order, as of the total
	// count barsN. Counts only grow, so an unchanged total means unchanged
	// counts; a level's summary reads a histogram several times.
	bars  []Bar
	barsN int64
}

// Bar is one non-empty bucket: Count values in [FromUs, ToUs].
type Bar struct {
	FromUs, ToUs int64
	Count        int64
}

// Ms is the bucket's representative value in ms: the exact value for the
// unit-wide buckets, the midpoint for the wider ones.
func (b Bar) Ms() float64 { return float64(b.FromUs+b.ToUs) / 2 / 1000 }

const (
	minUs  = 1             // lowest discernible value: 1µs
	MaxUs  = 3_600_000_000 // 1h in µs: larger values are clamped to it
	digits = 3             // significant digits: buckets ≤ 1/1024 of their value
)

// New returns an empty histogram.
func New() *Histogram { return &Histogram{h: hdrhistogram.New(minUs, MaxUs, digits)} }

// UsOfMs converts milliseconds to whole microseconds (half up), clamped to
// the histogram's range (NaN counts as 0).
func UsOfMs(ms float64) int64 {
	us := ms*1000 + 0.5
	if !(us >= 0) { // negative or NaN
		us = 0
	}
	return int64(min(us, MaxUs))
}

// RecordMs adds one value given in ms.
func (h *Histogram) RecordMs(ms float64) { h.RecordUs(UsOfMs(ms)) }

// RecordNs adds one value given in ns (rounded half up to whole µs).
func (h *Histogram) RecordNs(ns int64) { h.RecordUs((max(ns, 0) + 500) / 1000) }

// RecordUs adds one value given in whole µs, clamped to [0, 1h]. It cannot
// fail: the library refuses only values outside its range.
func (h *Histogram) RecordUs(us int64) { _ = h.h.RecordValue(max(0, min(us, MaxUs))) }

// Count is the number of values recorded.
func (h *Histogram) Count() int64 {
	if h == nil {
		return 0
	}
	return h.h.TotalCount()
}

// Merge adds o's counts into h (o may be nil). Both have the same range, so
// nothing is dropped.
func (h *Histogram) Merge(o *Histogram) {
	if o != nil {
		h.h.Merge(o.h)
	}
}

// Reset empties h for reuse, keeping its memory.
func (h *Histogram) Reset() {
	h.h.Reset()
	h.bars, h.barsN = nil, 0
}

// Bars returns the non-empty buckets in ascending order. The slice is shared:
// do not modify it.
func (h *Histogram) Bars() []Bar {
	if h == nil {
		return nil
	}
	if n := h.h.TotalCount(); h.bars == nil || h.barsN != n {
		var bars []Bar
		for _, b := range h.h.Distribution() {
			if b.Count != 0 {
				bars = append(bars, Bar{FromUs: b.From, ToUs: b.To, Count: b.Count})
			}
		}
		h.bars, h.barsN = bars, n
	}
	return h.bars
}

// Index is the reference's percentile index into n sorted samples:
// min(n−1, round(p·(n−1))) with Python's round, which rounds the float64
// product half to even. The product is the same IEEE multiplication Python
// does, so a product that lands on .5 exactly (0.5·1, 0.5·3, 0.95·10 = 9.5
// after rounding of the binary 0.95) goes to the even neighbour.
func Index(p float64, n int) int {
	if n <= 0 {
		return 0
	}
	idx := int(math.RoundToEven(float64(p * float64(n-1))))
	return max(0, min(n-1, idx))
}

// MinSamples is the low-confidence rule: how many samples the q-quantile
// needs to mean much. A p50 needs 5, a p90 10, a p95 20 and anything further
// in the tail 100: below these counts the chosen sample is one of the few
// largest, so the number says little about the tail it names.
func MinSamples(q float64) int {
	switch {
	case q <= 0.5:
		return 5
	case q <= 0.9:
		return 10
	case q <= 0.95:
		return 20
	}
	return 100
}

// Quantile applies the reference's percentile rule to the histogram: the
// sample at sorted index Index(p, n), estimated by the representative value
// of the bucket that holds it, in ms. ok is false when empty.
func (h *Histogram) Quantile(p float64) (ms float64, ok bool) {
	n := h.Count()
	if n == 0 {
		return 0, false
	}
	k := int64(Index(p, int(n)))
	bars := h.Bars()
	var cum int64
	for _, b := range bars {
		cum += b.Count
		if cum > k {
			return b.Ms(), true
		}
	}
	return bars[len(bars)-1].Ms(), true // unreachable: cum reaches n
}

// wire is the JSON form: the non-empty buckets' lower bounds (µs) and counts.
// Recording each lower bound count times rebuilds the same buckets exactly.
type wire struct {
	Us    []int64 `json:"us"`
	Count []int64 `json:"n"`
}

// MarshalJSON writes the non-empty buckets.
func (h *Histogram) MarshalJSON() ([]byte, error) {
	var w wire
	for _, b := range h.Bars() {
		w.Us = append(w.Us, b.FromUs)
		w.Count = append(w.Count, b.Count)
	}
	if w.Us == nil {
		w.Us, w.Count = []int64{}, []int64{}
	}
	return json.Marshal(w)
}

// UnmarshalJSON rebuilds a histogram from its buckets.
func (h *Histogram) UnmarshalJSON(data []byte) error {
	var w wire
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	if len(w.Us) != len(w.Count) {
		return fmt.Errorf("histogram: %d bounds but %d counts", len(w.Us), len(w.Count))
	}
	*h = *New()
	for i, us := range w.Us {
		if us < 0 || us > MaxUs || w.Count[i] < 0 {
			return fmt.Errorf("histogram: bucket %dµs×%d out of range", us, w.Count[i])
		}
		_ = h.h.RecordValues(us, w.Count[i])
	}
	return nil
}
