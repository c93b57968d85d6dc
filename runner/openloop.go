package runner

import (
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"time"

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
		a.t += gammaDraw(a.rng, a.shape) / (a.rate * a.shape)
	default:
		a.t += a.rng.ExpFloat64() / a.rate
	}
	return time.Duration(math.Round(a.t * float64(time.Second)))
}

// gammaDraw draws from Gamma(k, 1) by Marsaglia and Tsang's method; for k < 1
// it draws Gamma(k+1, 1)·U^(1/k), the standard boost.
func gammaDraw(r *rand.Rand, k float64) float64 {
	if k < 1 {
		u := r.Float64()
		for u == 0 {
			u = r.Float64()
		}
		return gammaDraw(r, k+1) * math.Pow(u, 1/k)
	}
	d := k - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := r.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
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
// dispatcher goroutine waits until each request's due time (precisely, see
// wait.go) and starts a goroutine for it; with maxConc > 0 an arrival past
// the cap waits for a free slot, and that wait shows as the request's
// dispatch lag and in the latency measured from the schedule. The schedule
// is the seeded arrival process at rate, or, for a trace replay, times.
type openLoop struct {
	rate       float64
	arrival    scenario.Arrival
	burstiness float64
	seed       int64
	maxConc    int
	// times, when set, is the schedule itself: a replay's send times (the
	// trace's arrivals over its speedup), in order. rate is then the most
	// arrivals in any one second, which sizes the connection pool.
	times []time.Duration
}

// conns is the cap, or about one second's arrivals.
func (o *openLoop) conns() int { return rateConns(o.rate, o.maxConc) }

// schedule returns the level's due offsets, one per call; false when the
// schedule has no more.
func (o *openLoop) schedule() func() (time.Duration, bool) {
	if o.times != nil {
		i := 0
		return func() (time.Duration, bool) {
			if i >= len(o.times) {
				return 0, false
			}
			i++
			return o.times[i-1], true
		}
	}
	a := newArrivals(o.seed, o.rate, o.arrival, o.burstiness)
	return func() (time.Duration, bool) { return a.next(), true }
}

func (o *openLoop) dispatch(ctx context.Context, lr *levelRun) {
	next := o.schedule()
	var sem chan struct{}
	if o.maxConc > 0 {
		sem = make(chan struct{}, o.maxConc)
	}
	pool := &workerPool{lr: lr}
	var wg sync.WaitGroup
	defer wg.Wait()
	// The first request is built before the window opens, like the closed
	// loop's first wave; each later one is built while waiting for its due
	// time, so body building is off the schedule unless the rate leaves no
	// time for it (then it shows as lag, honestly).
	seq, ok := lr.claim()
	off, more := next()
	if !ok || !more {
		return
	}
	p := lr.prepare(seq)
	// Warm a worker too, so the first request does not allocate its reader.
	pool.put(pool.get())
	lr.begin()
	for {
		due := lr.start.Add(off)
		if !lr.e.waitFor(ctx, due) || !acquire(ctx, sem, lr) {
			return // never sent: not a request of the level
		}
		w, cur := pool.get(), p
		wg.Go(func() {
			lr.send(ctx, w, cur, due)
			pool.put(w)
			if sem != nil {
				<-sem
			}
		})
		if !lr.e.opts.CoarseSends {
			// Let the request go out now, on this core, rather than after
			// the next one is built (or when another core steals it).
			runtime.Gosched()
		}
		if off, more = next(); !more || (lr.lvl.Duration > 0 && off >= lr.lvl.Duration) {
			return
		}
		if seq, ok = lr.claim(); !ok {
			return
		}
		p = lr.prepare(seq)
	}
}

// acquire takes a max_concurrency slot (sem nil: no cap), counting an
// arrival that had to wait for one; false when ctx ended the wait.
func acquire(ctx context.Context, sem chan struct{}, lr *levelRun) bool {
	if sem == nil {
		return true
	}
	select {
	case sem <- struct{}{}:
		return true
	default:
	}
	lr.capWaits.Add(1)
	select {
	case sem <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// workerPool keeps an open-loop level's idle workers for reuse, so a level
// holds as many workers (and aggregate shards) as it ever had requests in
// flight, not one per request.
type workerPool struct {
	lr   *levelRun
	mu   sync.Mutex
	idle []*worker
}

func (p *workerPool) get() *worker {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.idle); n > 0 {
		w := p.idle[n-1]
		p.idle = p.idle[:n-1]
		return w
	}
	return p.lr.newWorker()
}

func (p *workerPool) put(w *worker) {
	p.mu.Lock()
	p.idle = append(p.idle, w)
	p.mu.Unlock()
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
