package aggregate

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runnerbench/runner/internal/hist"
	"github.com/runnerbench/runner/result"
)

// Spec is a level's spec with its exact limit, the shape the tests write.
type Spec struct {
	Concurrency      int
	Rate             *float64
	InputTokens      int
	OutputTokens     int
	Pinned           bool
	SLO              *SLO
	ExpectPrefixHits bool
	ExactLimit       int
	Turns            int
}

// SLO is result.SLO.
type SLO = result.SLO

func newLevel(s Spec) *Level {
	return NewLevel(result.LevelSpec{
		Concurrency: s.Concurrency, Rate: s.Rate, InputTokens: s.InputTokens, OutputTokens: s.OutputTokens,
		Pinned: s.Pinned, SLO: s.SLO, ExpectPrefixHits: s.ExpectPrefixHits, Turns: s.Turns,
	}, s.ExactLimit)
}

// t0 is a fixed window start, so records (and their points) are reproducible.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func record(wall time.Duration, d *result.ServerDelta) *result.LevelRecord {
	return &result.LevelRecord{Start: t0, End: t0.Add(wall), WallNs: int64(wall), Server: d}
}

func f(v float64) *float64 { return &v }

// ok builds a successful request record.
func ok(ttft, e2e float64, out, in int) *result.Request {
	r := &result.Request{OK: true, TTFTMs: f(ttft), E2EMs: e2e, OutputTokens: out, InputTokens: in, UsageReported: in > 0}
	if out >= 2 {
		r.TPOTMs = f((e2e - ttft) / float64(out-1))
	}
	return r
}

func fail(kind, msg string) *result.Request {
	return &result.Request{OK: false, ErrorKind: kind, Error: msg, E2EMs: 5}
}

func finish(spec Spec, wall time.Duration, d *result.ServerDelta, reqs ...*result.Request) result.Point {
	l := newLevel(spec)
	for _, r := range reqs {
		l.Add(r)
	}
	return l.Point(record(wall, d))
}

func eqPtr(t *testing.T, name string, got *float64, want any) {
	t.Helper()
	switch w := want.(type) {
	case nil:
		if got != nil {
			t.Errorf("%s = %v, want null", name, *got)
		}
	case float64:
		if got == nil {
			t.Errorf("%s = null, want %v", name, w)
		} else if *got != w {
			t.Errorf("%s = %v, want %v", name, *got, w)
		}
	default:
		t.Fatalf("bad want type %T", want)
	}
}

