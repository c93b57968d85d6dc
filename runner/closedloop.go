package runner

import (
	"context"
	"sync"
	"time"
)

// closedLoop keeps conc requests in flight: each worker sends its next
// request as soon as its previous one finished.
type closedLoop struct {
	conc int
	ramp time.Duration
}

func (c closedLoop) conns() int { return c.conc }

func (c closedLoop) dispatch(ctx context.Context, lr *levelRun) {
	// Every worker builds its first request before the window opens, so
	// the first wave leaves together instead of behind conc body builds.
	var wg, ready sync.WaitGroup
	open := make(chan struct{})
	ready.Add(c.conc)
	for i := range c.conc {
		wg.Go(func() {
			w := lr.newWorker()
			seq, ok := lr.claim()
			var first prepared
			if ok {
				first = lr.prepare(seq)
			}
			ready.Done()
			<-open
			if !ok || ctx.Err() != nil {
				return // never sent: not a request of the level
			}
			c.work(ctx, lr, w, first, i)
		})
	}
	ready.Wait()
	lr.begin()
	close(open)
	wg.Wait()
}

// work is worker i's loop: its prepared first request, then one request
// after another until the level has sent all it should.
func (c closedLoop) work(ctx context.Context, lr *levelRun, w *worker, first prepared, i int) {
	// Without a ramp the first wave is due as each worker wakes: putting
	// conc requests on the wire at once takes the client some milliseconds,
	// a spread that is not lateness against any schedule (counting it would
	// flag every large single-wave level as client-bound; the scheduling
	// latency still catches a starved client).
	due := time.Now()
	if c.ramp > 0 {
		due = lr.start.Add(c.ramp * time.Duration(i) / time.Duration(c.conc))
		if !sleepUntil(ctx, due) {
			lr.send(ctx, w, first, due) // recorded as interrupted
			return
		}
	}
	lr.send(ctx, w, first, due)
	due = time.Now() // the worker is free: its next request is due now
	for ctx.Err() == nil {
		seq, ok := lr.claim()
		if !ok {
			return
		}
		lr.exec(ctx, w, seq, due)
		due = time.Now()
	}
}

func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-tm.C:
		return true
	}
}
