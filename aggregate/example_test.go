package aggregate_test

import (
	"fmt"
	"time"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/result"
)

// A level: its measured requests are added as they finish (in any order,
// from any goroutine), and its record gives the window and the token gaps.
func ExampleLevel() {
	level := aggregate.NewLevel(result.LevelSpec{Concurrency: 2, InputTokens: 100, OutputTokens: 3, Pinned: true}, 0)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rec := &result.LevelRecord{Start: start, End: start.Add(100 * time.Millisecond), WallNs: int64(100 * time.Millisecond)}
	for w := range 2 {
		ttft := float64(20 + 10*w)
		tpot := 6.0
		level.Add(&result.Request{Seq: w, OK: true, TTFTMs: &ttft, TPOTMs: &tpot, E2EMs: ttft + 12, OutputTokens: 3, InputTokens: 100, MaxTokens: 3})
		rec.ITL.Add(5 * time.Millisecond)
		rec.ITL.Add(7 * time.Millisecond)
	}
	p := level.Point(rec)
	fmt.Println(p.Completed, p.OutputTPSTotal, *p.TTFTP50Ms, *p.ITLMaxMs, *p.PrefillTPS, p.LowConfidence[0])
	// Output: 2 60 20 7 4000 ttft_p50_ms
}