// TestFinishReferenceFields checks every reference field on a level computed
// by hand. Pinned, 4 output tokens requested, 100 input tokens requested:
//
//	r1 TTFT 10 E2E 100 out 4 in 100   TPOT (100−10)/3 = 30
//	r2 TTFT 20 E2E 200 out 4 in 102   TPOT 60
//	r3 TTFT 30 E2E 250 out 5 in 0     TPOT 55   (5 ≠ 4: ignore_eos not honoured)
//	r4 TTFT 40 E2E 400 out 4 in 104   TPOT 120
//	r5 failed http_500 "boom"; wall 1.5 s
//
// output_tps_total = 17/1.5 = 11.333… → 11.33; per stream = mean(40, 20, 20,
// 10) = 22.5; TTFT p50 index round(0.5·3 = 1.5) = 2 → 30, p95 index
// round(2.85) = 3 → 40; TPOT sorted (30, 55, 60, 120) p50 → 60; prefill =
// mean(100, 102, 104) / (25 ms / 1000) = 102/0.025 = 4080.0.
func TestFinishReferenceFields(t *testing.T) {
	spec := Spec{Concurrency: 4, InputTokens: 100, OutputTokens: 4, Pinned: true}
	p := finish(spec, 1500*time.Millisecond, nil,
		ok(10, 100, 4, 100), ok(20, 200, 4, 102), ok(30, 250, 5, 0), fail("http_500", "boom"), ok(40, 400, 4, 104))

	if p.Concurrency != 4 || p.InputTokens != 100 || p.OutputTokens != 4 {
		t.Errorf("nominal fields: %d %d %d", p.Concurrency, p.InputTokens, p.OutputTokens)
	}
	if p.NRequests != 5 || p.Completed != 4 || p.Failed != 1 {
		t.Errorf("counts: n=%d completed=%d failed=%d", p.NRequests, p.Completed, p.Failed)
	}
	if p.DurationS != 1.5 || p.OutputTPSTotal != 11.33 || p.OutputTPSPerStream != 22.5 {
		t.Errorf("duration %v tps %v per-stream %v", p.DurationS, p.OutputTPSTotal, p.OutputTPSPerStream)
	}
	eqPtr(t, "ttft_p50_ms", p.TTFTP50Ms, 30.0)
	eqPtr(t, "ttft_p95_ms", p.TTFTP95Ms, 40.0)
	eqPtr(t, "tpot_p50_ms", p.TPOTP50Ms, 60.0)
	eqPtr(t, "prefill_tps", p.PrefillTPS, 4080.0)
	eqPtr(t, "spec_acceptance_rate", p.SpecAcceptanceRate, nil)
	if p.SpecDraftTokens != nil {
		t.Errorf("spec_draft_tokens = %d, want null", *p.SpecDraftTokens)
	}
	if p.NaturalStop {
		t.Error("natural_stop true in pinned mode")
	}
	eqPtr(t, "output_token_stdev", p.OutputTokenStdev, nil)
	if p.Error == nil || *p.Error != "http_500: boom" {
		t.Errorf("error = %v", p.Error)
	}

	// Added fields on the same level.
	if p.OutputLenMismatch != 1 || len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "ignore_eos") {
		t.Errorf("mismatch %d, warnings %q", p.OutputLenMismatch, p.Warnings)
	}
	if p.RequestTPS != 2.667 || p.AchievedRate != nil || p.Rate != nil {
		t.Errorf("request_tps %v achieved %v rate %v", p.RequestTPS, p.AchievedRate, p.Rate)
	}
	eqPtr(t, "mean_input_tokens", p.MeanInputTokens, 102.0)
	eqPtr(t, "mean_output_tokens", p.MeanOutputTokens, 4.25)
	eqPtr(t, "ttft_mean_ms", p.TTFTMeanMs, 25.0)
	eqPtr(t, "ttft_max_ms", p.TTFTMaxMs, 40.0)
	eqPtr(t, "ttft_p90_ms", p.TTFTP90Ms, 40.0) // round(2.7) = 3
	eqPtr(t, "tpot_mean_ms", p.TPOTMeanMs, 66.25)
	eqPtr(t, "e2e_p50_ms", p.E2EP50Ms, 250.0)
	eqPtr(t, "e2e_max_ms", p.E2EMaxMs, 400.0)
	eqPtr(t, "ttfat_p50_ms", p.TTFATP50Ms, 30.0) // no reasoning: the first token was the answer
	eqPtr(t, "goodput", p.Goodput, nil)
	eqPtr(t, "max_tokens_hit_rate", p.MaxTokensHitRate, nil) // pinned mode
	if p.MaxInFlight != nil {
		t.Errorf("max_in_flight = %d from records without send times, want null", *p.MaxInFlight)
	}
	if !reflect.DeepEqual(p.ErrorsByKind, map[string]int{"http_500": 1}) ||
		!reflect.DeepEqual(p.ErrorSamples, map[string]string{"http_500": "boom"}) {
		t.Errorf("errors by kind %v samples %v", p.ErrorsByKind, p.ErrorSamples)
	}
	// Four samples: every percentile is below its minimum count.
	for _, m := range []string{"ttft_p50_ms", "ttft_p95_ms", "tpot_p50_ms", "e2e_p99_ms", "dispatch_lag_p99_ms"} {
		if !slices.Contains(p.LowConfidence, m) {
			t.Errorf("%s not flagged low-confidence: %v", m, p.LowConfidence)
		}
	}
	if len(p.TTFTHist) == 0 {
		t.Error("no TTFT histogram")
	}
}

