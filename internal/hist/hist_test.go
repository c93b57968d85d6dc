package hist

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestIndex pins the reference's index rule, min(n−1, round(p·(n−1))) with
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
func TestIndex(t *testing.T) {
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
		if got := Index(c.p, c.n); got != c.want {
			t.Errorf("Index(%v, %d) = %d, want %d", c.p, c.n, got, c.want)
		}
	}
	if got := Index(0.5, 0); got != 0 {
		t.Errorf("Index on no samples = %d, want 0", got)
	}
}

// TestResolution: the histogram's buckets are contiguous from 0 to 1 h,
// unit-wide (exact) below 2048µs and never wider than 1/1024 of their lower
// bound above, so a value is reported within 0.05% (plus the rounding to
// whole µs); out-of-range and bad input is clamped and counted, not refused.
func TestResolution(t *testing.T) {
	full := New()
	full.RecordMs(0)
	full.RecordMs(MaxUs / 1000)
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
	if last := bars[len(bars)-1]; last.To < MaxUs || last.Count != 1 {
		t.Fatalf("last bucket [%d, %d] holds %d, want 1h in it", last.From, last.To, last.Count)
	}

	r := rand.New(rand.NewPCG(3, 4))
	for i := range 200 {
		us := int64(i) // the exact range, then log-uniform up to 1h
		if i >= 100 {
			us = int64(math.Exp(r.Float64() * math.Log(MaxUs)))
		}
		h := New()
		h.RecordMs(float64(us) / 1000)
		bars := h.Bars()
		if len(bars) != 1 || bars[0].Count != 1 || bars[0].FromUs > us || bars[0].ToUs < us {
			t.Fatalf("%dµs recorded as %v", us, bars)
		}
		got, _ := h.Quantile(0.5)
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
		h := New()
		h.RecordMs(c.ms) // must not panic
		if h.Count() != 1 {
			t.Errorf("record(%v) not counted", c.ms)
		}
		if got, _ := h.Quantile(1); math.Abs(got-c.want) > c.want*0.0005 {
			t.Errorf("record(%v) reported as %vms, want %vms", c.ms, got, c.want)
		}
	}
}

// TestQuantile: with the same rule, the histogram's estimate is within
// the bucket resolution (0.05% + 1 µs) of the exact sample.
func TestQuantile(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	vals := make([]float64, 5000)
	h := New()
	for i := range vals {
		vals[i] = math.Exp(r.Float64()*12) / 10 // 0.1 ms .. 16 s, log-uniform
		h.RecordMs(vals[i])
	}
	slices.Sort(vals)
	for _, p := range []float64{0, 0.5, 0.9, 0.95, 0.99, 1} {
		exact := vals[Index(p, len(vals))]
		got, ok := h.Quantile(p)
		if !ok {
			t.Fatal("no quantile")
		}
		if tol := exact*0.0005 + 0.001; math.Abs(got-exact) > tol {
			t.Errorf("p%v: hist %v, exact %v (tolerance %v)", p*100, got, exact, tol)
		}
	}
	if _, ok := New().Quantile(0.5); ok {
		t.Error("empty histogram gave a quantile")
	}

	// Reading a histogram, then recording or merging more, reads the new
	// counts (the bucket list is cached between reads).
	g := New()
	g.RecordMs(1)
	if got, _ := g.Quantile(1); got != 1 {
		t.Fatalf("max of [1] = %v", got)
	}
	g.RecordMs(2)
	if got, _ := g.Quantile(1); got != 2 {
		t.Errorf("max of [1 2] = %v, want 2 after a record", got)
	}
	o := New()
	o.RecordMs(0.5)
	g.Merge(o)
	if got, _ := g.Quantile(0); got != 0.5 {
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
		h := New()
		for _, v := range c.vals {
			h.RecordMs(v)
		}
		if got, _ := h.Quantile(c.p); got != c.want {
			t.Errorf("p%v of %v = %v, want %v", c.p*100, c.vals, got, c.want)
		}
	}
}

// TestJSONRoundTrip: the JSON form rebuilds the same buckets, so a histogram
// written beside the records and read back (or merged from shards) gives the
// same percentiles as the one in memory.
func TestJSONRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	h := New()
	for range 10000 {
		h.RecordMs(math.Exp(r.Float64()*14) / 100)
	}
	data, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	var back Histogram
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if !back.h.Equals(h.h) {
		t.Fatal("round trip changed the histogram")
	}
	for _, p := range []float64{0.5, 0.9, 0.99} {
		a, _ := h.Quantile(p)
		b, _ := back.Quantile(p)
		if a != b {
			t.Errorf("p%v: %v before, %v after", p*100, a, b)
		}
	}
	var empty Histogram
	if err := json.Unmarshal([]byte(`{"us":[],"n":[]}`), &empty); err != nil || empty.Count() != 0 {
		t.Errorf("empty: %v %d", err, empty.Count())
	}
	for _, bad := range []string{`{"us":[1],"n":[]}`, `{"us":[-1],"n":[1]}`, `{"us":[1],"n":[-1]}`, `[1]`} {
		var x Histogram
		if err := json.Unmarshal([]byte(bad), &x); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// TestMergeIsOrderFree: merging shards in any order gives the same counts.
func TestMergeIsOrderFree(t *testing.T) {
	parts := make([]*Histogram, 3)
	all := New()
	for i := range parts {
		parts[i] = New()
		for j := range 100 {
			v := float64(i*1000+j*17) / 10
			parts[i].RecordMs(v)
			all.RecordMs(v)
		}
	}
	a, b := New(), New()
	for i := range parts {
		a.Merge(parts[i])
		b.Merge(parts[len(parts)-1-i])
	}
	if !a.h.Equals(all.h) || !b.h.Equals(all.h) {
		t.Error("merged histograms differ from the whole")
	}
	if New().Count() != 0 || (*Histogram)(nil).Count() != 0 {
		t.Error("empty counts")
	}
}
