package runner

import (
	"strings"
	"testing"

	"github.com/runnerbench/runner/sim"
)

// TestLyingUsage: a server whose usage says prompt_tokens -5 and
// completion_tokens 2^62 (the simulator's bad_usage fault, over loopback
// HTTP) has that usage ignored for the request, which counts as if it had
// reported none (its output tokens are its chunks), is counted in the
// level's usage_rejected, and is warned about once for the level.
func TestLyingUsage(t *testing.T) {
	t.Parallel()
	cfg := fastSim()
	cfg.Seed = 5
	cfg.Faults = sim.Faults{BadUsage: 0.5}
	s := startSim(t, cfg)
	e, col := newEngine(t, s.URL(), nil)
	st := stage(6, 4)
	n, w := 40, 0
	st.Requests.Each, st.Warmup = n, &w
	res := runStage(t, e, synthPlan(24, "reference"), st)
	p := res.Points[0]
	lied := 0
	for _, r := range col.measured() {
		tr := truth(t, s, r.Nonce)
		if !r.OK {
			t.Fatalf("seq %d failed (%s): a lie about usage is not a failure", r.Seq, r.Error)
		}
		if tr.Fault != sim.FaultBadUsage {
			if r.UsageRejected != "" || !r.UsageReported || r.InputTokens != tr.PromptTokens {
				t.Errorf("seq %d: honest usage recorded as rejected %q reported %v input %d (sent %d)", r.Seq, r.UsageRejected, r.UsageReported, r.InputTokens, tr.PromptTokens)
			}
			continue
		}
		lied++
		if r.UsageRejected == "" || r.UsageReported || r.InputTokens != 0 || r.OutputTokens != tr.OutputTokens {
			t.Errorf("seq %d: lying usage recorded as rejected %q reported %v input %d output %d (sent %d tokens)",
				r.Seq, r.UsageRejected, r.UsageReported, r.InputTokens, r.OutputTokens, tr.OutputTokens)
		}
	}
	if lied == 0 || lied == n {
		t.Fatalf("the seeded draw gave %d of %d lying streams; pick another seed", lied, n)
	}
	if p.UsageRejected != lied {
		t.Errorf("usage_rejected %d, want %d", p.UsageRejected, lied)
	}
	var warned []string
	for _, w := range p.Warnings {
		if strings.Contains(w, "usage that cannot be true") {
			warned = append(warned, w)
		}
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "is not an integer") && !strings.Contains(warned[0], "negative") {
		t.Errorf("want one warning naming the lie, got %q", p.Warnings)
	}
	if p.MeanInputTokens != nil && *p.MeanInputTokens < 0 {
		t.Errorf("mean input tokens %v: a lie got in", *p.MeanInputTokens)
	}
}