// TestFinishHalfwayPercentiles: the reference's index rule on small levels.
func TestFinishHalfwayPercentiles(t *testing.T) {
	ttfts := func(vs ...float64) []*result.Request {
		var rs []*result.Request
		for _, v := range vs {
			rs = append(rs, ok(v, v+100, 10, 0))
		}
		return rs
	}
	cases := []struct {
		name     string
		vals     []float64
		p50, p95 float64
	}{
		// n=2: p50 index round(0.5) = 0 (to even): the lower sample.
		{"n2", []float64{20, 10}, 10, 20},
		// n=3: p50 index 1; p95 index round(1.9) = 2.
		{"n3", []float64{30, 10, 20}, 20, 30},
		// n=4: p50 index round(1.5) = 2.
		{"n4", []float64{1, 2, 3, 4}, 3, 4},
		// n=6: p50 index round(2.5) = 2.
		{"n6", []float64{6, 5, 4, 3, 2, 1}, 3, 6},
		// n=11: p95 index round(9.5) = 10, the maximum.
		{"n11", []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 5, 10},
		// n=21: p95 index 19, below the maximum.
		{"n21", []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}, 10, 19},
		// Rounding of the chosen sample: ties to even on the binary value.
		{"round", []float64{0.125, 0.375, 2.675}, 0.38, 2.67},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := finish(Spec{}, time.Second, nil, ttfts(c.vals...)...)
			eqPtr(t, "ttft_p50_ms", p.TTFTP50Ms, c.p50)
			eqPtr(t, "ttft_p95_ms", p.TTFTP95Ms, c.p95)
		})
	}
}

// TestFinishNaturalAndSLO: natural mode reports the spread of output lengths
// (sample stdev of 3, 5, 7, 10 = 2.986… → 2.99), and goodput counts every
// measured request, failures included, against every set bound.
func TestFinishNaturalAndSLO(t *testing.T) {
	spec := Spec{Concurrency: 2, InputTokens: 50, OutputTokens: 16, SLO: &SLO{TTFTMs: 25, E2EMs: 300}}
	p := finish(spec, 2*time.Second, nil,
		ok(10, 100, 3, 0),  // meets both
		ok(20, 300, 5, 0),  // meets both (bounds are inclusive)
		ok(30, 250, 7, 0),  // TTFT over
		ok(15, 400, 10, 0), // E2E over
		fail("timeout", "no first token in 30s"))
	if !p.NaturalStop {
		t.Error("natural_stop false in natural mode")
	}
	eqPtr(t, "output_token_stdev", p.OutputTokenStdev, 2.99)
	eqPtr(t, "goodput", p.Goodput, 0.4) // 2 of 5
	if p.OutputLenMismatch != 0 || len(p.Warnings) != 0 {
		t.Errorf("natural mode flagged mismatches: %d %q", p.OutputLenMismatch, p.Warnings)
	}
	// No input tokens reported: prefill uses the requested 50 over mean TTFT
	// 18.75 ms → 50/0.01875 = 2666.666… → 2666.7.
	eqPtr(t, "prefill_tps", p.PrefillTPS, 2666.7)
	eqPtr(t, "mean_input_tokens", p.MeanInputTokens, nil)

	// A one-token success has no TPOT and is not judged on a TPOT bound.
	one := ok(5, 6, 1, 0)
	p = finish(Spec{SLO: &SLO{TPOTMs: 1}}, time.Second, nil, one, ok(5, 105, 11, 0))
	eqPtr(t, "goodput", p.Goodput, 0.5)
	// An all-zero SLO is no SLO.
	p = finish(Spec{SLO: &SLO{}}, time.Second, nil, one)
	eqPtr(t, "goodput", p.Goodput, nil)
}

