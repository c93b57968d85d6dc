package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// BenchmarkStudy is the package-level study behind docs/statistics.md: for
// each scenario, the share of A/A trials called worse (false alarms), of
// trials with a 10% slowdown called worse (detections), and the coverage of
// the A/A and the slowdown's intervals, over 1000 trials at the default
// options. Run: go test -run '^$' -bench Study -benchtime 1x ./internal/stats/
func BenchmarkStudy(b *testing.B) {
	var cases []scenario
	for _, st := range []Statistic{Percentile(0.5), Percentile(0.9), Percentile(0.95), Percentile(0.99), Mean()} {
		for _, n := range []int{64, 200, 1000} {
			for _, sigma := range []float64{0.1, 0.25, 0.5} {
				cases = append(cases, latencyScenario(fmt.Sprintf("%s/n=%d/sigma=%g", st, n, sigma), st, n, sigma, 0))
			}
		}
	}
	for _, st := range []Statistic{Percentile(0.5), Percentile(0.95), Mean()} {
		cases = append(cases, latencyScenario(fmt.Sprintf("%s/n=200/sigma=0.25/5%%slow", st), st, 200, 0.25, 0.05))
	}
	for _, c := range [][2]int{{1, 32}, {4, 32}, {16, 32}, {16, 16}, {64, 64}, {64, 640}, {32, 5000}} {
		cases = append(cases,
			closedLoopScenario(fmt.Sprintf("rate/c=%d/n=%d/sigma=0.1", c[0], c[1]), c[1], c[0], 0.1, false),
			closedLoopScenario(fmt.Sprintf("rate-fixed-wall/c=%d/n=%d/sigma=0.1", c[0], c[1]), c[1], c[0], 0.1, true))
	}
	cases = append(cases, ratioScenario("ratio/n=64/sigma=0.1", 64, 0.1), ratioScenario("ratio/n=200/sigma=0.25", 200, 0.25))
	for _, c := range []struct {
		n int
		p float64
	}{{64, 0.95}, {200, 0.9}, {200, 0.5}, {1000, 0.98}} {
		cases = append(cases, shareScenario(fmt.Sprintf("share/n=%d/p=%g", c.n, c.p), c.n, c.p))
	}
	for _, sc := range cases {
		b.Run(sc.name, func(b *testing.B) {
			for range b.N {
				aa := sc.study(0, 1000, Options{})
				ab := sc.study(0.1, 1000, Options{})
				b.ReportMetric(100*aa.rate(aa.worse), "%false_worse")
				b.ReportMetric(100*ab.rate(ab.worse), "%detected")
				b.ReportMetric(100*aa.rate(aa.covered), "%cover_AA")
				b.ReportMetric(100*ab.rate(ab.covered), "%cover_AB")
			}
		})
	}
}

// planMetric is one gated metric of a synthetic plan level.
type planMetric struct {
	st     Statistic
	better Direction
	sample func(l planLevel) Sample
}

// planLevel is one closed-loop level's requests: TTFT lognormal around
// 20 ms (log-sd 0.05 at concurrency 1, 0.3 above, where requests queue),
// TPOT around 2 ms (log-sd 0.08), 64 output tokens, E2E = TTFT + 63·TPOT,
// dealt to c workers. The simulator's spreads are smaller (quickstart:
// TTFT 0.02 at c=1, TPOT 0.01–0.07, E2E 0.006).
type planLevel struct {
	ttft, tpot, e2e, tokens []float64
	c                       int
	wall                    float64
	good                    int
}

func drawLevel(r *rand.Rand, n, c int, ttftScale, tpotScale float64) planLevel {
	l := planLevel{c: c, ttft: make([]float64, n), tpot: make([]float64, n), e2e: make([]float64, n), tokens: make([]float64, n)}
	free := make([]float64, min(c, n))
	for i := range n {
		sigma := 0.3
		if c == 1 {
			sigma = 0.05
		}
		l.ttft[i] = 20 * math.Exp(sigma*r.NormFloat64()) * ttftScale
		l.tpot[i] = 2 * math.Exp(0.08*r.NormFloat64()) * tpotScale
		l.e2e[i] = l.ttft[i] + 63*l.tpot[i]
		l.tokens[i] = 64
		if l.e2e[i] < 170 { // the SLO: about 90% of base requests meet it
			l.good++
		}
		deal(free, l.e2e[i]/1000)
	}
	l.wall = 0.01 + maxOf(free)
	return l
}

