package runner

import "time"

// progressInterval is how often a level's progress is reported.
const progressInterval = 100 * time.Millisecond

// progress reports the level's progress every progressInterval until stopped.
func (e *Engine) progress(lr *LevelRun) (stop func()) {
	f := e.opts.OnProgress
	if f == nil {
		return func() {}
	}
	snap := func() {
		el := time.Since(lr.start)
		p := Progress{
			Stage: lr.sp.st.Name, Level: lr.idx, Label: lr.lvl.Spec.Label,
			Done: int(lr.done.Load()), Total: lr.total * max(1, lr.sp.body.Turns()), Failed: int(lr.failed.Load()), Elapsed: el,
			InFlight: int(lr.inFlight.Load()),
		}
		p.Sent = p.Done + p.InFlight
		if s := el.Seconds(); s > 0 {
			p.OutputTPS = float64(lr.outTok.Load()) / s
		}
		p.TTFTP50Ms, _ = lr.ttftLive.quantile(0.5)
		p.ITLP50Ms, _ = lr.itlLive.quantile(0.5)
		p.Duration = lr.lvl.Duration
		f(p)
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(progressInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				snap()
			}
		}
	}()
	return func() {
		close(done)
		<-finished
		snap() // the final count
	}
}