// TestFinishOpenLoopAndLag: achieved rate and dispatch lag.
func TestFinishOpenLoopAndLag(t *testing.T) {
	rate := 4.0
	var rs []*result.Request
	for i := range 8 {
		r := ok(10, 50, 4, 0)
		r.DispatchLagMs = float64(i) // 0..7
		r.Start = t0.Add(time.Duration(i) * 300 * time.Millisecond)
		rs = append(rs, r)
	}
	p := finish(Spec{Rate: &rate}, 3*time.Second, nil, rs...)
	eqPtr(t, "rate", p.Rate, 4.0)
	eqPtr(t, "achieved_rate", p.AchievedRate, 3.333) // 7 gaps over 2.1 s of sends
	eqPtr(t, "dispatch_lag_p99_ms", p.DispatchLagP99Ms, 7.0)
	eqPtr(t, "dispatch_lag_max_ms", p.DispatchLagMaxMs, 7.0)
	// p95 of 8 is flagged; p50 of 8 is not.
	if !slices.Contains(p.LowConfidence, "ttft_p95_ms") || slices.Contains(p.LowConfidence, "ttft_p50_ms") {
		t.Errorf("low confidence = %v", p.LowConfidence)
	}
}

// TestFinishEmpty: a level where everything failed has null latency metrics
// and zero rates, never a NaN.
func TestFinishEmpty(t *testing.T) {
	p := finish(Spec{Concurrency: 1}, 0, nil, fail("", ""), fail("connect", "refused"))
	if p.Completed != 0 || p.Failed != 2 || p.OutputTPSTotal != 0 || p.OutputTPSPerStream != 0 || p.RequestTPS != 0 {
		t.Errorf("empty level: %+v", p)
	}
	for name, v := range map[string]*float64{"ttft_p50": p.TTFTP50Ms, "tpot_p50": p.TPOTP50Ms, "prefill": p.PrefillTPS, "itl_p50": p.ITLP50Ms, "mean_out": p.MeanOutputTokens} {
		if v != nil {
			t.Errorf("%s = %v, want null", name, *v)
		}
	}
	if p.Error == nil || *p.Error != "unknown" {
		t.Errorf("error = %v, want the first failure", p.Error)
	}
	if !reflect.DeepEqual(p.ErrorsByKind, map[string]int{"unknown": 1, "connect": 1}) {
		t.Errorf("errors by kind %v", p.ErrorsByKind)
	}
	// The first failure is the first dispatched (the reference's failed[0]),
	// even when a later one completed first.
	late, early := fail("http_429", "late"), fail("http_500", "early")
	late.Seq, early.Seq = 9, 3
	p = finish(Spec{}, time.Second, nil, late, early)
	if p.Error == nil || *p.Error != "http_500: early" {
		t.Errorf("error = %v, want the first dispatched failure", p.Error)
	}
	p = finish(Spec{}, time.Second, nil)
	if p.NRequests != 0 || p.ErrorsByKind == nil {
		t.Errorf("no requests: %+v", p)
	}
	newLevel(Spec{}).Add(nil) // must not panic
}

// TestFinishServerDelta: the server's counters over the window.
func TestFinishServerDelta(t *testing.T) {
	d := &result.ServerDelta{
		SpecDrafts: f(40), SpecDraftTokens: f(100), SpecAcceptedTokens: f(70),
		PrefixCacheQueries: f(1000), PrefixCacheHits: f(500),
		Counters: map[string]float64{"vllm:prompt_tokens": 1000},
	}
	p := finish(Spec{}, time.Second, d, ok(10, 20, 2, 0))
	eqPtr(t, "spec_acceptance_rate", p.SpecAcceptanceRate, 0.7)
	if p.SpecDraftTokens == nil || *p.SpecDraftTokens != 100 {
		t.Errorf("spec_draft_tokens = %v", p.SpecDraftTokens)
	}
	eqPtr(t, "spec_acceptance_length", p.SpecAcceptanceLength, 2.75) // 1 + 70/40
	eqPtr(t, "prefix_cache_hit_rate", p.PrefixCacheHitRate, 0.5)
	if len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "nonce") {
		t.Errorf("no prefix-cache warning: %q", p.Warnings)
	}
	if p.ServerCounters["vllm:prompt_tokens"] != 1000 {
		t.Errorf("server counters %v", p.ServerCounters)
	}
	p = finish(Spec{ExpectPrefixHits: true}, time.Second, d, ok(10, 20, 2, 0))
	if len(p.Warnings) != 0 {
		t.Errorf("warned although prefix hits were expected: %q", p.Warnings)
	}
	// Zero drafted tokens: the reference reports null, not 0.
	p = finish(Spec{}, time.Second, &result.ServerDelta{SpecDraftTokens: f(0), SpecAcceptedTokens: f(0)}, ok(10, 20, 2, 0))
	if p.SpecDraftTokens != nil || p.SpecAcceptanceRate != nil {
		t.Errorf("zero drafts: %v %v", p.SpecDraftTokens, p.SpecAcceptanceRate)
	}
}

