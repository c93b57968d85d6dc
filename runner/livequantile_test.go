package runner

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestLiveQuantile: the live estimate of a median is within 7% of the exact
// one over four decades of values, and the buckets tile the range.
func TestLiveQuantile(t *testing.T) {
	for i := 0; i < liveBuckets-1; i++ {
		if lo, hi := liveLow(i), liveLow(i+1); hi <= lo || liveBucket(lo) != i || liveBucket(hi-1) != i {
			t.Fatalf("bucket %d: [%d, %d) maps to %d and %d", i, lo, hi, liveBucket(lo), liveBucket(hi-1))
		}
	}
	var q liveQuantile
	if _, ok := q.quantile(0.5); ok {
		t.Fatal("a quantile of nothing")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, scale := range []time.Duration{20 * time.Microsecond, 700 * time.Microsecond, 15 * time.Millisecond, 2 * time.Second} {
		q = liveQuantile{}
		var xs []float64
		for range 5000 {
			d := time.Duration(float64(scale) * math.Exp(rng.NormFloat64()/2))
			q.add(d)
			xs = append(xs, float64(d.Microseconds())/1000)
		}
		slices.Sort(xs)
		exact := xs[len(xs)/2]
		got, ok := q.quantile(0.5)
		if !ok || math.Abs(got-exact) > 0.07*exact {
			t.Errorf("scale %v: live p50 %.4f ms, exact %.4f ms", scale, got, exact)
		}
	}
}
