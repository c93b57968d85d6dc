package shape

import (
	"context"
	"sync"
	"time"

	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/runner/clock"
)

// closedLoop keeps conc requests in flight: each worker sends its next
// request as soon as its previous one finished, or, as a user who thinks
// (Users), a think time after it.
type closedLoop struct {
	conc  int
	ramp  time.Duration
	think Think // nil: no thinking
}

func (c closedLoop) Conns() int { return c.conc }

// Split gives shard i of N conc/N streams, one more for each i < conc%N.
func (c closedLoop) Split(sh result.Shard, _ time.Duration) (Share, error) {
	c.conc = ShareOf(c.conc, sh.Index, sh.Count)
	return Share{Load: c, Concurrency: c.conc, Empty: c.conc == 0}, nil
}

func (c closedLoop) Dispatch(ctx context.Context, r Run) {
	// Every worker's first request is built before the window opens, so
	// the first wave leaves without waiting for conc body builds.
	// The dispatcher builds them, one after another, rather than each
	// worker on its own new goroutine: a build there is that goroutine's
	// first deep call and grows its stack, which at 16,384 workers cost
	// more CPU than the builds themselves.
	type start struct {
		w     Worker
		first Prepared
		ok    bool
	}
	starts := make([]start, c.conc)
	for i := range starts {
		s := &starts[i]
		s.w = r.NewWorker()
		var seq int
		if seq, s.ok = r.Claim(); s.ok {
			s.first = r.Prepare(seq)
		}
	}
	r.Begin()
	// Each worker's goroutine is started once the window is open and sends
	// at once, as the loop goes. Started before it and released together
	// (a closed channel), conc goroutines became runnable at one instant,
	// and the first wave's TTFTs held the client's own queue: at 16,384
	// streams TTFT p50 was 0.84-1.12 s that way, 0.49-0.62 s this way
	// (a raw Go reader's 0.61-0.68 s; runnerbench -only wirescale).
	var wg sync.WaitGroup
	for i := range starts {
		s := starts[i]
		starts[i] = start{}
		if !s.ok || ctx.Err() != nil {
			continue // never sent: not a request of the level
		}
		wg.Go(func() { c.work(ctx, r, s.w, s.first, i) })
	}
	wg.Wait()
}

// work is worker i's loop: its Prepared first request, then one request
// after another until the level has sent all it should.
func (c closedLoop) work(ctx context.Context, r Run, w Worker, first Prepared, i int) {
	// Without a ramp the first wave is due as each worker wakes: putting
	// conc requests on the wire at once takes the client some milliseconds,
	// a spread that is not lateness against any schedule (counting it would
	// flag every large single-wave level as client-bound; the scheduling
	// latency still catches a starved client).
	due := time.Now()
	if c.ramp > 0 {
		due = r.Start().Add(c.ramp * time.Duration(i) / time.Duration(c.conc))
		if !clock.SleepUntil(ctx, due) {
			r.Send(ctx, w, first, due) // recorded as interrupted
			return
		}
	}
	r.Send(ctx, w, first, due)
	due = time.Now() // the worker is free: its next request is due now
	for ctx.Err() == nil {
		seq, ok := r.Claim()
		if !ok {
			return
		}
		p := r.Prepare(seq)
		if c.think != nil {
			// A user: the next conversation is due a think time after the last.
			if due, ok = c.pause(ctx, r, seq, due); !ok {
				return // never sent: not a request of the level
			}
		}
		r.Send(ctx, w, p, due)
		due = time.Now()
	}
}

// Closed is the closed loop of conc streams, their first requests spread
// over ramp (0: all at once).
func Closed(conc int, ramp time.Duration) Dispatcher { return closedLoop{conc: conc, ramp: ramp} }