// TestFinishServerTimingsAndReconnects: the TTFT overhead is client TTFT
// minus the server's prompt_ms over the successes that carry timings, with
// the reference's percentile rule and the low-confidence marks; reconnects
// count every re-sent request, failed ones too.
//
//	TTFT 10, 20, 30, 40, 50 with prompt_ms 4, 8, 12, 16, 20 → overhead 6, 12, 18, 24, 30
//	(a sixth success without timings and a failure do not count)
//	p50 index round(0.5·4) = 2 → 18; p95 index round(3.8) = 4 → 30
func TestFinishServerTimingsAndReconnects(t *testing.T) {
	var reqs []*result.Request
	for i := 1; i <= 5; i++ {
		r := ok(float64(10*i), 100, 4, 10)
		r.ServerTimings = &result.ServerTimings{PromptN: 10, PromptMs: float64(4 * i), PredictedN: 4}
		r.Reconnected = i%2 == 0
		reqs = append(reqs, r)
	}
	reqs = append(reqs, ok(1000, 2000, 4, 10))
	failed := fail("connect", "EOF")
	failed.Reconnected = true
	reqs = append(reqs, failed)
	p := finish(Spec{}, time.Second, nil, reqs...)
	eqPtr(t, "ttft_overhead_p50_ms", p.TTFTOverheadP50Ms, 18.0)
	eqPtr(t, "ttft_overhead_p95_ms", p.TTFTOverheadP95Ms, 30.0)
	if p.Reconnects != 3 {
		t.Errorf("reconnects = %d, want 3", p.Reconnects)
	}
	if !slices.Contains(p.LowConfidence, "ttft_overhead_p95_ms") || slices.Contains(p.LowConfidence, "ttft_overhead_p50_ms") {
		t.Errorf("low confidence %q: want the p95 of 5 samples marked, not the p50", p.LowConfidence)
	}
	// Without timings the overhead is unknown, not zero.
	p = finish(Spec{}, time.Second, nil, ok(10, 20, 2, 0))
	eqPtr(t, "ttft_overhead_p50_ms", p.TTFTOverheadP50Ms, nil)
	eqPtr(t, "ttft_overhead_p95_ms", p.TTFTOverheadP95Ms, nil)
	if p.Reconnects != 0 {
		t.Errorf("reconnects = %d, want 0", p.Reconnects)
	}
}

