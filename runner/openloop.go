package runner

import (
	"context"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/runnerbench/runner/internal/dist"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
)

// defaultRateLevel bounds an open-loop level that names neither requests nor
// duration: rate × 10 s requests (at least one). Ten seconds gives a few
// hundred samples at typical rates, enough for a p95, without making a sweep
// of several rates slow. (The plan loader requires one of the two bounds; this
// default is for plans built in code.)
const defaultRateLevel = 10 * time.Second

// arrivals generates an open-loop schedule: the offsets from the level's start
// at which its requests are due. Offsets are accumulated in float64 seconds
// and converted once each, so rounding does not drift over a long level, and
// a constant schedule is exactly i/rate.
type arrivals struct {
	rng   *rand.Rand
	rate  float64
	kind  scenario.Arrival
	shape float64 // gamma shape k = 1/burstiness
	i     int
	t     float64 // seconds
}

// newArrivals returns the schedule generator for (seed, rate, arrival,
// burstiness). The same inputs always give the same schedule.
func newArrivals(seed int64, rate float64, arrival scenario.Arrival, burstiness float64) *arrivals {
	a := &arrivals{
		// A stream of its own (the second PCG word), so the schedule does
		// not share draws with the prompt and length sampling.
		rng:  rand.New(rand.NewPCG(uint64(seed), 0x6f70656e6c6f6f70)), // "openloop"
		rate: rate,
		kind: arrival,
	}
	if a.kind == "" {
		a.kind = scenario.ArrivalPoisson
	}
	if a.kind == scenario.ArrivalGamma {
		if !(burstiness > 0) {
			burstiness = 1
		}
		a.shape = 1 / burstiness
		if burstiness == 1 {
			a.kind = scenario.ArrivalPoisson // gamma with shape 1 is the exponential
		}
	}
	return a
}

// next returns the next request's offset. The first request is due at once
// (offset 0); each later one a gap after the previous, with mean gap 1/rate.
func (a *arrivals) next() time.Duration {
	i := a.i
	a.i++
	if i == 0 {
		return 0
	}
	switch a.kind {
	case scenario.ArrivalConstant:
		a.t = float64(i) / a.rate
	case scenario.ArrivalGamma:
		// Gamma(k, θ) with θ = 1/(rate·k): mean kθ = 1/rate, CV² = 1/k =
		// burstiness.
		a.t += dist.Gamma(a.rng, a.shape) / (a.rate * a.shape)
	default:
		a.t += a.rng.ExpFloat64() / a.rate
	}
	return time.Duration(math.Round(a.t * float64(time.Second)))
}

// Schedule is an open-loop schedule as a pure function: the due offsets of a
// level's requests for (seed, rate in req/s, arrival process, gamma
// burstiness), stopping after n requests (n > 0) and before offset dur
// (dur > 0), whichever comes first. At least one of n and dur must be
// positive; with neither it returns nil.
func Schedule(seed int64, rate float64, arrival scenario.Arrival, burstiness float64, n int, dur time.Duration) []time.Duration {
	if !(rate > 0) || (n <= 0 && dur <= 0) {
		return nil
	}
	a := newArrivals(seed, rate, arrival, burstiness)
	var out []time.Duration
	if n > 0 {
		out = make([]time.Duration, 0, n)
	}
	for n <= 0 || len(out) < n {
		off := a.next()
		if dur > 0 && off >= dur {
			break
		}
		out = append(out, off)
	}
	return out
}

// openLoop sends requests on a schedule, never waiting for completions (so a
// slow server cannot slow the offered load: no coordinated omission). One
// dispatcher goroutine sleeps until each request's due time and starts a
// goroutine for it; with maxConc > 0 an arrival past the cap waits for a free
// slot, and that wait shows as the request's dispatch lag and in the latency
// measured from the schedule.
type openLoop struct {
	rate       float64
	arrival    scenario.Arrival
	burstiness float64
	seed       int64
	maxConc    int
	part       result.Shard // a shard's part of the schedule (Count ≤ 1: all of it)
}

// conns is the cap, or about one second's arrivals (of this shard's part).
func (o *openLoop) conns() int { return rateConns(o.rate/float64(max(1, o.part.Count)), o.maxConc) }

func (o *openLoop) dispatch(ctx context.Context, lr *levelRun) {
	sched := o.arrivals()
	var sem chan struct{}
	if o.maxConc > 0 {
		sem = make(chan struct{}, o.maxConc)
	}
	// Idle workers are reused, so a level holds as many workers (and
	// aggregate shards) as it ever had requests in flight, not one per request.
	var (
		poolMu sync.Mutex
		idle   []*worker
		wg     sync.WaitGroup
	)
	getWorker := func() *worker {
		poolMu.Lock()
		defer poolMu.Unlock()
		if n := len(idle); n > 0 {
			w := idle[n-1]
			idle = idle[:n-1]
			return w
		}
		return lr.newWorker()
	}
	putWorker := func(w *worker) {
		poolMu.Lock()
		idle = append(idle, w)
		poolMu.Unlock()
	}
	// The first request is built before the window opens, like the closed
	// loop's first wave; each later one is built while waiting for its due
	// time, so body building is off the schedule unless the rate leaves no
	// time for it (then it shows as lag, honestly).
	seq, ok := lr.claim()
	if !ok {
		return
	}
	off := sched.next()
	p := lr.prepare(seq)
	// Warm a worker too, so the first request does not allocate its reader.
	putWorker(getWorker())
	lr.begin()
	for {
		due := lr.start.Add(off)
		if !sleepUntil(ctx, due) {
			wg.Wait()
			return // never sent: not a request of the level
		}
		if sem != nil {
			select {
			case sem <- struct{}{}:
			default:
				lr.capWaits.Add(1)
				select {
				case sem <- struct{}{}:
				case <-ctx.Done():
					wg.Wait()
					return
				}
			}
		}
		w, cur := getWorker(), p
		wg.Go(func() {
			lr.send(ctx, w, cur, due)
			putWorker(w)
			if sem != nil {
				<-sem
			}
		})
		off = sched.next()
		if lr.lvl.Duration > 0 && off >= lr.lvl.Duration {
			break
		}
		if seq, ok = lr.claim(); !ok {
			break
		}
		p = lr.prepare(seq)
	}
	wg.Wait()
}

// rateLevelTotal is an open-loop level's request bound: requests when given,
// none when only a duration bounds it, else rate × defaultRateLevel.
func rateLevelTotal(requests int, dur time.Duration, rate float64) int {
	switch {
	case requests > 0:
		return requests
	case dur > 0:
		return 0
	default:
		return max(1, int(math.Ceil(rate*defaultRateLevel.Seconds())))
	}
}

// rateConns is how many connections to open before an open-loop level: its
// cap when it has one, else about one second's arrivals (bounded), which
// covers the in-flight requests of a server answering within a second.
func rateConns(rate float64, maxConc int) int {
	if maxConc > 0 {
		return maxConc
	}
	return min(256, max(1, int(math.Ceil(rate))))
}
