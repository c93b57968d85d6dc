package aggregate

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runnerbench/runner/result"
)

// sliced is a level of 1 s slices (or width) fed reqs, with its record.
func sliced(t *testing.T, width time.Duration, wall time.Duration, itl []result.ITL, reqs ...*result.Request) result.Point {
	t.Helper()
	l := NewLevel(result.LevelSpec{Concurrency: 2, SliceNs: int64(width)}, 0)
	for _, r := range reqs {
		l.Add(r)
	}
	rec := record(wall, nil)
	rec.Spec.SliceNs = int64(width)
	rec.ITLSlices = itl
	return l.Point(rec)
}

// sent is a request sent at t0+startMs (a success when ok) that took e2eMs.
func sent(startMs, ttftMs, e2eMs float64, tokens int, success bool) *result.Request {
	r := ok(ttftMs, e2eMs, tokens, 0)
	if !success {
		r = fail("http_500", "boom")
		r.E2EMs = e2eMs
	}
	r.Start = t0.Add(time.Duration(startMs * float64(time.Millisecond)))
	return r
}

func gaps(n int, gap time.Duration) result.ITL {
	var t result.ITL
	for range n {
		t.Add(gap)
	}
	return t
}

// TestSlicesByHand: three 1 s slices of a 3 s window, every figure worked
// out by hand.
//
//	A: sent 0.0 s, TTFT 100 ms, E2E 1500 ms, 15 tokens: its first token at
//	   0.1 s, the other 14 evenly over (0.1, 1.5]: 9 in slice 0, 5 in 1.
//	B: sent 0.5 s, TTFT 200 ms, E2E 1000 ms, 9 tokens: first at 0.7 s, the
//	   other 8 over (0.7, 1.5]: 3 in slice 0, 5 in 1.
//	C: sent 2.2 s, failed after 300 ms.
//
// Slice 0: sent 2, tokens 1+9+1+3 = 14, in flight 1.0+0.5 s over 1 s = 1.5,
// at most 2. Slice 1: both end in it (2 completions), tokens 10, in flight
// 0.5+0.5 = 1.0, at most 2 (carried in). Slice 2: C sent and failed, in
// flight 0.3, at most 1. TTFT from 2 requests gives no p50 (it needs 5):
// null, and named in too_few. ITL: 30 gaps of 10 ms in slice 0 give a p50
// and a p95; the 3 of slice 1 give neither.
func TestSlicesByHand(t *testing.T) {
	reqs := []*result.Request{sent(0, 100, 1500, 15, true), sent(500, 200, 1000, 9, true), sent(2200, 0, 300, 0, false)}
	itl := []result.ITL{gaps(30, 10*time.Millisecond), gaps(3, 10*time.Millisecond)}
	p := sliced(t, time.Second, 3*time.Second, itl, reqs...)
	if p.Slices == nil || len(p.Slices.Windows) != 3 {
		t.Fatalf("slices = %+v", p.Slices)
	}
	w := p.Slices.Windows
	type row struct {
		sent, done, failed, peak int
		tps, rps, mean           float64
	}
	want := []row{{2, 0, 0, 2, 14, 0, 1.5}, {0, 2, 0, 2, 10, 2, 1.0}, {1, 0, 1, 1, 0, 0, 0.3}}
	for k, r := range want {
		got := row{w[k].Sent, w[k].Completed, w[k].Failed, w[k].InFlightMax, w[k].OutputTPS, w[k].RequestTPS, w[k].InFlightMean}
		if got != r {
			t.Errorf("slice %d = %+v, want %+v", k, got, r)
		}
		if w[k].StartS != float64(k) || w[k].EndS != float64(k+1) || w[k].Partial {
			t.Errorf("slice %d spans %v–%v (partial %v)", k, w[k].StartS, w[k].EndS, w[k].Partial)
		}
	}
	if w[0].TTFTP50Ms != nil || w[0].TTFTP95Ms != nil || !slices.Contains(w[0].TooFew, "ttft_p50_ms") || !slices.Contains(w[0].TooFew, "e2e_p95_ms") {
		t.Errorf("slice 0 from 2 requests: ttft p50 %v, too_few %v", w[0].TTFTP50Ms, w[0].TooFew)
	}
	if w[0].ITLP50Ms == nil || *w[0].ITLP50Ms != 10 || w[0].ITLP95Ms == nil || *w[0].ITLP95Ms != 10 {
		t.Errorf("slice 0 ITL p50 %v p95 %v, want 10 ms", w[0].ITLP50Ms, w[0].ITLP95Ms)
	}
	if w[1].ITLP50Ms != nil || !slices.Contains(w[1].TooFew, "itl_p50_ms") {
		t.Errorf("slice 1 ITL from 3 gaps: p50 %v, too_few %v", w[1].ITLP50Ms, w[1].TooFew)
	}
	// The slices' tokens are the level's: output_tps_total × the window.
	var tokens float64
	for _, s := range w {
		tokens += s.OutputTPS * (s.EndS - s.StartS)
	}
	if tokens != 24 || p.OutputTPSTotal != 8 {
		t.Errorf("slices hold %v tokens, the level %v tok/s over 3 s", tokens, p.OutputTPSTotal)
	}
	// Two slices under load throughout (full, ended by the last send at
	// 2.2 s) are too few to judge: no verdict, and a null steady.
	if st := p.Slices.Steadiness; st.Judged || st.Steady != nil || p.Steady != nil || !strings.Contains(st.Why, "2 slice(s)") {
		t.Errorf("steadiness %+v, steady %v", st, p.Steady)
	}
	// A partial last slice: a 2.5 s window.
	q := sliced(t, time.Second, 2500*time.Millisecond, nil, reqs...)
	if ws := q.Slices.Windows; len(ws) != 3 || !ws[2].Partial || ws[2].EndS != 2.5 || ws[2].InFlightMean != 0.6 {
		t.Errorf("2.5 s window: %+v", ws)
	}
	if len(q.Slices.Notes) != 1 || !strings.Contains(q.Slices.Notes[0], "no inter-token latency per slice") {
		t.Errorf("records without ITL by slice: notes %q", q.Slices.Notes)
	}
	// Any order of the records gives the same slices, byte for byte.
	want1, _ := json.Marshal(p.Slices)
	for seed := range uint64(5) {
		s := slices.Clone(reqs)
		rand.New(rand.NewPCG(seed, 2)).Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
		got, _ := json.Marshal(sliced(t, time.Second, 3*time.Second, itl, s...).Slices)
		if string(got) != string(want1) {
			t.Fatalf("order %d:\n%s\nwant\n%s", seed, got, want1)
		}
	}
	// Without slices asked for, nothing of it appears.
	if p := finish(Spec{Concurrency: 2}, 3*time.Second, nil, reqs...); p.Slices != nil || p.Steady != nil {
		t.Fatalf("an unsliced level has slices %+v", p.Slices)
	}
}