// TestITL: inter-token gaps come from the level's record: percentiles from
// its histogram, count, mean and max exact.
func TestITL(t *testing.T) {
	rec := record(time.Second, nil)
	var all []float64
	for i := 1; i <= 1000; i++ { // 1..1000 ms
		rec.ITL.Add(time.Duration(i) * time.Millisecond)
		all = append(all, float64(i))
	}
	rec.ITL.Add(-time.Millisecond) // a clock step back counts as 0, not negative
	all = append([]float64{0}, all...)
	l := newLevel(Spec{})
	p := l.Point(rec)
	for _, c := range []struct {
		name string
		got  *float64
		q    float64
	}{{"p50", p.ITLP50Ms, 0.5}, {"p90", p.ITLP90Ms, 0.9}, {"p95", p.ITLP95Ms, 0.95}, {"p99", p.ITLP99Ms, 0.99}} {
		exact := all[hist.Index(c.q, len(all))]
		if c.got == nil || math.Abs(*c.got-exact) > exact*0.0005+0.01 {
			t.Errorf("itl %s = %v, exact %v", c.name, c.got, exact)
		}
	}
	eqPtr(t, "itl_max_ms", p.ITLMaxMs, 1000.0)
	eqPtr(t, "itl_mean_ms", p.ITLMeanMs, 500.0) // 500500 / 1001
	var n int64
	for _, b := range p.ITLHist {
		n += b.Count
	}
	if n != 1001 {
		t.Errorf("ITL chart holds %d samples, want 1001", n)
	}
	if len(p.ITLHist) < 10 {
		t.Errorf("ITL chart has %d bars; a spread over three decades needs more", len(p.ITLHist))
	}
	// Point twice gives the same point (nothing double counted).
	if q := l.Point(rec); !reflect.DeepEqual(p, q) {
		t.Error("second Point differs")
	}
	// Merging records gives what one record of every gap gives.
	a, b := record(time.Second, nil), record(time.Second, nil)
	for i := range 300 {
		d := time.Duration(i*i) * time.Microsecond
		if i%2 == 0 {
			a.ITL.Add(d)
		} else {
			b.ITL.Add(d)
		}
		rec.ITL.Add(d)
	}
	whole := record(time.Second, nil)
	whole.ITL.Merge(&a.ITL)
	whole.ITL.Merge(&b.ITL)
	one := record(time.Second, nil)
	for i := range 300 {
		one.ITL.Add(time.Duration(i*i) * time.Microsecond)
	}
	if x, y := l.Point(whole), l.Point(one); !reflect.DeepEqual(x, y) {
		t.Errorf("merged ITL differs:\n%+v\n%+v", x, y)
	}
}

// randomRequests is a reproducible mixed level.
func randomRequests(n int, seed uint64) []*result.Request {
	r := rand.New(rand.NewPCG(seed, 7))
	kinds := []string{"http_429", "timeout", "connect"}
	rs := make([]*result.Request, n)
	for i := range rs {
		if r.IntN(10) == 0 {
			k := kinds[r.IntN(len(kinds))]
			rs[i] = fail(k, fmt.Sprintf("%s sample %d", k, i))
			rs[i].Seq = i
			continue
		}
		ttft := 5 + r.ExpFloat64()*40
		q := ok(ttft, ttft+r.Float64()*2000, 1+r.IntN(300), 100+r.IntN(50))
		q.TTFATMs = f(ttft + r.Float64()*10)
		q.DispatchLagMs = r.Float64() * 3
		q.Seq = i
		rs[i] = q
	}
	return rs
}

// TestOrderFree: the same requests in any order, and added concurrently,
// give the same Point, exact or past the exact limit: which is what lets a
// report be recomputed from requests.jsonl and merged from shards.
func TestOrderFree(t *testing.T) {
	reqs := randomRequests(2000, 1)
	for _, limit := range []int{0, 300} { // exact, and spilled past 300
		spec := Spec{Concurrency: 7, InputTokens: 120, OutputTokens: 300, SLO: &SLO{TTFTMs: 50}, ExactLimit: limit}
		ref := finish(spec, 3*time.Second, nil, reqs...)
		shuffled := slices.Clone(reqs)
		rand.New(rand.NewPCG(9, uint64(limit))).Shuffle(len(shuffled), func(i, j int) {
			shuffled[i], shuffled[j] = shuffled[j], shuffled[i]
		})
		if got := finish(spec, 3*time.Second, nil, shuffled...); !reflect.DeepEqual(ref, got) {
			t.Errorf("limit %d: shuffled point differs:\nref %+v\ngot %+v", limit, ref, got)
		}
		l := newLevel(spec)
		var wg sync.WaitGroup
		for w := range 7 {
			wg.Go(func() {
				for i := w; i < len(reqs); i += 7 {
					l.Add(reqs[i])
				}
			})
		}
		wg.Wait()
		if got := l.Point(record(3*time.Second, nil)); !reflect.DeepEqual(ref, got) {
			t.Errorf("limit %d: concurrent point differs:\nref %+v\ngot %+v", limit, ref, got)
		}
	}
}

