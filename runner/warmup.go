package runner

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/runner/wire"
)

// warmup sends n unmeasured requests, up to conc at a time, so the level's
// first measured requests find open connections and a warm engine.
func (e *Engine) warmup(ctx context.Context, sp *stagePlan, idx, conc, n int, sink Sink) {
	if n <= 0 {
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(n, conc) {
		wg.Go(func() {
			w := wire.NewWorker(e.c, sp.proto, nil)
			for ctx.Err() == nil {
				seq := int(next.Add(1) - 1)
				if seq >= n {
					return
				}
				rec := &result.Request{Stage: sp.st.Name, Level: idx, Concurrency: conc, Seq: seq, Warmup: true, Shard: e.shardIndex()}
				j, err := sp.body.Build(idx, seq, true)
				if err != nil {
					rec.Start = time.Now()
					wire.Fail(rec, result.ErrMalformed, err.Error())
				} else {
					rec.Nonce = j.Nonce
					w.Do(ctx, wire.Request{Body: j.Body, Results: j.Results}, rec)
				}
				if !rec.OK {
					e.log.Debug().Str("kind", rec.ErrorKind).Str("error", rec.Error).Msg("warm-up request failed")
				}
				sink.Request(rec)
				if sp.served.judge(rec.OK, w.NotServed(), w.NoModel()) {
					return // the API is not served: the stage stops (runLevel)
				}
			}
		})
	}
	wg.Wait()
}
