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

// TestHistResolution: the histogram's buckets are contiguous from 0 to 1 h,
// unit-wide (exact) below 2048µs and never wider than 1/1024 of their lower
// bound above, so a value is reported within 0.05% (plus the rounding to
// whole µs); out-of-range and bad input is clamped and counted, not refused.
func TestHistResolution(t *testing.T) {
	full := newHist()
	full.record(0)
	full.record(histMaxUs / 1000)
	prev := int64(-1)
	bars := full.h.Distribution() // every bucket up to the last non-empty one
	for _, b := range bars {
		if b.From != prev+1 {
			t.Fatalf("bucket [%d, %d] does not follow the previous one, ending at %d", b.From, b.To, prev)
		}
		if w := b.To - b.From + 1; w > 1 && (b.From < 2048 || w*1024 > b.From) {
			t.Fatalf("bucket [%d, %d] wider than 1/1024 of its bound", b.From, b.To)
		}
		prev = b.To
	}
	if last := bars[len(bars)-1]; last.To < histMaxUs || last.Count != 1 {
		t.Fatalf("last bucket [%d, %d] holds %d, want 1h in it", last.From, last.To, last.Count)
	}

	r := rand.New(rand.NewPCG(3, 4))
	for i := range 200 {
		us := int64(i) // the exact range, then log-uniform up to 1h
		if i >= 100 {
			us = int64(math.Exp(r.Float64() * math.Log(histMaxUs)))
		}
		h := newHist()
		h.record(float64(us) / 1000)
		bars := h.nonEmpty()
		if len(bars) != 1 || bars[0].Count != 1 || bars[0].From > us || bars[0].To < us {
			t.Fatalf("%dµs recorded as %v", us, bars)
		}
		got, _ := h.quantile(0.5)
		if us < 2048 && got != float64(us)/1000 {
			t.Errorf("%dµs reported as %vms, want exact", us, got)
		}
		if d := math.Abs(got*1000 - float64(us)); d > float64(us)*0.0005 {
			t.Errorf("%dµs reported as %vms, off by %vµs", us, got, d)
		}
	}

	for _, c := range []struct{ ms, want float64 }{
		{-1, 0}, {math.NaN(), 0}, {math.Inf(1), 3.6e6}, {1e12, 3.6e6}, {0.0004, 0}, {0.0005, 0.001},
	} {
		h := newHist()
		h.record(c.ms) // must not panic
		if h.total() != 1 {
			t.Errorf("record(%v) not counted", c.ms)
		}
		if got, _ := h.quantile(1); math.Abs(got-c.want) > c.want*0.0005 {
			t.Errorf("record(%v) reported as %vms, want %vms", c.ms, got, c.want)
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

	// Reading a histogram, then recording or merging more, reads the new
	// counts (the bucket list is cached between reads).
	g := newHist()
	g.record(1)
	if got, _ := g.quantile(1); got != 1 {
		t.Fatalf("max of [1] = %v", got)
	}
	g.record(2)
	if got, _ := g.quantile(1); got != 2 {
		t.Errorf("max of [1 2] = %v, want 2 after a record", got)
	}
	o := newHist()
	o.record(0.5)
	g.merge(o)
	if got, _ := g.quantile(0); got != 0.5 {
		t.Errorf("min of [1 2 0.5] = %v, want 0.5 after a merge", got)
	}

	// The reference's index rule, not HdrHistogram's ValueAtPercentile (the
	// round(p·n)-th sample, half up). Samples below 2.048 ms are held
	// exactly, so the two rules differ by whole samples:
	for _, c := range []struct {
		vals    []float64
		p, want float64
	}{
		{[]float64{0.4, 0.1, 0.3, 0.2}, 0.5, 0.3},                               // index round(1.5) = 2; the library: 2nd sample, 0.2
		{[]float64{0.2, 0.1}, 0.5, 0.1},                                         // index round(0.5) = 0 (to even)
		{[]float64{0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1}, 0.95, 1}, // index round(9.5) = 10; the library: 10th sample, 0.9
		{[]float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8}, 0.25, 0.3},          // index round(1.75) = 2; the library: 2nd sample, 0.2
		{[]float64{0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9}, 0.9, 0.8},   // index round(8.1) = 8
	} {
		h := newHist()
		for _, v := range c.vals {
			h.record(v)
		}
		if got, _ := h.quantile(c.p); got != c.want {
			t.Errorf("p%v of %v = %v, want %v", c.p*100, c.vals, got, c.want)
		}
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