// TestSpill: past the exact limit, percentiles come from the histogram, within
// its resolution, and the point says so; means and counts stay exact.
func TestSpill(t *testing.T) {
	reqs := randomRequests(3000, 2)
	exact := finish(Spec{}, time.Second, nil, reqs...)
	l := newLevel(Spec{ExactLimit: 500})
	for _, r := range reqs {
		l.Add(r)
	}
	est := l.Point(record(time.Second, nil))
	if h := l.all.lat[latLag].spill; h == nil {
		t.Error("no spill histogram for lags")
	} else if n := h.Count(); n != 3000 {
		t.Errorf("spill histogram holds %d lags, want every one of 3000", n)
	}
	if len(l.all.lat[latTTFT].vals) != 0 || len(l.all.lat[latLag].vals) != 0 {
		t.Errorf("kept %d TTFTs, %d lags past the limit; want none (the histogram has them all)", len(l.all.lat[latTTFT].vals), len(l.all.lat[latLag].vals))
	}
	if len(est.Notes) != 1 || !strings.Contains(est.Notes[0], "histogram") || len(est.Warnings) != 0 {
		t.Errorf("spill: notes %q, warnings %q: want one note and no warning (an estimate within 0.05%% is not wrong)", est.Notes, est.Warnings)
	}
	if len(exact.Warnings) != 0 || len(exact.Notes) != 0 {
		t.Errorf("exact level warned: %q %q", exact.Warnings, exact.Notes)
	}
	pairs := map[string][2]*float64{
		"ttft_p50": {exact.TTFTP50Ms, est.TTFTP50Ms}, "ttft_p99": {exact.TTFTP99Ms, est.TTFTP99Ms},
		"e2e_p95": {exact.E2EP95Ms, est.E2EP95Ms}, "tpot_p90": {exact.TPOTP90Ms, est.TPOTP90Ms},
		"ttfat_p50": {exact.TTFATP50Ms, est.TTFATP50Ms}, "ttft_mean": {exact.TTFTMeanMs, est.TTFTMeanMs},
		"e2e_max": {exact.E2EMaxMs, est.E2EMaxMs},
	}
	for name, pr := range pairs {
		if pr[0] == nil || pr[1] == nil || math.Abs(*pr[0]-*pr[1]) > *pr[0]*0.0005+0.011 {
			t.Errorf("%s: exact %v, estimated %v", name, *pr[0], *pr[1])
		}
	}
	if exact.Completed != est.Completed || exact.OutputTPSTotal != est.OutputTPSTotal || *exact.OutputTokenStdev != *est.OutputTokenStdev {
		t.Error("counts or token statistics changed past the exact limit")
	}
}

// TestFlatMemory: past the exact limit, Add allocates nothing at all, so a
// level of a million requests holds what a level of ExactLimit holds (plus
// one histogram per latency).
func TestFlatMemory(t *testing.T) {
	l := newLevel(Spec{ExactLimit: 10, Pinned: true, OutputTokens: 10, SLO: &SLO{TTFTMs: 5}})
	reqs := randomRequests(200, 5)
	for _, r := range reqs { // past the limit, spill histograms allocated
		l.Add(r)
	}
	i := 0
	if a := testing.AllocsPerRun(5000, func() { l.Add(reqs[i%len(reqs)]); i++ }); a != 0 {
		t.Errorf("Add past the exact limit allocates %v per call", a)
	}
	if n := len(l.all.lat[latE2E].vals); n > 10 {
		t.Errorf("%d exact E2E samples kept, limit 10", n)
	}
}

