package history_test

import (
	"testing"
)

// TestHistoryGateSeesWhatCompareWould: over a long history, the family of
// every window makes each window's interval wide, so the marks are sparing;
// the gate asks only of the newest run, with the newest windows as its
// family, as `runner compare` asks of a run and its baseline, so it still
// fails on a step that the whole history's family cannot mark.
func TestHistoryGateSeesWhatCompareWould(t *testing.T) {
	ttft := make([]float64, 0, 123)
	for range 120 {
		ttft = append(ttft, 100)
	}
	ttft = append(ttft, 106, 106, 106)
	h := build(t, publish(t, ttft), "ttft_p50_ms", "ttft_p95_ms", "tpot_p50_ms", "e2e_p50_ms")
	if h.GateWindows != 4 || h.Windows < 400 {
		t.Fatalf("gate family %d windows (want 4), history %d (want hundreds)", h.GateWindows, h.Windows)
	}
	se := series(t, h, "ttft_p50_ms")
	last := se.Points[len(se.Points)-1]
	t.Logf("history's verdict on the newest window: %s %v; gate's: %s %v", last.Verdict, last.Interval, se.Gate.Verdict, se.Gate.Interval)
	if last.Verdict == "worse" {
		t.Errorf("the whole history's family marked the newest window worse: the test no longer shows the gate's own family")
	}
	failed := map[string]bool{}
	for _, f := range h.Failures(0.03) {
		failed[f.Series.Metric] = true
	}
	if !failed["ttft_p50_ms"] || failed["tpot_p50_ms"] {
		t.Errorf("the gate fails on %v, want ttft_p50_ms (and what holds the first token) but not tpot_p50_ms", failed)
	}
	if c := changes(series(t, h, "tpot_p50_ms")); len(c) != 0 {
		t.Errorf("tpot_p50_ms, unchanged, marked at %v", c)
	}
}