// planMetrics are the gated server metrics of a level: p50/p90/p95/p99
// and mean of TTFT, TPOT and E2E, output throughput and goodput (17).
func planMetrics() []planMetric {
	var ms []planMetric
	for _, get := range []func(planLevel) []float64{
		func(l planLevel) []float64 { return l.ttft },
		func(l planLevel) []float64 { return l.tpot },
		func(l planLevel) []float64 { return l.e2e },
	} {
		for _, st := range []Statistic{Percentile(0.5), Percentile(0.9), Percentile(0.95), Percentile(0.99), Mean()} {
			ms = append(ms, planMetric{st, LowerIsBetter, func(l planLevel) Sample { return Sample{Values: get(l)} }})
		}
	}
	ms = append(ms,
		planMetric{Rate(), HigherIsBetter, func(l planLevel) Sample {
			e2e := make([]float64, len(l.e2e))
			for i, e := range l.e2e {
				e2e[i] = e / 1000
			}
			return Sample{Values: l.tokens, Costs: e2e, Workers: l.c, Wall: l.wall}
		}},
		planMetric{Share(), HigherIsBetter, func(l planLevel) Sample { return Sample{Hits: l.good, Trials: len(l.e2e)} }},
	)
	return ms
}

// planGate runs one synthetic plan pair (levels at concurrency 1, 4, 16 of
// n requests) and reports whether the gate fails: any gated metric worse by
// more than failAbove, each at the Bonferroni confidence of the comparisons
// that have enough samples (uncorrected: 95% each).
func planGate(seed uint64, n int, ttftScale, tpotScale, failAbove float64, corrected bool) bool {
	r := rand.New(rand.NewPCG(seed, 5))
	type pair struct{ base, cur Sample }
	var pairs []pair
	var sts []planMetric
	for _, c := range []int{1, 4, 16} {
		base, cur := drawLevel(r, n, c, 1, 1), drawLevel(r, n, c, ttftScale, tpotScale)
		for _, m := range planMetrics() {
			b, k := m.sample(base), m.sample(cur)
			if EnoughSamples(b, k, m.st) {
				pairs, sts = append(pairs, pair{b, k}), append(sts, m)
			}
		}
	}
	conf := DefaultConfidence
	if corrected {
		conf = FamilyConfidence(conf, len(pairs))
	}
	for i, p := range pairs {
		d, err := Compare(p.base, p.cur, sts[i].st, sts[i].better, Options{Confidence: conf, Seed: seed*1000 + uint64(i)})
		if err != nil {
			panic(err)
		}
		if d.Fails(failAbove) {
			return true
		}
	}
	return false
}

// BenchmarkStudyFamily is the plan-level study: 200 synthetic plan pairs of
// 3 closed-loop levels × 17 gated server metrics, A/A and with TPOT or TTFT
// 10% slower, gated with --fail-above 5 at a Bonferroni family confidence
// (and, for contrast, at 95% per metric). Reports the share of plans that
// fail. Run: go test -run '^$' -bench StudyFamily -benchtime 1x ./internal/stats/
func BenchmarkStudyFamily(b *testing.B) {
	const plans = 200
	for _, n := range []int{64, 200} {
		for _, c := range []struct {
			name       string
			ttft, tpot float64
			corrected  bool
		}{
			{"A/A", 1, 1, true}, {"A/A/uncorrected", 1, 1, false},
			{"TPOT+10%", 1, 1.1, true}, {"TTFT+10%", 1.1, 1, true},
		} {
			b.Run(fmt.Sprintf("n=%d/%s", n, c.name), func(b *testing.B) {
				for range b.N {
					failed := 0
					for i := range plans {
						if planGate(uint64(i), n, c.ttft, c.tpot, 0.05, c.corrected) {
							failed++
						}
					}
					b.ReportMetric(100*float64(failed)/plans, "%plans_failed")
				}
			})
		}
	}
}

