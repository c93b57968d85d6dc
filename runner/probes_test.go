package runner

import (
	"testing"
	"time"

	"github.com/runnerbench/runner/scenario"
)

// Probe requests go out at their rate beside a level's load, small and
// fixed (their prompt and pinned answer the probe's, not the stage's), and
// are reported apart: the level's point counts only its load, the probes'
// point follows it (c=4 probes). Under a load that fills the simulator's
// two slots, a probe waits in its queue: its TTFT is that of a new user at
// this load, far above the TTFT of a probe at no load.
func TestProbeRequests(t *testing.T) {
	cfg := fastSim()
	cfg.MaxNumSeqs = 2
	cfg.ITLMs = 5
	s := startSim(t, cfg)
	e, col := newEngine(t, s.URL(), nil)
	st := stage(100, 4) // four streams of 100 tokens on two slots: a queue
	st.Duration = scenario.Duration(2 * time.Second)
	st.Probe = &scenario.Probe{Rate: 5, InputTokens: 16, OutputTokens: 4}
	res := runStage(t, e, synthPlan(64, "reference"), st)
	if len(res.Points) != 2 {
		t.Fatalf("%d points, want the level's and its probes'", len(res.Points))
	}
	lvl, pr := res.Points[0], res.Points[1]
	if pr.Label() != "c=4 probes" || !pr.ProbeRequests || pr.OutputTokens != 4 || pr.InputTokens != 16 {
		t.Fatalf("probe point %s (probes %v) asked %d in, %d out", pr.Label(), pr.ProbeRequests, pr.InputTokens, pr.OutputTokens)
	}
	probes, load := 0, 0
	for _, r := range col.measured() {
		if r.ProbeRequest {
			probes++
			if r.MaxTokens != 4 || (r.OK && r.OutputTokens != 4) {
				t.Errorf("probe %d asked for %d tokens, got %d", r.Seq, r.MaxTokens, r.OutputTokens)
			}
			continue
		}
		load++
	}
	// Five a second over a window of about two seconds (more while the
	// last requests of the load finish).
	if pr.NRequests != probes || probes < 8 || probes > 20 || lvl.NRequests != load {
		t.Errorf("%d probes (point %d), %d requests of the load (point %d)", probes, pr.NRequests, load, lvl.NRequests)
	}
	if pr.Failed != 0 || pr.TTFTP50Ms == nil || lvl.TTFTP50Ms == nil {
		t.Fatalf("probes: %d failed, TTFT p50 %v", pr.Failed, pr.TTFTP50Ms)
	}
	// At no load a probe's TTFT is the simulator's 5 ms step; behind two
	// busy slots it waits for one to free (up to 100 × 5 ms).
	if *pr.TTFTP50Ms < 50 {
		t.Errorf("probe TTFT p50 %.1f ms under a load that fills every slot: it did not wait", *pr.TTFTP50Ms)
	}
	// One stream of load leaves a slot free: the probes see no queue.
	st = stage(100, 1)
	st.Duration = scenario.Duration(time.Second)
	st.Probe = &scenario.Probe{Rate: 5, InputTokens: 16, OutputTokens: 4}
	light := runStage(t, e, synthPlan(64, "reference"), st).Points[1]
	if light.TTFTP50Ms == nil || *light.TTFTP50Ms > 40 {
		t.Errorf("probe TTFT p50 %v ms beside one stream on two slots: want no wait", light.TTFTP50Ms)
	}
	t.Logf("probe TTFT p50: %.1f ms beside 4 streams on 2 slots, %.1f ms beside 1", *pr.TTFTP50Ms, *light.TTFTP50Ms)
}
