package stats

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// BenchmarkCompare100k compares two levels of 100,000 requests each, one
// statistic at a time: the cost the compare command pays per metric of a
// large level, at the default 2000 resamples and at the confidence of a
// gate family of 51 comparisons (3 levels × 17 metrics; 20,399 resamples).
func BenchmarkCompare100k(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	const n = 100_000
	base := Sample{Values: latencies(r, n, 0.3, 0, 1), Costs: latencies(r, n, 0.1, 0, 0.01), Workers: 64, Wall: 60}
	cur := Sample{Values: latencies(r, n, 0.3, 0, 1.01), Costs: latencies(r, n, 0.1, 0, 0.01), Workers: 64, Wall: 61}
	sortedBase, sortedCur := base, cur
	sortedBase.Values, sortedCur.Values = slices.Sorted(slices.Values(base.Values)), slices.Sorted(slices.Values(cur.Values))
	family := FamilyConfidence(DefaultConfidence, 51)
	for _, c := range []struct {
		name      string
		st        Statistic
		base, cur Sample
		conf      float64
	}{
		{"p50", Percentile(0.5), base, cur, 0},
		{"p99", Percentile(0.99), base, cur, 0},
		{"p99/presorted", Percentile(0.99), sortedBase, sortedCur, 0},
		{"mean", Mean(), base, cur, 0},
		{"ratio", Ratio(), base, cur, 0},
		{"rate/wall-fixed", Rate(), Sample{Values: base.Values, Wall: 60}, Sample{Values: cur.Values, Wall: 61}, 0},
		{"rate/closed-loop", Rate(), base, cur, 0},
		{"p99/presorted/family51", Percentile(0.99), sortedBase, sortedCur, family},
		{"mean/family51", Mean(), base, cur, family},
		{"rate/closed-loop/family51", Rate(), base, cur, family},
	} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				if _, err := Compare(c.base, c.cur, c.st, LowerIsBetter, Options{Confidence: c.conf}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCompareShare is the closed-form share comparison.
func BenchmarkCompareShare(b *testing.B) {
	for range b.N {
		if _, err := Compare(Sample{Hits: 9500, Trials: 10000}, Sample{Hits: 9400, Trials: 10000}, Share(), HigherIsBetter, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBeta(b *testing.B) {
	r := newRand(1)
	for range b.N {
		betaDraw(r, 99_000, 1_001)
	}
}

func BenchmarkResampleMean1024(b *testing.B) {
	vals := latencies(rand.New(rand.NewPCG(1, 2)), 1024, 0.3, 0, 1)
	for i := range b.N {
		resampleSums(uint64(i), vals, nil, 1024)
	}
}

// BenchmarkCompareLevel100k compares every gated metric of the study's
// synthetic level (p50/p90/p95/p99 and mean of TTFT, TPOT and E2E,
// throughput, goodput: 17) between two levels of 100,000 requests, sorting
// each latency once as a caller should: the whole cost of one level pair,
// at 95% and at a family of 51.
func BenchmarkCompareLevel100k(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 3))
	const n = 100_000
	base, cur := drawLevel(r, n, 64, 1, 1), drawLevel(r, n, 64, 1, 1.02)
	for _, l := range []*planLevel{&base, &cur} {
		l.ttft, l.tpot = slices.Sorted(slices.Values(l.ttft)), slices.Sorted(slices.Values(l.tpot))
		// E2E stays in request order: the rate pairs it with tokens (all
		// equal here, so its percentiles sort a copy).
	}
	for _, conf := range []float64{DefaultConfidence, FamilyConfidence(DefaultConfidence, 51)} {
		b.Run(fmt.Sprintf("confidence=%.5f", conf), func(b *testing.B) {
			for range b.N {
				for _, m := range planMetrics() {
					if _, err := Compare(m.sample(base), m.sample(cur), m.st, m.better, Options{Confidence: conf}); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
