package stats

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
)

// The tests on known distributions: each runs 200 seeded A/A trials (both
// runs from one distribution) and, where it says, 200 trials with a 10%
// slowdown, then bounds the false alarms, the detections and the coverage.
// They run 500 resamples (each tail of a 95% interval then rests on 12) to
// stay fast under the race detector; the figures in docs/statistics.md come
// from BenchmarkStudy at the defaults (2000) and 1000 trials.
//
// Bounds: nominal false alarms are 2.5% (a one-sided test at 95%), 5 of
// 200; the bound is 10 of 200, which a correct method exceeds with
// probability 0.5% and a method whose intervals are 30% too narrow exceeds
// more often than not. Coverage must lie in [92%, 99.5%]: below, intervals
// are too narrow; above, they waste power (a median's bootstrap, discrete,
// covers 97–99%).
const (
	trials        = 200
	maxFalseWorse = 10
	minCover      = 0.92
	maxCover      = 0.995
	minDetect     = 0.95
)

var fastOpts = Options{Resamples: 500}

func TestKnownDistributions(t *testing.T) {
	cases := []struct {
		sc     scenario
		detect bool // a 10% slowdown must be found worse in ≥ 95% of trials
	}{
		// TPOT-like spread (the simulator's: log-sd 0.05–0.08; E2E 0.1).
		{latencyScenario("p50/n=64/sigma=0.1", Percentile(0.5), 64, 0.1, 0), true},
		{latencyScenario("p95/n=200/sigma=0.1", Percentile(0.95), 200, 0.1, 0), true},
		{latencyScenario("mean/n=64/sigma=0.1", Mean(), 64, 0.1, 0), true},
		// TTFT-like spread with queueing spikes: 10% is beyond these
		// samples for a p90 (docs/statistics.md has the power table), but
		// false alarms and coverage must hold.
		{latencyScenario("p90/n=200/sigma=0.3/5%slow", Percentile(0.9), 200, 0.3, 0.05), false},
		{latencyScenario("mean/n=32/sigma=0.5", Mean(), 32, 0.5, 0), false},
		// A closed loop's throughput, 8 waves of 4 workers, pinned tokens.
		{closedLoopScenario("rate/c=4/n=32/sigma=0.1", 32, 4, 0.1, false), false},
		{ratioScenario("ratio/n=32/sigma=0.1", 32, 0.1), false},
		{shareScenario("share/n=200/p=0.9", 200, 0.9), false},
	}
	for _, c := range cases {
		t.Run(c.sc.name, func(t *testing.T) {
			aa := c.sc.study(0, trials, fastOpts)
			if aa.worse > maxFalseWorse {
				t.Errorf("A/A: %d of %d trials worse, want ≤ %d", aa.worse, trials, maxFalseWorse)
			}
			if cov := aa.rate(aa.covered); cov < minCover || cov > maxCover {
				t.Errorf("A/A: coverage %.3f, want in [%v, %v]", cov, minCover, maxCover)
			}
			if !c.detect {
				return
			}
			ab := c.sc.study(0.1, trials, fastOpts)
			if det := ab.rate(ab.worse); det < minDetect {
				t.Errorf("10%% slower: detected in %.3f of trials, want ≥ %v", det, minDetect)
			}
			if cov := ab.rate(ab.covered); cov < minCover || cov > maxCover {
				t.Errorf("10%% slower: coverage %.3f, want in [%v, %v]", cov, minCover, maxCover)
			}
			t.Logf("A/A worse %d/%d, coverage %.3f; 10%% slower detected %.3f", aa.worse, trials, aa.rate(aa.covered), ab.rate(ab.worse))
		})
	}
}