// BenchmarkAdd: requests within the exact limit (a fresh level every 50k
// requests keeps the kept samples at a realistic size).
func BenchmarkAdd(b *testing.B) {
	reqs := randomRequests(1024, 3)
	spec := Spec{SLO: &SLO{TTFTMs: 50}}
	l := newLevel(spec)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i%50_000 == 0 {
			l = newLevel(spec)
		}
		l.Add(reqs[i&1023])
	}
}

// BenchmarkAddSpilled: requests past the exact limit (batched into the
// level's histograms).
func BenchmarkAddSpilled(b *testing.B) {
	reqs := randomRequests(1024, 3)
	l := newLevel(Spec{SLO: &SLO{TTFTMs: 50}, ExactLimit: 1})
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		l.Add(reqs[i&1023])
	}
}

// BenchmarkPoint100k: a level of 100k requests, with 100 ITL samples a
// request, turned into its Point.
func BenchmarkPoint100k(b *testing.B) {
	reqs := randomRequests(100_000, 4)
	l := newLevel(Spec{SLO: &SLO{TTFTMs: 50}})
	rec := record(time.Minute, nil)
	for _, r := range reqs {
		l.Add(r)
		for j := range 100 {
			rec.ITL.Add(time.Duration(j) * time.Millisecond)
		}
	}
	for b.Loop() {
		l.Point(rec)
	}
}

// FuzzLevel: whatever a request record holds (negative, NaN, infinite or
// huge values, odd token counts), Finish neither panics nor produces a Point
// that JSON cannot encode (a NaN or Inf anywhere would).
func FuzzLevel(f *testing.F) {
	f.Add(10.0, 100.0, 30.0, 1.0, 12.5, 4, 100, true, uint8(3))
	f.Add(math.NaN(), math.Inf(1), -1.0, math.Inf(-1), -5.0, -3, -7, true, uint8(1))
	f.Add(1e300, 1e-300, 0.0, 0.0, 1e300, 1<<40, 0, false, uint8(200))
	f.Add(1.7e308, 1.7e308, 1.7e308, 1.7e308, 1.7e308, 1<<62, 1<<62, true, uint8(19))
	f.Add(1e-300, 1e-300, 1e-300, 0.0, 0.0, 1<<40, 1<<40, true, uint8(7))
	f.Fuzz(func(t *testing.T, ttft, e2e, tpot, lag, itl float64, out, in int, okReq bool, n uint8) {
		l := newLevel(Spec{Pinned: n%2 == 0, OutputTokens: 4, InputTokens: 8, SLO: &SLO{TTFTMs: 10}, ExactLimit: 5})
		rec := record(time.Duration(int64(n)*1e6), nil)
		rec.Client = result.ClientLoad{CPUNs: int64(n) * 1e5, Procs: 2}
		for i := range int(n)%20 + 1 {
			r := &result.Request{OK: okReq || i%3 == 0, TTFTMs: &ttft, TPOTMs: &tpot, TTFATMs: &ttft,
				E2EMs: e2e, DispatchLagMs: lag, OutputTokens: out + i, InputTokens: in, Seq: i, ErrorKind: "x"}
			l.Add(r)
			rec.ITL.Add(time.Duration(itl * 1e6))
		}
		p := l.Point(rec)
		if _, err := json.Marshal(p); err != nil {
			t.Fatalf("point does not encode: %v", err)
		}
	})
}

// BenchmarkLevelMemory reports the heap a level retains after n requests (50 ITL
// samples a request, default exact limit): it grows up to the
// 100k-request limit and is flat past it.
func BenchmarkLevelMemory(b *testing.B) {
	reqs := randomRequests(1024, 6)
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				l := newLevel(Spec{SLO: &SLO{TTFTMs: 50}})
				rec := record(time.Minute, nil)
				for i := range n {
					l.Add(reqs[i&1023])
					for j := range 50 {
						rec.ITL.Add(time.Duration(j) * time.Millisecond)
					}
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/1e6, "MB-retained")
				runtime.KeepAlive(l)
				runtime.KeepAlive(rec)
			}
		})
	}
}
