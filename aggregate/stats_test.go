package aggregate

import (
	"math"
	"math/big"
	"slices"
	"testing"

	"github.com/runnerbench/runner/internal/hist"
	"github.com/runnerbench/runner/result"
)

// TestPctRounding: the chosen sample is rounded to 2 dp the way Python's
// round() does: on the exact binary value, ties to even. 0.125 and 0.375 are
// exact in binary (ties → 0.12 and 0.38); 2.675 is stored just below
// (2.67499999999999982236431605997495353221893310546875) → 2.67.
func TestPctRounding(t *testing.T) {
	cases := []struct{ v, want float64 }{
		{0.125, 0.12},
		{0.375, 0.38},
		{2.675, 2.67},
		{1.005, 1.0}, // 1.00499999999999989…
		{12.345678, 12.35},
	}
	for _, c := range cases {
		got, ok := pct([]float64{c.v}, 0.5)
		if !ok || got != c.want {
			t.Errorf("pct([%v]) = %v, %v; want %v", c.v, got, ok, c.want)
		}
	}
	if _, ok := pct(nil, 0.5); ok {
		t.Error("pct(nil) reported a value")
	}
}

// TestExactMean: statistics.mean sums exactly and rounds once. These sets were
// found where a plain float sum lands on the other side of a 2 dp tie:
// CPython's statistics.mean([11.119, 21.659, 61.437]) is 31.404999999999998
// (→ 31.4) while sum()/3 is 31.405 (→ 31.41).
func TestExactMean(t *testing.T) {
	cases := []struct {
		vals []float64
		want float64
	}{
		{[]float64{11.119, 21.659, 61.437}, 31.404999999999998},
		{[]float64{6.734, 27.791, 45.2}, 26.575000000000003},
		{[]float64{75.547, 11.753, 92.407, 19.245, 73.073}, 54.405},
		{[]float64{2.675, 2.675, 2.675}, 2.675},
		{[]float64{10, 20, 30, 40}, 25},
		{[]float64{1e-300, 1e300, -1e300}, 1e-300 / 3},
	}
	for _, c := range cases {
		if got := exactMean(c.vals); got != c.want {
			t.Errorf("exactMean(%v) = %v, want %v", c.vals, got, c.want)
		}
	}
}

// TestSampleStdev: statistics.stdev([3, 5, 7, 10]) = sqrt(26.75/3) =
// 2.9860788111948193 (CPython); identical samples give 0.
func TestSampleStdev(t *testing.T) {
	stdev := func(xs ...int64) (float64, bool) {
		var sum int64
		sq := new(big.Int)
		for _, x := range xs {
			sum += x
			sq.Add(sq, big.NewInt(x*x))
		}
		return sampleStdev(int64(len(xs)), sum, sq)
	}
	if got, ok := stdev(3, 5, 7, 10); !ok || got != 2.9860788111948193 {
		t.Errorf("stdev(3,5,7,10) = %v, %v", got, ok)
	}
	if got, ok := stdev(7, 7, 7); !ok || got != 0 {
		t.Errorf("stdev(7,7,7) = %v, %v", got, ok)
	}
	if _, ok := stdev(7); ok {
		t.Error("stdev of one sample reported a value")
	}
	// sqrt(2)/2·… : stdev(1, 2) = sqrt(0.5) = 0.7071067811865476.
	if got, _ := stdev(1, 2); got != math.Sqrt(0.5) {
		t.Errorf("stdev(1,2) = %v, want %v", got, math.Sqrt(0.5))
	}
}

// TestChart: every sample is in exactly one bar, the first whose bound is at
// or above it; bars span the data on a log scale with enough bars to show a
// shape, a tight spread too; sub-millisecond gaps beside a stall of seconds
// get bars of their own, not one linear bar of 50 ms; anything below 0.1 ms
// (a 0 µs gap included) is in the first bar.
func TestChart(t *testing.T) {
	for _, c := range []struct {
		name string
		vals []float64
		min  int
	}{
		{"tight", []float64{95.1, 96, 97.5, 98, 99, 100, 101.2, 103, 104.9}, 3},
		{"wide", []float64{0.15, 0.9, 1, 1.5, 7, 7, 30, 1200}, 20},
		{"one value", []float64{42, 42, 42}, 1},
		{"llama-server ITL", []float64{0, 0.003, 0.55, 0.6, 0.67, 0.67, 0.7, 0.72, 0.8, 1.1, 2.5, 1100}, 20},
		{"minutes", []float64{150, 900, 4000, 65_000, 180_000}, 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := hist.New()
			for _, v := range c.vals {
				h.RecordMs(v)
			}
			got := chart(h)
			var total int64
			for i, b := range got {
				if i > 0 && b.UpperMs <= got[i-1].UpperMs {
					t.Fatalf("bounds not ascending: %v", got)
				}
				if i > 1 {
					// Log-spaced: each bar's bound is about the same ratio
					// above the last (within the bounds' rounding).
					r0, r1 := got[i-1].UpperMs/got[i-2].UpperMs, b.UpperMs/got[i-1].UpperMs
					if r1/r0 > 1.25 || r0/r1 > 1.25 {
						t.Fatalf("bounds not log-spaced at %d: %v", i, got)
					}
				}
				total += b.Count
			}
			if total != int64(len(c.vals)) {
				t.Errorf("chart holds %d samples, want %d", total, len(c.vals))
			}
			if len(got) < c.min || len(got) > 3*chartBuckets {
				t.Errorf("%d bars, want between %d and %d: %v", len(got), c.min, 3*chartBuckets, got)
			}
			lo, hi := max(slices.Min(c.vals), chartFloorMs), slices.Max(c.vals)
			if got[len(got)-1].UpperMs < hi*0.9995 || got[0].UpperMs < lo*0.9995 {
				t.Errorf("bars %v do not span [%v, %v]", got, lo, hi)
			}
			if got[0].UpperMs < chartFloorMs {
				t.Errorf("first bound %v below the floor %v", got[0].UpperMs, chartFloorMs)
			}
			// Each value is counted in the first bar at or above it, give or
			// take the histogram's resolution (±0.05%).
			for _, v := range c.vals {
				v = max(v, chartFloorMs)
				i := slices.IndexFunc(got, func(b result.Bucket) bool { return b.UpperMs >= v*0.9995 })
				j := slices.IndexFunc(got, func(b result.Bucket) bool { return b.UpperMs >= v*1.0005 })
				if i < 0 || (got[i].Count == 0 && (j < 0 || got[j].Count == 0)) {
					t.Errorf("%v not in bar %d or %d of %v", v, i, j, got)
				}
			}
		})
	}
	// The case: gaps around 0.67 ms and one of a second. No bar
	// may hold most of the samples but the one they fall in.
	h := hist.New()
	for range 1000 {
		h.RecordMs(0.67)
	}
	h.RecordMs(0)
	h.RecordMs(1000)
	bars := chart(h)
	if bars[0].UpperMs != chartFloorMs || bars[0].Count != 1 {
		t.Errorf("first bar %+v, want the 0 µs gap alone at or below %v ms", bars[0], chartFloorMs)
	}
	for _, b := range bars {
		if b.Count == 1000 && (b.UpperMs < 0.67 || b.UpperMs > 0.8) {
			t.Errorf("the 0.67 ms gaps are in the bar up to %v ms", b.UpperMs)
		}
	}
	if chart(hist.New()) != nil {
		t.Error("empty histogram gave a chart")
	}
}
