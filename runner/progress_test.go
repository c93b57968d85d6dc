package runner

import (
	"math"
	"sync"
	"testing"
	"time"

	"github.com/runnerbench/runner/scenario"
)

// TestProgressMedians: over real loopback HTTP, the live progress carries
// the level's TTFT and ITL medians so far (its last snapshot within 15% of
// the point's exact medians, the same requests: the estimate's buckets are
// at most 12.5% wide) and, for a level bounded by its duration, that
// duration, so the line can say how far through it is.
func TestProgressMedians(t *testing.T) {
	t.Parallel()
	cfg := fastSim()
	cfg.ITLMs = 2
	s := startSim(t, cfg)
	e, _ := newEngine(t, s.URL(), nil)
	var mu sync.Mutex
	var last []Progress
	e.opts.OnProgress = func(p Progress) {
		mu.Lock()
		last = append(last, p)
		mu.Unlock()
	}
	st := stage(8, 2)
	n, w := 12, 0
	st.Requests.Each, st.Warmup = n, &w
	res := runStage(t, e, synthPlan(24, "reference"), st)
	mu.Lock()
	final := last[len(last)-1]
	mu.Unlock()
	pt := res.Points[0]
	if final.Done != n || final.Total != n || final.Duration != 0 {
		t.Errorf("final progress %+v: want %d of %d requests, no duration", final, n, n)
	}
	for _, m := range []struct {
		name       string
		live, want float64
	}{{"TTFT", final.TTFTP50Ms, *pt.TTFTP50Ms}, {"ITL", final.ITLP50Ms, *pt.ITLP50Ms}} {
		if m.live <= 0 || math.Abs(m.live-m.want) > 0.15*m.want {
			t.Errorf("live %s p50 %.3f ms, the level's is %.3f ms", m.name, m.live, m.want)
		}
	}

	timed := stage(4, 1)
	timed.Duration, timed.Warmup = scenario.Duration(300*time.Millisecond), &w
	mu.Lock()
	last = nil
	mu.Unlock()
	runStage(t, e, synthPlan(24, "reference"), timed)
	mu.Lock()
	defer mu.Unlock()
	if len(last) == 0 || last[len(last)-1].Duration != 300*time.Millisecond || last[len(last)-1].Total != 0 {
		t.Errorf("a duration-bounded level's progress %+v: want Duration 300ms, no request total", last)
	}
}
