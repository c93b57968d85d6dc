package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// Studies of the noise of whole runs. A run-level effect multiplies every
// request of one run (one replicate) by the same factor: a lognormal
// random effect exp(τ·Z), or the two-point "rhythm" of a closed loop that
// settles, for a whole run, into a slower batching pattern with some
// probability (the simulator's c=16 level: TPOT p90 2.80 ms or 3.34 ms,
// 19% apart, 2 of 6 replicates slow in one measured run). Both are scale
// families, so a slowdown of every request by 1+shift changes each
// statistic by exactly shift: the truth the intervals must cover.

// runEffect draws the factor of one run (one replicate) of the requests.
type runEffect struct {
	name string
	draw func(r *rand.Rand) float64
}

// randomEffect is a lognormal run-level effect of log-sd tau.
func randomEffect(tau float64) runEffect {
	return runEffect{fmt.Sprintf("tau=%g", tau), func(r *rand.Rand) float64 { return math.Exp(tau * r.NormFloat64()) }}
}

// rhythmEffect makes a run slow by the factor slow with probability q.
func rhythmEffect(q, slow float64) runEffect {
	return runEffect{fmt.Sprintf("rhythm=%g×%g", q, slow), func(r *rand.Rand) float64 {
		if r.Float64() < q {
			return slow
		}
		return 1
	}}
}

// replicatedRun draws one run of k replicates of n lognormal latencies
// (median 100 times the replicate's effect times scale, log-sd sigma): the
// pooled sample, with the replicates when k ≥ 2.
func replicatedRun(r *rand.Rand, k, n int, sigma float64, eff runEffect, scale float64) Sample {
	var pooled Sample
	for range k {
		vals := latencies(r, n, sigma, 0, scale*eff.draw(r))
		pooled.Values = append(pooled.Values, vals...)
		pooled.Replicates = append(pooled.Replicates, Sample{Values: vals})
	}
	if k < 2 {
		pooled.Replicates = nil
	}
	return pooled
}

// replicatedLatency compares a statistic of runs of k replicates of n
// requests each. requestsOnly drops the replicates from the samples: the
// request interval alone on the same requests.
func replicatedLatency(st Statistic, k, n int, sigma float64, eff runEffect, requestsOnly bool) scenario {
	return scenario{
		name: fmt.Sprintf("%s/k=%d/n=%d/sigma=%g/%s", st, k, n, sigma, eff.name), st: st, better: LowerIsBetter,
		draw: func(r *rand.Rand, shift float64) Sample {
			s := replicatedRun(r, k, n, sigma, eff, 1+shift)
			if requestsOnly {
				s.Replicates = nil
			}
			return s
		},
		truth: func(shift float64) float64 { return shift },
	}
}

// replicatedClosedLoop is a closed loop's output_tps_total over k
// replicates of n requests on c workers: each replicate's E2Es lognormal
// (log-sd 0.1) times its run effect, its wall the makespan plus a fixed
// start-up, as closedLoopScenario; the pooled wall is the replicates'
// walls added up.
func replicatedClosedLoop(k, n, c int, eff runEffect, requestsOnly bool) scenario {
	return scenario{
		name: fmt.Sprintf("rate/c=%d/k=%d/n=%d/%s", c, k, n, eff.name), st: Rate(), better: HigherIsBetter,
		draw: func(r *rand.Rand, shift float64) Sample {
			pooled := Sample{Workers: c}
			for range k {
				rep := Sample{Values: make([]float64, n), Costs: latencies(r, n, 0.1, 0, (1+shift)*eff.draw(r)/100), Workers: c}
				free := make([]float64, min(c, n))
				for i, e := range rep.Costs {
					rep.Values[i] = 256
					deal(free, e)
				}
				rep.Wall = 0.05 + maxOf(free)
				pooled.Values, pooled.Costs = append(pooled.Values, rep.Values...), append(pooled.Costs, rep.Costs...)
				pooled.Wall += rep.Wall
				pooled.Replicates = append(pooled.Replicates, rep)
			}
			if k < 2 || requestsOnly {
				pooled.Replicates = nil
			}
			return pooled
		},
		truth: func(shift float64) float64 { return 1/(1+shift) - 1 },
	}
}

// replicatedShare is goodput over k replicates of n requests, each request
// good with probability p, or pSlow in a replicate that runs slow (with
// probability q). A "slowdown" multiplies both by 1 − shift.
func replicatedShare(k, n int, p, pSlow, q float64, requestsOnly bool) scenario {
	return scenario{
		name: fmt.Sprintf("share/k=%d/n=%d/p=%g/slow=%g×%g", k, n, p, q, pSlow), st: Share(), better: HigherIsBetter,
		draw: func(r *rand.Rand, shift float64) Sample {
			var pooled Sample
			for range k {
				pj := p
				if r.Float64() < q {
					pj = pSlow
				}
				rep := Sample{Trials: n}
				for range n {
					if r.Float64() < pj*(1-shift) {
						rep.Hits++
					}
				}
				pooled.Hits, pooled.Trials = pooled.Hits+rep.Hits, pooled.Trials+rep.Trials
				pooled.Replicates = append(pooled.Replicates, rep)
			}
			if k < 2 || requestsOnly {
				pooled.Replicates = nil
			}
			return pooled
		},
		truth: func(shift float64) float64 { return -shift },
	}
}