// A closed loop's throughput with the wall held fixed has no uncertainty
// in pinned mode (every request has the same tokens): the model Rate uses
// without Costs would call half of all A/A pairs worse. With Costs and
// Workers it must not.
func TestRateNeedsMovingWall(t *testing.T) {
	fixed := closedLoopScenario("fixed", 32, 4, 0.1, true).study(0, 50, fastOpts)
	moving := closedLoopScenario("moving", 32, 4, 0.1, false).study(0, 50, fastOpts)
	if fixed.worse < 15 || moving.worse > 3 {
		t.Errorf("A/A worse: wall fixed %d of 50 (want many), moving %d (want ≤ 3)", fixed.worse, moving.worse)
	}
	// A single wave is a maximum: never a verdict, whatever the change.
	d, err := Compare(Sample{Values: []float64{1, 1, 1, 1, 1, 1}, Costs: []float64{1, 1, 1, 1, 1, 1}, Workers: 6, Wall: 1},
		Sample{Values: []float64{1, 1, 1, 1, 1, 1}, Costs: []float64{2, 2, 2, 2, 2, 2}, Workers: 6, Wall: 2}, Rate(), HigherIsBetter, Options{})
	if err != nil || d.Verdict != Inconclusive || !d.LowSamples || d.Reason == "" {
		t.Errorf("single wave: %s (%s), %v", d.Verdict, d.Reason, err)
	}
}

// A report compares many metrics; the gate's family must keep the chance
// that any unchanged one is called worse near (1 − 95%)/2. Each A/A "plan"
// here has 6 comparisons of independent requests: independence is where
// Bonferroni is tight and where an uncorrected family fails most,
// 1 − 0.975⁶ = 14% of plans.
func TestFamilyFalseAlarms(t *testing.T) {
	const plans, m = 100, 6
	conf := FamilyConfidence(DefaultConfidence, m)
	outcome := make([][2]bool, plans) // failed corrected, failed at 95% each
	var wg sync.WaitGroup
	workers := runtime.GOMAXPROCS(0)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < plans; i += workers {
				outcome[i] = familyPlan(t, uint64(i), m, conf)
			}
		})
	}
	wg.Wait()
	failed, uncorrected := 0, 0
	for _, o := range outcome {
		if o[0] {
			failed++
		}
		if o[1] {
			uncorrected++
		}
	}
	// Nominal at most 2.5 of 100; the bound leaves room for chance
	// (P(X > 6) = 1.4% at 2.5%). The uncorrected count shows the test can
	// tell: it must exceed the bound.
	if failed > 6 || uncorrected <= 6 {
		t.Errorf("A/A plans failing the gate: %d of %d with a family of %d at %.5f (want ≤ 6), %d at 95%% each (want > 6)",
			failed, plans, m, conf, uncorrected)
	}
	t.Logf("A/A plans failing the gate: %d of %d corrected, %d uncorrected", failed, plans, uncorrected)
}

// familyPlan is one A/A plan of m independent comparisons: TTFT p50, TPOT
// p90, E2E p95 at 2 levels, say. It reports whether the gate fails at the
// family's confidence, and at 95% each (200 resamples: a contrast only).
func familyPlan(t *testing.T, seed uint64, m int, conf float64) [2]bool {
	stats := []Statistic{Percentile(0.5), Percentile(0.9), Percentile(0.95)}
	r := rand.New(rand.NewPCG(seed, 99))
	var out [2]bool
	for j := range m {
		base := Sample{Values: latencies(r, 100, 0.2, 0, 1)}
		cur := Sample{Values: latencies(r, 100, 0.2, 0, 1)}
		st := stats[j%len(stats)]
		d, err := Compare(base, cur, st, LowerIsBetter, Options{Confidence: conf, Seed: seed*uint64(m) + uint64(j)})
		alone, err2 := Compare(base, cur, st, LowerIsBetter, Options{Resamples: 200, Seed: seed*uint64(m) + uint64(j)})
		if err != nil || err2 != nil {
			t.Error(err, err2)
		}
		out[0] = out[0] || d.Fails(0)
		out[1] = out[1] || alone.Fails(0)
	}
	return out
}

func ExampleCompare() {
	base := Sample{Values: []float64{101, 98, 105, 99, 102, 97, 103, 100, 104, 96, 100, 101}}
	cur := Sample{Values: []float64{121, 118, 126, 119, 122, 117, 124, 120, 125, 115, 120, 121}}
	d, err := Compare(base, cur, Percentile(0.5), LowerIsBetter, Options{Threshold: 0.05})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s %+.1f%% [%+.1f%%, %+.1f%%] %s; fails --fail-above 10: %v\n",
		d.Statistic, 100*d.Rel, 100*d.RelCI.Lo, 100*d.RelCI.Hi, d.Verdict, d.Fails(0.10))
	// Output: p50 +19.8% [+16.5%, +23.8%] worse; fails --fail-above 10: true
}
