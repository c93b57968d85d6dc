package shape

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"

	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/runner/clock"
	"github.com/runnerbench/runner/scenario"
)

// defaultRateLevel bounds an open-loop level that names neither requests nor
// duration: rate × 10 s requests (at least one). Ten seconds gives a few
// hundred samples at typical rates, enough for a p95, without making a sweep
// of several rates slow. (The plan loader requires one of the two bounds; this
// default is for plans built in code.)
const defaultRateLevel = 10 * time.Second

// Schedule is an open-loop schedule as a pure function: the due offsets of a
// level's requests for (seed, rate in req/s, arrival process, gamma
// burstiness), stopping after n requests (n > 0) and before offset dur
// (dur > 0), whichever comes first. At least one of n and dur must be
// positive; with neither it returns nil.
func Schedule(seed int64, rate float64, arrival scenario.Arrival, burstiness float64, n int, dur time.Duration) []time.Duration {
	return schedule(arrival, Pace{Seed: seed, Rate: rate, Burstiness: burstiness}, n, dur)
}

// schedule is Schedule for any pace (a series' too).
func schedule(arrival scenario.Arrival, p Pace, n int, dur time.Duration) []time.Duration {
	if !(p.Rate > 0) || (n <= 0 && dur <= 0) {
		return nil
	}
	a := NewArrivals(arrival, p)
	var out []time.Duration
	if n > 0 {
		out = make([]time.Duration, 0, n)
	}
	for n <= 0 || len(out) < n {
		off, ok := a.Next()
		if !ok || (dur > 0 && off >= dur) {
			break
		}
		out = append(out, off)
	}
	return out
}

// openLoop sends requests on a schedule, never waiting for completions (so a
// slow server cannot slow the offered load: no coordinated omission). One
// dispatcher goroutine builds each request and hands it, shortly before it
// is due, to a sender goroutine, which waits for the due time precisely
// (runner/clock) and sends it; with maxConc > 0 an arrival past the cap waits for
// a free slot, and that wait shows as the request's dispatch lag and in the
// latency measured from the schedule. The schedule is the seeded arrival
// process (Arrivals) at the pace's rate, or, for a trace replay, times.
type openLoop struct {
	arrival scenario.Arrival
	pace    Pace
	maxConc int
	part    result.Shard // a shard's part of the schedule (Count ≤ 1: all of it)
	// times, when set, is the schedule itself: a replay's send times (the
	// trace's arrivals over its speedup), in order. The pace's rate is
	// then the most arrivals in any one second, which sizes the
	// connection pool.
	times []time.Duration
}

// Open is the open loop at rate requests/s, its arrivals drawn from seed by
// the arrival process (gamma: with burstiness), in flight capped at maxConc
// (0: no cap).
func Open(rate float64, arrival scenario.Arrival, burstiness float64, seed int64, maxConc int) Dispatcher {
	return &openLoop{arrival: arrival, pace: Pace{Seed: seed, Rate: rate, Burstiness: burstiness}, maxConc: maxConc}
}

// OpenSeries is the open loop whose rate follows sr (mean is its mean
// rate over the level), its arrivals drawn from seed by the arrival process
// as Open's are, in flight capped at maxConc (0: no cap).
func OpenSeries(sr *result.Series, mean float64, arrival scenario.Arrival, burstiness float64, seed int64, maxConc int) Dispatcher {
	return &openLoop{arrival: arrival, pace: Pace{Seed: seed, Rate: mean, Burstiness: burstiness, Series: sr}, maxConc: maxConc}
}

// peak is the highest rate the loop's schedule reaches: its rate, or its
// series' peak (what sizes the connection pool and the precise waits).
func (o *openLoop) peak() float64 {
	if sr := o.pace.Series; sr != nil {
		return sr.Peak()
	}
	return o.pace.Rate
}

// spinRate is the rate the precise waits are sized for: a series' peak
// (its gaps are shortest there), else the level's target rate.
func (o *openLoop) spinRate(r Run) float64 {
	if o.pace.Series != nil {
		return o.peak()
	}
	if rate := r.Level().Spec.Rate; rate != nil {
		return *rate
	}
	return 0
}

// Replayed is the open loop that sends at times (a trace replay's, in
// order), whose busiest second holds peak arrivals, capped at maxConc.
func Replayed(times []time.Duration, peak float64, maxConc int) Dispatcher {
	return &openLoop{pace: Pace{Rate: peak}, maxConc: maxConc, times: times}
}

// conns is the cap, or about one second's arrivals (of this shard's part).
func (o *openLoop) Conns() int {
	return rateConns(o.peak()/float64(max(1, o.part.Count)), o.maxConc)
}

// Split gives shard i of N arrivals i, i+N, i+2N, ... of the whole level's
// seeded schedule (so the union is exactly the plan's schedule), a
// max_concurrency cap split as closed-loop streams are, and rate/N. A
// replay's recorded times are not split.
func (o *openLoop) Split(sh result.Shard, dur time.Duration) (Share, error) {
	if o.times != nil {
		return Share{}, errors.New("a trace replay cannot be split across shards")
	}
	p := *o
	p.part = sh
	if p.maxConc > 0 {
		p.maxConc = ShareOf(p.maxConc, sh.Index, sh.Count)
	}
	rate := p.pace.Rate / float64(sh.Count)
	// Arrival i must fall inside the level for the shard to send anything.
	empty := len(schedule(p.arrival, p.pace, sh.Index+1, dur)) <= sh.Index
	return Share{Load: &p, Concurrency: p.maxConc, Rate: &rate, Empty: empty}, nil
}

