package runner

import (
	"context"
	"sync"
	"time"

	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/runner/clock"
	"github.com/runnerbench/runner/runner/wire"
)

// Probe requests (a stage's probe:): a low-rate stream of one small fixed
// request, sent beside a level's load from its window's opening (Begin)
// until its load is done, so each is what a new user saw while the server
// was at that load. They are evenly spaced, the first half a gap after the
// opening (the first wave's burst is the load's, not a new user's), each on
// a goroutine of its own and a worker whose token gaps do not count toward
// the level's ITL; they count in no progress figure of the level, and their
// records (ProbeRequest) go to the probe requests' point alone. A probe
// still in flight when the load is done finishes: its start was inside the
// window.

// probes is a level's probe stream in progress.
type probes struct {
	stop context.CancelFunc
	wg   sync.WaitGroup
}

// startProbes starts the level's probe stream at its window's opening (nil
// for a stage without probes).
func (lr *LevelRun) startProbes() *probes {
	pr := lr.sp.st.Probe
	if pr == nil || !(pr.Rate > 0) {
		return nil
	}
	ctx, stop := context.WithCancel(lr.ctx)
	ps := &probes{stop: stop}
	gap := time.Duration(float64(time.Second) / pr.Rate)
	open := lr.start
	ps.wg.Go(func() {
		for k := 0; ; k++ {
			due := open.Add(gap/2 + time.Duration(k)*gap)
			if !clock.SleepUntil(ctx, due) {
				return
			}
			n := lr.probeSeq
			lr.probeSeq++
			ps.wg.Go(func() { lr.sendProbe(lr.ctx, n, due) })
		}
	})
	return ps
}

// end stops sending probes and waits for those in flight.
func (ps *probes) end() {
	if ps == nil {
		return
	}
	ps.stop()
	ps.wg.Wait()
}

// sendProbe sends probe request n, due at due, and records it.
func (lr *LevelRun) sendProbe(ctx context.Context, n int, due time.Time) {
	p := lr.newPrepared(n)
	rec := p.rec
	rec.ProbeRequest = true
	j, err := lr.sp.body.Probe(n)
	if err != nil {
		rec.Start = time.Now()
		wire.Fail(rec, result.ErrMalformed, err.Error())
	} else {
		rec.Nonce, rec.MaxTokens = j.Nonce, j.MaxTokens
		w := wire.NewWorker(lr.e.c, lr.sp.proto, nil)
		w.Do(ctx, wire.Request{Body: j.Body, Headers: p.headers}, rec)
	}
	lr.lateBy(rec, due)
	lr.sink.Request(rec)
}
