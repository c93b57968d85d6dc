package aggregate

import (
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPctIndex pins the reference's index rule, min(n−1, round(p·(n−1))) with
// Python's round. Expected values were derived by hand from IEEE float64
// products and half-to-even rounding, then confirmed with CPython 3.11:
//   - 0.5·1 = 0.5 → 0 (tie to even: the lower sample, not the upper);
//   - 0.5·3 = 1.5 → 2; 0.5·5 = 2.5 → 2; 0.5·9 = 4.5 → 4;
//   - 0.95 is stored as 0.949999999999999955591…, so 0.95·10 is
//     9.49999999999999955591… before rounding; the nearest float64 is 9.5
//     (it is 4.4e-16 away, under half the 1.8e-15 spacing), which ties to 10;
//   - 0.95·20 likewise rounds to 19.0 exactly → 19;
//   - 0.95·7 = 6.6499999999999995 → 7; 0.9·5: 0.9 is 0.900000000000000022…,
//     the product rounds to 4.5 → 4 (even);
//   - 0.99·50 rounds to 49.5 → 50 (even), then min(n−1=50) keeps 50.
func TestPctIndex(t *testing.T) {
	cases := []struct {
		p    float64
		n    int
		want int
	}{
		{0.5, 1, 0},
		{0.95, 1, 0},
		{0.5, 2, 0},
		{0.95, 2, 1},
		{0.5, 3, 1},
		{0.5, 4, 2},
		{0.5, 6, 2},
		{0.5, 10, 4},
		{0.95, 3, 2},
		{0.95, 8, 7},
		{0.95, 11, 10},
		{0.95, 21, 19},
		{0.9, 5, 4},
		{0.9, 6, 4},
		{0.99, 51, 50},
		{0.99, 101, 99},
		{0.1, 16, 2},
		{1.0, 7, 6},
		{0, 7, 0},
	}
	for _, c := range cases {
		if got := pctIndex(c.p, c.n); got != c.want {
			t.Errorf("pctIndex(%v, %d) = %d, want %d", c.p, c.n, got, c.want)
		}
	}
	if got := pctIndex(0.5, 0); got != 0 {
		t.Errorf("pctIndex on no samples = %d, want 0", got)
	}
}

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

// TestHistLayout: every value lands in a bucket that contains it, buckets are
// contiguous, and a bucket is never wider than 1/1024 of its lower bound.
func TestHistLayout(t *testing.T) {
	prevLow, prevWidth := uint64(0), uint64(0)
	for i := 0; i < histLen; i++ {
		low, width := histBucket(i)
		if i > 0 && low != prevLow+prevWidth {
			t.Fatalf("bucket %d starts at %d, previous ends at %d", i, low, prevLow+prevWidth)
		}
		if width > 1 && width*histSub > low {
			t.Fatalf("bucket %d [%d, +%d) wider than 1/1024 of its bound", i, low, width)
		}
		if histIndex(low) != i || histIndex(low+width-1) != i {
			t.Fatalf("bucket %d [%d, +%d) does not map back to itself", i, low, width)
		}
		prevLow, prevWidth = low, width
	}
	if histIndex(histMaxUs) != histLen-1 {
		t.Fatalf("max value maps to %d, want last bucket %d", histIndex(histMaxUs), histLen-1)
	}
	for _, ms := range []float64{-1, math.NaN(), math.Inf(1), 1e12} {
		h := newHist()
		h.record(ms) // must not panic
		if h.total != 1 {
			t.Errorf("record(%v) not counted", ms)
		}
	}
}

// TestHistQuantile: with the same rule, the histogram's estimate is within
// the bucket resolution (0.05% + 1 µs) of the exact sample.
func TestHistQuantile(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	vals := make([]float64, 5000)
	h := newHist()
	for i := range vals {
		vals[i] = math.Exp(r.Float64()*12) / 10 // 0.1 ms .. 16 s, log-uniform
		h.record(vals[i])
	}
	slices.Sort(vals)
	for _, p := range []float64{0, 0.5, 0.9, 0.95, 0.99, 1} {
		exact := vals[pctIndex(p, len(vals))]
		got, ok := h.quantile(p)
		if !ok {
			t.Fatal("no quantile")
		}
		if tol := exact*0.0005 + 0.001; math.Abs(got-exact) > tol {
			t.Errorf("p%v: hist %v, exact %v (tolerance %v)", p*100, got, exact, tol)
		}
	}
	if _, ok := newHist().quantile(0.5); ok {
		t.Error("empty histogram gave a quantile")
	}
}

// TestHistChart: every sample is in exactly one chart bucket, the one whose
// range holds it, and the empty ends are trimmed.
func TestHistChart(t *testing.T) {
	h := newHist()
	vals := []float64{0.15, 0.9, 1, 1.5, 7, 7, 30, 1200}
	for _, v := range vals {
		h.record(v)
	}
	got := h.chart()
	want := map[float64]int64{0.2: 1, 1: 2, 2: 1, 10: 2, 50: 1, 2000: 1}
	var total int64
	for i, b := range got {
		if i > 0 && b.UpperMs <= got[i-1].UpperMs {
			t.Fatalf("bounds not ascending: %v", got)
		}
		if b.Count != want[b.UpperMs] {
			t.Errorf("bucket le %v has %d, want %d", b.UpperMs, b.Count, want[b.UpperMs])
		}
		total += b.Count
	}
	if total != int64(len(vals)) {
		t.Errorf("chart holds %d samples, want %d", total, len(vals))
	}
	if got[0].UpperMs != 0.2 || got[len(got)-1].UpperMs != 2000 {
		t.Errorf("chart not trimmed to the data: %v", got)
	}
	if len(chartBounds) > 40 {
		t.Errorf("%d chart buckets, want a few dozen", len(chartBounds))
	}
	if newHist().chart() != nil {
		t.Error("empty histogram gave a chart")
	}
}
