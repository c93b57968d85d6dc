package history_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/history"
	"github.com/runnerbench/runner/store"
	"github.com/runnerbench/runner/store/synthrun"
)

var day0 = time.Date(2030, 3, 1, 2, 0, 0, 0, time.UTC)

// publish writes one synthetic run per TTFT median into a new SQLite
// database, a day apart, and returns the database.
func publish(t *testing.T, ttft []float64) *store.DB {
	t.Helper()
	specs := make([]synthrun.Spec, len(ttft))
	for i, m := range ttft {
		specs[i] = synthrun.Spec{TTFTMs: m}
	}
	return publishSpecs(t, specs)
}

// publishSpecs writes one synthetic run per spec (300 requests, seeded by
// its place) into a new SQLite database, a day apart.
func publishSpecs(t *testing.T, specs []synthrun.Spec) *store.DB {
	t.Helper()
	ctx := context.Background()
	tg, _ := store.ParseDSN(filepath.Join(t.TempDir(), "h.db"))
	db, err := store.Open(ctx, tg, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for i, sp := range specs {
		dir := filepath.Join(t.TempDir(), fmt.Sprint(i))
		sp.StartedAt, sp.Seed, sp.Requests = day0.Add(time.Duration(i)*24*time.Hour), uint64(i+1), 300
		if err := synthrun.Write(dir, sp); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Publish(ctx, dir); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

func build(t *testing.T, db *store.DB, metrics ...string) *history.History {
	t.Helper()
	ctx := context.Background()
	s, err := db.Series(ctx, store.SeriesQuery{Filter: store.Filter{Plan: "nightly"}, Metrics: metrics})
	if err != nil {
		t.Fatal(err)
	}
	samples := func(run int, stage, label string) (*aggregate.Samples, error) {
		return db.Samples(ctx, s.Runs[run].ID, stage, label)
	}
	h, err := history.Build(s, samples, history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func series(t *testing.T, h *history.History, metric string) *history.Series {
	t.Helper()
	for i := range h.Series {
		if h.Series[i].Metric == metric {
			return &h.Series[i]
		}
	}
	t.Fatalf("no series %s", metric)
	return nil
}

func changes(se *history.Series) []int {
	var out []int
	for _, p := range se.Points {
		if p.Change {
			out = append(out, p.Run)
		}
	}
	return out
}

// TestHistoryFindsAStep: TTFT 30% slower from run 10 on is marked once, in
// the window that holds the new runs, as worse; TPOT, unchanged, is never
// marked; the gate fails on the newest run.
func TestHistoryFindsAStep(t *testing.T) {
	ttft := []float64{100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 130, 130, 130, 130}
	h := build(t, publish(t, ttft), "ttft_p50_ms", "ttft_p95_ms", "tpot_p50_ms", "n_requests")
	se := series(t, h, "ttft_p50_ms")
	got := changes(se)
	if len(got) != 1 || got[0] < 10 || got[0] > 12 {
		t.Fatalf("ttft_p50_ms changes at %v, want one at run 10–12; points %+v", got, se.Points)
	}
	p := se.Points[got[0]]
	if p.Verdict != "worse" || p.Rel == nil || *p.Rel < 0.15 || p.Interval == nil || p.Interval.Lo <= 0 {
		t.Errorf("the change: %+v, want worse by about 30%% with an interval above 0", p)
	}
	if c := changes(series(t, h, "tpot_p50_ms")); len(c) != 0 {
		t.Errorf("tpot_p50_ms, unchanged, marked at %v", c)
	}
	if n := series(t, h, "n_requests"); n.Judged {
		t.Errorf("n_requests (a load metric) is judged")
	}
	if h.Judged != 3 {
		t.Errorf("family of %d series, want 3 (the judged server metrics)", h.Judged)
	}
	if f := h.Failures(0); len(f) == 0 {
		t.Errorf("the gate passes a history whose newest runs are 30%% slower")
	}
}

// TestHistoryIgnoresOneNoisyNight: one run 60% slower among steady ones is
// no change, and neither is a history of identical runs.
func TestHistoryIgnoresOneNoisyNight(t *testing.T) {
	ttft := []float64{100, 100, 100, 100, 100, 100, 100, 160, 100, 100, 100, 100, 100, 100}
	h := build(t, publish(t, ttft), "ttft_p50_ms", "ttft_p95_ms", "tpot_p50_ms", "e2e_p50_ms")
	for _, se := range h.Series {
		if c := changes(&se); len(c) != 0 {
			t.Errorf("%s marked at %v for one noisy night", se.Metric, c)
		}
	}
	if f := h.Failures(0); len(f) != 0 {
		t.Errorf("the gate fails: %+v", f)
	}
}