// arrivals is the level's schedule: a replay's recorded times, or the
// seeded process, whole or this shard's part of it.
func (o *openLoop) arrivals() Arrivals {
	if o.times != nil {
		return &recorded{times: o.times}
	}
	a := NewArrivals(o.arrival, o.pace)
	if o.part.Count <= 1 {
		return a
	}
	return &partArrivals{a: a, stride: o.part.Count, phase: o.part.Index}
}

func (o *openLoop) Dispatch(ctx context.Context, r Run) {
	next := o.arrivals()
	out := newSenders(ctx, r, o.maxConc, r.CoarseSends(), o.spinRate(r))
	defer out.close()
	// The first request is built before the window opens, like the closed
	// loop's first wave; each later one is built while waiting for its due
	// time, so body building is off the schedule unless the rate leaves no
	// time for it (then it shows as lag, honestly).
	seq, ok := r.Claim()
	off, more := next.Next()
	if !ok || !more {
		return
	}
	p := r.Prepare(seq)
	r.Begin()
	for {
		due := r.Start().Add(off)
		if !clock.SleepUntil(ctx, due.Add(-out.lead)) || !out.send(ctx, p, due) {
			return // never sent: not a request of the level
		}
		if off, more = next.Next(); !more || (r.Level().Duration > 0 && off >= r.Level().Duration) {
			return
		}
		if seq, ok = r.Claim(); !ok {
			return
		}
		p = r.Prepare(seq)
	}
}

// senders are an open-loop level's sending goroutines. The dispatcher hands
// each request to an idle sender (or a new one) lead before it is due; the
// sender waits for the due time precisely (runner/clock), takes a max_concurrency
// slot, and sends. Each sender owns a worker and sends the requests handed
// to it one after another, so a level holds as many goroutines and workers
// (and aggregate shards) as it ever had requests waiting or in flight, and a
// request goes out on a goroutine whose stack has grown to the send path's
// size on an earlier request.
type senders struct {
	ctx  context.Context
	r    Run
	lead time.Duration
	jobs chan sendJob  // unbuffered: a hand-off to an idle sender
	sem  chan struct{} // max_concurrency slots (nil: no cap)
	// pending bounds the requests handed off and not yet sent (waiting
	// for their due time or a max_concurrency slot), so a server that
	// keeps the cap full stalls the dispatcher, not memory. Requests in
	// flight are not pending: nothing bounds them but the cap.
	pending chan struct{}
	alarms  clock.Alarms
	spin    *clock.Spinner // how long each sender spins before its due time
	coarse  bool           // Options.CoarseSends: hand off when due, no precise wait
	wg      sync.WaitGroup
}

// maxPending bounds the requests built and waiting for their due time or a
// max_concurrency slot (a variable for tests).
var maxPending = 1024

// sendJob is a Prepared request and when it is due.
type sendJob struct {
	p   Prepared
	due time.Time
}

// newSenders starts the senders of a level whose arrivals come at most at
// rate a second (which bounds how long a sender may spin).
func newSenders(ctx context.Context, r Run, maxConc int, coarse bool, rate float64) *senders {
	s := &senders{ctx: ctx, r: r, lead: clock.SendLead, jobs: make(chan sendJob), pending: make(chan struct{}, maxPending),
		spin: clock.NewSpinner(rate), coarse: coarse}
	if coarse {
		s.lead = 0
	}
	if maxConc > 0 {
		s.sem = make(chan struct{}, maxConc)
	}
	s.spawn(nil) // a worker ready before the window opens
	return s
}

// send hands a request due at due to an idle sender, or to a new one when
// all are busy; false when ctx ended a wait for room.
func (s *senders) send(ctx context.Context, p Prepared, due time.Time) bool {
	select {
	case s.pending <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	select {
	case s.jobs <- sendJob{p, due}:
	default:
		s.spawn(&sendJob{p, due})
	}
	return true
}

// spawn starts a sender, with a first job or idle.
func (s *senders) spawn(first *sendJob) {
	s.wg.Go(func() {
		w := s.r.NewWorker()
		for j := first; ; j = nil {
			if j == nil {
				next, ok := <-s.jobs
				if !ok {
					return
				}
				j = &next
			}
			s.run(w, j)
		}
	})
}

// run waits for j's due time and a slot, and sends it.
func (s *senders) run(w Worker, j *sendJob) {
	ok := true
	if !s.coarse {
		a := s.alarms.Get()
		ok = s.spin.Wait(s.ctx, j.due, a)
		s.alarms.Put(a)
	}
	ok = ok && s.acquire()
	<-s.pending // it goes out now (or never): in flight is not pending
	if !ok {
		return // never sent: not a request of the level
	}
	s.r.Send(s.ctx, w, j.p, j.due)
	if s.sem != nil {
		<-s.sem
	}
}

// acquire takes a max_concurrency slot, counting an arrival that had to wait
// for one; false when the level's context ended the wait.
func (s *senders) acquire() bool {
	if s.sem == nil {
		return true
	}
	select {
	case s.sem <- struct{}{}:
		return true
	default:
	}
	s.r.CapWaited()
	select {
	case s.sem <- struct{}{}:
		return true
	case <-s.ctx.Done():
		return false
	}
}

// close ends the senders once their requests are done.
func (s *senders) close() {
	close(s.jobs)
	s.wg.Wait()
	s.alarms.Close()
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
