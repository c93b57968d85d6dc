package aggregate_test

import (
	"fmt"
	"sync"
	"time"

	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/runner/aggregate"
)

// A level: one shard per worker, ITL samples and finished requests recorded
// without locks, then Finish merges them.
func ExampleLevel() {
	level := aggregate.NewLevel(aggregate.Spec{Concurrency: 2, InputTokens: 100, OutputTokens: 3, Pinned: true})
	var wg sync.WaitGroup
	for w := range 2 {
		shard := level.NewShard()
		wg.Go(func() {
			ttft := float64(20 + 10*w)
			shard.AddITL(5)
			shard.AddITL(7)
			tpot := 6.0
			shard.Add(&result.Request{Seq: w, OK: true, TTFTMs: &ttft, TPOTMs: &tpot, E2EMs: ttft + 12, OutputTokens: 3, InputTokens: 100})
		})
	}
	wg.Wait()
	p := level.Finish(100*time.Millisecond, nil)
	fmt.Println(p.Completed, p.OutputTPSTotal, *p.TTFTP50Ms, *p.ITLMaxMs, *p.PrefillTPS, p.LowConfidence[0])
	// Output: 2 60 20 7 4000 ttft_p50_ms
}