// BenchmarkStudyReplicates is the study of the noise of whole runs behind
// docs/statistics.md ("Replicates: noise of whole runs"): runs of N
// requests whose replicates each draw a run-level effect (none, lognormal
// τ, or the two-point rhythm), compared as one run of N (k=1: the request
// interval alone, one effect a run) or as k replicates of N/k, with the
// replicate interval (the union) and, on the same requests, with the
// request interval alone. Reports false worse and coverage over A/A
// trials, detection and coverage of a 10% slowdown (throughput 9.1% lower,
// goodput 10% lower), at 95% over 1000 trials, and for some p90 rows at a
// family's 99.92% (60 comparisons) over 2000.
// Run: go test -run '^$' -bench StudyReplicates -benchtime 1x ./internal/stats/
func BenchmarkStudyReplicates(b *testing.B) {
	const n = 1200
	family := FamilyConfidence(DefaultConfidence, 60)
	effects := []runEffect{randomEffect(0), randomEffect(0.01), randomEffect(0.03), randomEffect(0.05), rhythmEffect(0.25, 1.19), rhythmEffect(0.3, 1.15)}
	type row struct {
		name   string
		make   func(k int, requestsOnly bool) scenario
		conf   float64
		trials int
	}
	var rows []row
	for _, eff := range effects {
		for _, st := range []Statistic{Percentile(0.5), Percentile(0.9), Percentile(0.99), Mean()} {
			rows = append(rows, row{fmt.Sprintf("%s/sigma=0.1/%s", st, eff.name), func(k int, alone bool) scenario {
				return replicatedLatency(st, k, n/k, 0.1, eff, alone)
			}, DefaultConfidence, 1000})
		}
	}
	for _, eff := range []runEffect{randomEffect(0), randomEffect(0.01), randomEffect(0.03), rhythmEffect(0.25, 1.19)} {
		rows = append(rows, row{fmt.Sprintf("p90/sigma=0.1/%s/family60", eff.name), func(k int, alone bool) scenario {
			return replicatedLatency(Percentile(0.9), k, n/k, 0.1, eff, alone)
		}, family, 2000})
	}
	for _, eff := range []runEffect{randomEffect(0), rhythmEffect(0.25, 1.19)} {
		rows = append(rows,
			row{fmt.Sprintf("rate/c=16/N=1280/%s", eff.name), func(k int, alone bool) scenario {
				return replicatedClosedLoop(k, 1280/k, 16, eff, alone)
			}, DefaultConfidence, 1000},
			row{fmt.Sprintf("p90/sigma=0.25/%s", eff.name), func(k int, alone bool) scenario {
				return replicatedLatency(Percentile(0.9), k, n/k, 0.25, eff, alone)
			}, DefaultConfidence, 1000})
	}
	rows = append(rows, row{"share/p=0.9/rhythm=0.25×0.8", func(k int, alone bool) scenario {
		return replicatedShare(k, n/k, 0.9, 0.8, 0.25, alone)
	}, DefaultConfidence, 1000})
	for _, r := range rows {
		for _, k := range []int{1, 4, 6, 8} {
			b.Run(fmt.Sprintf("%s/k=%d", r.name, k), func(b *testing.B) {
				opts := Options{Confidence: r.conf}
				for range b.N {
					sc := r.make(k, false)
					aa, ab := sc.study(0, r.trials, opts), sc.study(0.1, r.trials, opts)
					b.ReportMetric(100*aa.rate(aa.worse), "%false_worse")
					b.ReportMetric(100*aa.rate(aa.covered), "%cover_AA")
					b.ReportMetric(100*ab.rate(ab.worse), "%detected")
					b.ReportMetric(100*ab.rate(ab.covered), "%cover_AB")
					if k == 1 {
						continue
					}
					alone := r.make(k, true)
					aa, ab = alone.study(0, r.trials, opts), alone.study(0.1, r.trials, opts)
					b.ReportMetric(100*aa.rate(aa.worse), "%false_worse_requests")
					b.ReportMetric(100*ab.rate(ab.worse), "%detected_requests")
				}
			})
		}
	}
}