// level100 is 100 s of an open loop at 4 requests/s (one every 250 ms, each
// 500 ms long) cut into 10 s slices: ttft(i) and tokens(i) give request i's
// TTFT and output tokens.
func level100(t *testing.T, ttft func(i int) float64, tokens func(i int) int) result.Point {
	rng := rand.New(rand.NewPCG(9, 9))
	var reqs []*result.Request
	for i := range 400 {
		reqs = append(reqs, sent(float64(i)*250, ttft(i)+rng.Float64()*10, 500, tokens(i), true))
	}
	return sliced(t, 10*time.Second, 100*time.Second+500*time.Millisecond, nil, reqs...)
}

// TestSteadiness: a steady level is judged steady; a first slice whose TTFT
// is three times the rest's, and an output that falls by a third across the
// level, are each flagged, with a warning that gives the figures.
func TestSteadiness(t *testing.T) {
	steady := level100(t, func(int) float64 { return 100 }, func(int) int { return 50 })
	st := steady.Slices.Steadiness
	if !st.Judged || st.Steady == nil || !*st.Steady || steady.Steady == nil || !*steady.Steady {
		t.Fatalf("a steady level: %+v", st)
	}
	// Judged: the 9 full slices that ended by the last send (99.75 s).
	if st.FromS != 0 || st.ToS != 90 || st.SteadyFromS != 0 || len(st.Tests) != 4 {
		t.Errorf("judged %v–%v, steady from %v, %d tests", st.FromS, st.ToS, st.SteadyFromS, len(st.Tests))
	}
	for _, w := range steady.Warnings {
		if strings.Contains(w, "not steady") {
			t.Errorf("a steady level warned: %s", w)
		}
	}

	warm := level100(t, func(i int) float64 {
		if i < 40 {
			return 300
		}
		return 100
	}, func(int) int { return 50 })
	st = warm.Slices.Steadiness
	if st.Steady == nil || *st.Steady || st.SteadyFromS != 10 {
		t.Fatalf("a slow first slice: %+v", st)
	}
	if !flagged(st, "first", "ttft_p50_ms") || flagged(st, "trend", "output_tps") {
		t.Errorf("a slow first slice: tests %+v", st.Tests)
	}
	if !hasWarning(warm, "not steady", "first slice TTFT p50 3") {
		t.Errorf("warnings %q", warm.Warnings)
	}

	drift := level100(t, func(int) float64 { return 100 }, func(i int) int { return 60 - i*20/400 })
	st = drift.Slices.Steadiness
	if st.Steady == nil || *st.Steady || !flagged(st, "trend", "output_tps") || flagged(st, "first", "ttft_p50_ms") {
		t.Fatalf("an output drifting down by a third: %+v", st)
	}
	if !hasWarning(drift, "not steady", "output_tps went from") {
		t.Errorf("warnings %q", drift.Warnings)
	}
}

func flagged(st result.Steadiness, test, metric string) bool {
	for _, x := range st.Tests {
		if x.Test == test && x.Metric == metric {
			return x.Flagged
		}
	}
	return false
}

func hasWarning(p result.Point, parts ...string) bool {
	for _, w := range p.Warnings {
		all := true
		for _, s := range parts {
			all = all && strings.Contains(w, s)
		}
		if all {
			return true
		}
	}
	return false
}

// TestSliceMeans: the hook for telemetry puts each sample in its slice and
// averages them; samples outside the window, and slices without samples,
// are left out.
func TestSliceMeans(t *testing.T) {
	p := sliced(t, time.Second, 3*time.Second, nil, sent(0, 100, 1500, 15, true))
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	SliceMeans(p.Slices, "gpu_power_w", []time.Time{at(-10), at(100), at(900), at(1000), at(3000)}, []float64{999, 100, 200, 50, 999})
	w := p.Slices.Windows
	if w[0].Series["gpu_power_w"] != 150 || w[1].Series["gpu_power_w"] != 50 || w[2].Series != nil {
		t.Fatalf("series by slice: %v %v %v", w[0].Series, w[1].Series, w[2].Series)
	}
}