// The tests of the replicate interval on known distributions: 200 seeded
// trials each at 500 resamples, bounds as TestKnownDistributions' (false
// worse ≤ 10 of 200 where 5 is nominal, coverage ≥ 92%). Each also runs
// the request interval alone on the same requests (k = 1: one run of all
// of them, one run effect), which must fail the bound by far: otherwise
// the test could not tell a method that sees the run-level effect from one
// that does not.
func TestReplicatesRunLevelEffect(t *testing.T) {
	const n = 600 // requests a run, split into k replicates
	for _, c := range []struct {
		st    Statistic
		k     int
		eff   runEffect
		alone int // fewest A/A trials of 200 the request interval alone calls worse
	}{
		// A log-sd of 5% between runs against 10% between requests:
		// a request interval of a mean of 600 is ±0.8%, the runs differ
		// by 7% (sd): about 40% false "worse".
		{Mean(), 4, randomEffect(0.05), 50},
		{Percentile(0.9), 6, randomEffect(0.05), 50},
		// The simulator's c=16 rhythm: one run of 4 slow by 19%; a pair
		// differs when one run is slow and the other not, 37.5% of pairs,
		// half of them "worse".
		{Percentile(0.9), 6, rhythmEffect(0.25, 1.19), 20},
		{Percentile(0.5), 8, rhythmEffect(0.25, 1.19), 20},
	} {
		sc := replicatedLatency(c.st, c.k, n/c.k, 0.1, c.eff, false)
		t.Run(sc.name, func(t *testing.T) {
			aa := sc.study(0, trials, fastOpts)
			if aa.worse > maxFalseWorse {
				t.Errorf("replicates: %d of %d A/A trials worse, want ≤ %d", aa.worse, trials, maxFalseWorse)
			}
			if cov := aa.rate(aa.covered); cov < minCover {
				t.Errorf("replicates: A/A coverage %.3f, want ≥ %v", cov, minCover)
			}
			alone := replicatedLatency(c.st, 1, n, 0.1, c.eff, false).study(0, trials, fastOpts)
			if alone.worse < c.alone {
				t.Errorf("requests alone (one run of %d): %d of %d A/A trials worse, want ≥ %d: the study does not show the problem", n, alone.worse, trials, c.alone)
			}
			t.Logf("A/A worse: replicates %d/%d (coverage %.3f), requests alone %d/%d", aa.worse, trials, aa.rate(aa.covered), alone.worse, trials)
		})
	}
}

// With a small run-level effect a 10% slowdown must still be found in
// nearly every trial, and without one the replicate interval must cost
// little against the request interval alone on the same requests.
func TestReplicatesKeepPower(t *testing.T) {
	for _, c := range []struct {
		st        Statistic
		k, n      int
		sigma     float64
		eff       runEffect
		shift     float64
		minDetect float64 // share of trials the union must detect
		maxLoss   float64 // detections it may lose against requests alone
	}{
		{Percentile(0.5), 4, 150, 0.1, randomEffect(0.01), 0.1, 0.95, 0.05},
		{Mean(), 6, 100, 0.1, randomEffect(0.01), 0.1, 0.95, 0.05},
		// No run effect, a shift the request interval finds most of
		// the time: the replicates' t interval on 8 may lose a few.
		{Percentile(0.9), 8, 150, 0.25, randomEffect(0), 0.06, 0.6, 0.15},
	} {
		sc := replicatedLatency(c.st, c.k, c.n, c.sigma, c.eff, false)
		t.Run(sc.name, func(t *testing.T) {
			ab := sc.study(c.shift, trials, fastOpts)
			req := replicatedLatency(c.st, c.k, c.n, c.sigma, c.eff, true).study(c.shift, trials, fastOpts)
			det, reqDet := ab.rate(ab.worse), req.rate(req.worse)
			if det < c.minDetect || det < reqDet-c.maxLoss {
				t.Errorf("%g%% slower: detected in %.3f of trials with replicates, %.3f by requests alone; want ≥ %v and a loss ≤ %v",
					100*c.shift, det, reqDet, c.minDetect, c.maxLoss)
			}
			if cov := ab.rate(ab.covered); cov < minCover {
				t.Errorf("%g%% slower: coverage %.3f, want ≥ %v", 100*c.shift, cov, minCover)
			}
			t.Logf("%g%% slower detected: replicates %.3f, requests alone %.3f", 100*c.shift, det, reqDet)
		})
	}
}
