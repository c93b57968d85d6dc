package stats

import (
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
)

// A study repeats a comparison over seeded trials of synthetic runs whose
// truth is known, and counts verdicts and covering intervals. The unit tests
// run small studies and assert bounds; BenchmarkStudy runs the large ones
// whose figures docs/statistics.md reports.

// scenario makes one run's sample: shift is the true relative slowdown of
// the server (every latency multiplied by 1+shift).
type scenario struct {
	name   string
	st     Statistic
	better Direction
	draw   func(r *rand.Rand, shift float64) Sample
	// truth is the true relative change of the statistic for a slowdown.
	truth func(shift float64) float64
}

// studyResult counts outcomes over trials.
type studyResult struct {
	trials, worse, better, same, covered int
}

func (r studyResult) rate(k int) float64 { return float64(k) / float64(r.trials) }

// study runs trials of base (shift 0) against new (shift): trial i draws its
// data from seed i and bootstraps with seed 1000+i, so counts are
// reproducible. Trials are spread over GOMAXPROCS goroutines.
func (sc scenario) study(shift float64, trials int, opts Options) studyResult {
	workers := runtime.GOMAXPROCS(0)
	parts := make([]studyResult, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < trials; i += workers {
				sc.trial(&parts[w], i, shift, opts)
			}
		})
	}
	wg.Wait()
	res := studyResult{trials: trials}
	for _, p := range parts {
		res.worse += p.worse
		res.better += p.better
		res.same += p.same
		res.covered += p.covered
	}
	return res
}

// trial runs trial i and counts its outcome into res.
func (sc scenario) trial(res *studyResult, i int, shift float64, opts Options) {
	r := rand.New(rand.NewPCG(uint64(i), 77))
	base, cur := sc.draw(r, 0), sc.draw(r, shift)
	opts.Seed = 1000 + uint64(i)
	d, err := Compare(base, cur, sc.st, sc.better, opts)
	if err != nil {
		panic(err)
	}
	switch d.Verdict {
	case Worse:
		res.worse++
	case Better:
		res.better++
	case Same:
		res.same++
	}
	truth := sc.truth(shift)
	if d.RelCI.Lo <= truth+1e-12 && truth-1e-12 <= d.RelCI.Hi {
		res.covered++
	}
}

// latencies draws n lognormal latencies of median 100·scale and log-sd
// sigma; a share slow of them is 3× slower (queueing spikes).
func latencies(r *rand.Rand, n int, sigma, slow, scale float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		x := 100 * math.Exp(sigma*r.NormFloat64())
		if slow > 0 && r.Float64() < slow {
			x *= 3
		}
		v[i] = x * scale
	}
	return v
}

// latencyScenario compares a statistic of n lognormal latencies.
func latencyScenario(name string, st Statistic, n int, sigma, slow float64) scenario {
	return scenario{
		name: name, st: st, better: LowerIsBetter,
		draw: func(r *rand.Rand, shift float64) Sample {
			return Sample{Values: latencies(r, n, sigma, slow, 1+shift)}
		},
		truth: func(shift float64) float64 { return shift },
	}
}

// closedLoopScenario is a closed loop's output_tps_total: n requests of a
// fixed token count on c workers, each request's E2E lognormal, the wall the
// makespan of the requests dealt in order to the first free worker, plus a
// fixed start-up. A slowdown of every E2E by 1+shift divides the rate by it.
// fixedWall holds the wall fixed in the comparison (the wrong model for a
// closed loop, kept to show why).
func closedLoopScenario(name string, n, c int, sigma float64, fixedWall bool) scenario {
	return scenario{
		name: name, st: Rate(), better: HigherIsBetter,
		draw: func(r *rand.Rand, shift float64) Sample {
			e2e := latencies(r, n, sigma, 0, (1+shift)/100)
			tokens := make([]float64, n)
			free := make([]float64, min(c, n))
			for i, e := range e2e {
				tokens[i] = 256
				deal(free, e)
			}
			s := Sample{Values: tokens, Costs: e2e, Workers: c, Wall: 0.05 + maxOf(free)}
			if fixedWall {
				s.Costs, s.Workers = nil, 0
			}
			return s
		},
		truth: func(shift float64) float64 { return 1/(1+shift) - 1 },
	}
}

// ratioScenario is prefill_tps: Σ input tokens / Σ TTFT, each TTFT a fixed
// cost plus a per-token one with lognormal noise.
func ratioScenario(name string, n int, sigma float64) scenario {
	return scenario{
		name: name, st: Ratio(), better: HigherIsBetter,
		draw: func(r *rand.Rand, shift float64) Sample {
			in := make([]float64, n)
			ttft := make([]float64, n)
			for i := range in {
				in[i] = float64(100 + r.IntN(900))
				ttft[i] = (0.02 + in[i]*1e-4) * math.Exp(sigma*r.NormFloat64()) * (1 + shift)
			}
			return Sample{Values: in, Costs: ttft}
		},
		truth: func(shift float64) float64 { return 1/(1+shift) - 1 },
	}
}

// shareScenario is a share of n trials with success probability p; a
// "slowdown" lowers p to p·(1−shift) (goodput falling).
func shareScenario(name string, n int, p float64) scenario {
	return scenario{
		name: name, st: Share(), better: HigherIsBetter,
		draw: func(r *rand.Rand, shift float64) Sample {
			h := 0
			for range n {
				if r.Float64() < p*(1-shift) {
					h++
				}
			}
			return Sample{Hits: h, Trials: n}
		},
		truth: func(shift float64) float64 { return -shift },
	}
}
