package runner

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runnerbench/runner/result"
)

// primeConnections opens conc keep-alive connections before the measured
// window by sending conc concurrent GETs of the model list: otherwise every
// worker's first TTFT would include a TCP (and TLS) handshake, and at high
// concurrency the burst of dials would delay the streams already running.
func (e *Engine) primeConnections(ctx context.Context, conc int) {
	if conc <= 1 {
		return
	}
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() { _, _ = e.get(ctx, e.url("/models")) })
	}
	wg.Wait()
}

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
			w := e.newWorker(sp.proto, nil)
			for ctx.Err() == nil {
				seq := int(next.Add(1) - 1)
				if seq >= n {
					return
				}
				rec := &result.Request{Stage: sp.st.Name, Level: idx, Concurrency: conc, Seq: seq, Warmup: true, Shard: e.shardIndex()}
				j, err := sp.build(idx, seq, true)
				if err != nil {
					rec.Start = time.Now()
					fail(rec, result.ErrMalformed, err.Error())
				} else {
					rec.Nonce = j.nonce
					w.do(ctx, j, rec)
				}
				if !rec.OK {
					e.log.Debug().Str("kind", rec.ErrorKind).Str("error", rec.Error).Msg("warm-up request failed")
				}
				sink.Request(rec)
				if sp.judgeServed(w, rec) {
					return // the API is not served: the stage stops (runLevel)
				}
			}
		})
	}
	wg.Wait()
}
