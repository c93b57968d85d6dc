package history_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/history"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/store"
	"github.com/runnerbench/runner/store/synthrun"
)

// historyOf builds the history of specs' runs (publishSpecs) for their
// output throughput, TTFT and TPOT, with o.
func historyOf(t *testing.T, specs []synthrun.Spec, o history.Options) *history.History {
	t.Helper()
	ctx := context.Background()
	db := publishSpecs(t, specs)
	s, err := db.Series(ctx, store.SeriesQuery{Filter: store.Filter{Plan: "nightly"}, Metrics: []string{"output_tps_total", "ttft_p50_ms", "tpot_p50_ms"}})
	if err != nil {
		t.Fatal(err)
	}
	samples := func(run int, stage, label string) (*aggregate.Samples, error) {
		return db.Samples(ctx, s.Runs[run].ID, stage, label)
	}
	h, err := history.Build(s, samples, o)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// engineSwitch is the history: 8 nights of one engine (the
// simulator, TPOT 10 ms), then 3 of another five times faster per token,
// labelled engine=llama and at another base URL; every night labelled by
// its number.
func engineSwitch() []synthrun.Spec {
	var specs []synthrun.Spec
	for i := range 11 {
		sp := synthrun.Spec{TPOTMs: 10, Labels: map[string]string{"night": fmt.Sprint(i + 1)}}
		if i >= 8 {
			sp.TPOTMs = 2
			sp.Labels["engine"] = "llama"
			sp.Endpoint = result.Endpoint{Name: "sim", BaseURL: "http://127.0.0.1:8081/v1", Model: "synthetic"}
		}
		specs = append(specs, sp)
	}
	return specs
}

// TestHistorySplitsAtAnEngineSwitch (issue 38, item 2): runs of another
// engine (another label and endpoint) are another series, so the switch is
// no change mark, and the note names the run where it happened and what
// changed; the gate does not fail on it. The same nights with nothing but
// TPOT changed are one series (night told apart by --replicate-label), and
// there the change is marked as better, at the runs where it happened.
func TestHistorySplitsAtAnEngineSwitch(t *testing.T) {
	h := historyOf(t, engineSwitch(), history.Options{Replicate: []string{"night"}})
	var tps []*history.Series
	for i := range h.Series {
		se := &h.Series[i]
		if c := changes(se); len(c) != 0 {
			t.Errorf("%s %s marked at %v across the engine switch", se.LevelName(), se.Metric, c)
		}
		if se.Metric == "output_tps_total" {
			tps = append(tps, se)
		}
	}
	if len(tps) != 2 || len(tps[0].Points) != 8 || len(tps[1].Points) != 3 || tps[0].Distinct == tps[1].Distinct ||
		!strings.Contains(tps[1].Distinct, "engine=llama") || !strings.Contains(tps[1].Distinct, "endpoint http://127.0.0.1:8081/v1") {
		t.Fatalf("output_tps_total series: %d, want 8 runs of one engine and 3 of the other, named apart", len(tps))
	}
	if len(h.Notes) != 1 || !strings.Contains(h.Notes[0], "at 2030-03-09 02:00 (endpoint the built-in simulator → http://127.0.0.1:8081/v1, label engine=llama added)") {
		t.Errorf("notes %q", h.Notes)
	}
	if f := h.Failures(0); len(f) != 0 {
		t.Errorf("the gate fails across the switch: %+v", f)
	}
	var out strings.Builder
	if err := h.Text(&out, "nightly", nil); err != nil || !strings.Contains(out.String(), "sweep c=4 · engine=llama") || strings.Contains(out.String(), "better") {
		t.Errorf("text: %v\n%s", err, out.String())
	}

	// One engine throughout, five times faster per token from night 9:
	// a change, found.
	same := engineSwitch()
	for i := range same {
		delete(same[i].Labels, "engine")
		same[i].Endpoint = result.Endpoint{}
	}
	h = historyOf(t, same, history.Options{Replicate: []string{"night"}})
	if len(h.Notes) != 0 {
		t.Errorf("one identity noted: %q", h.Notes)
	}
	for i := range h.Series {
		se := &h.Series[i]
		if se.Metric != "output_tps_total" {
			continue
		}
		if c := changes(se); len(c) != 1 || c[0] < 8 || se.Points[c[0]].Verdict != "better" {
			t.Errorf("output_tps_total five times higher from night 9: changes at %v", c)
		}
	}
}
