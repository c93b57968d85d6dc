package aggregate

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runnerbench/runner/result"
)

// at is a success sent at t0+startMs that took e2eMs.
func at(startMs, e2eMs float64) *result.Request {
	r := ok(1, e2eMs, 4, 0)
	r.Start = t0.Add(time.Duration(startMs * float64(time.Millisecond)))
	return r
}

// TestMaxInFlight: the peak of overlapping [start, end) spans, computed by
// hand. Spans (ms): [0,10) [5,20) [10,30) [12,13) [40,41):
//
//	at 5 two are open; at 10 the first ends as the third starts (half-open:
//	still two); at 12 three are open ([5,20) [10,30) [12,13)); then fewer.
func TestMaxInFlight(t *testing.T) {
	reqs := []*result.Request{at(0, 10), at(5, 15), at(10, 20), at(12, 1), at(40, 1)}
	p := finish(Spec{Rate: f(2)}, time.Second, nil, reqs...)
	if p.MaxInFlight == nil || *p.MaxInFlight != 3 {
		t.Fatalf("max_in_flight = %v, want 3", p.MaxInFlight)
	}
	// Any order gives the same peak.
	for seed := range uint64(5) {
		s := slices.Clone(reqs)
		rand.New(rand.NewPCG(seed, 1)).Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
		if q := finish(Spec{Rate: f(2)}, time.Second, nil, s...); *q.MaxInFlight != 3 {
			t.Fatalf("order %d: max_in_flight = %d", seed, *q.MaxInFlight)
		}
	}
	// Back to back: one ends exactly when the next starts, so one in flight.
	if q := finish(Spec{Rate: f(2)}, time.Second, nil, at(0, 10), at(10, 10), at(20, 10)); *q.MaxInFlight != 1 {
		t.Fatalf("back-to-back spans: max_in_flight = %d, want 1", *q.MaxInFlight)
	}
}

// TestFewerInFlightThanLabelled: a closed-loop level that never held its
// concurrency is warned about; one that did, or an open-loop level (whose
// label is its rate), is not.
func TestFewerInFlightThanLabelled(t *testing.T) {
	short := []*result.Request{at(0, 10), at(1, 10), at(20, 10)} // at most 2 at once
	p := finish(Spec{Concurrency: 4}, time.Second, nil, short...)
	if *p.MaxInFlight != 2 || len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "at most 2 requests were in flight") || !strings.Contains(p.Warnings[0], "labelled with") {
		t.Fatalf("max_in_flight %d, warnings %q", *p.MaxInFlight, p.Warnings)
	}
	if p := finish(Spec{Concurrency: 2}, time.Second, nil, short...); len(p.Warnings) != 0 {
		t.Fatalf("a level that held its concurrency warned: %q", p.Warnings)
	}
	if p := finish(Spec{Concurrency: 4, Rate: f(1)}, time.Second, nil, short...); len(p.Warnings) != 0 {
		t.Fatalf("an open-loop level warned about its cap: %q", p.Warnings)
	}
	// One shard of a sharded level is judged by its own streams.
	l := newLevel(Spec{Concurrency: 4})
	for _, r := range short {
		l.Add(r)
	}
	rec := record(time.Second, nil)
	rec.Shard, rec.ShardConcurrency = &result.Shard{Index: 0, Count: 2}, 2
	if p := l.Point(rec); len(p.Warnings) != 0 {
		t.Fatalf("a shard that held its 2 streams warned: %q", p.Warnings)
	}
	rec.Shard, rec.Interrupted = nil, true
	if p := l.Point(rec); len(p.Warnings) != 0 {
		t.Fatalf("an interrupted level warned about its peak: %q", p.Warnings)
	}
}

// TestMaxInFlightPastTheLimit: past the exact limit the spans are dropped
// and the point takes the record's live count; without one it is null.
func TestMaxInFlightPastTheLimit(t *testing.T) {
	l := newLevel(Spec{Concurrency: 3, ExactLimit: 2})
	for i := range 5 {
		l.Add(at(float64(i), 10))
	}
	if len(l.all.spans) != 0 || !l.all.spilled {
		t.Fatalf("kept %d spans past the limit", len(l.all.spans))
	}
	rec := record(time.Second, nil)
	if p := l.Point(rec); p.MaxInFlight != nil {
		t.Fatalf("max_in_flight %d without spans or a live count", *p.MaxInFlight)
	}
	rec.MaxInFlight = 3
	if p := l.Point(rec); p.MaxInFlight == nil || *p.MaxInFlight != 3 || len(p.Warnings) != 0 {
		t.Fatalf("max_in_flight %v warnings %q, want the live 3", p.MaxInFlight, p.Warnings)
	}
}

// TestTTFATWithoutReasoning: a success whose first token was an answer has
// TTFAT = TTFT; one that reasoned first keeps its own TTFAT; one that
// reasoned and never answered has none.
func TestTTFATWithoutReasoning(t *testing.T) {
	plain := ok(10, 100, 4, 0)
	reasoned := ok(20, 100, 4, 0)
	reasoned.ReasoningChunks, reasoned.TTFATMs = 3, f(50)
	thinking := ok(30, 100, 4, 0)
	thinking.ReasoningChunks = 4 // cut before any answer
	p := finish(Spec{}, time.Second, nil, plain, reasoned, thinking)
	eqPtr(t, "ttfat_max_ms", p.TTFATMaxMs, 50.0)
	eqPtr(t, "ttfat_mean_ms", p.TTFATMeanMs, 30.0) // (10 + 50) / 2: the one without an answer is not counted
}

// TestMaxTokensHitRate: natural mode counts the successes cut at
// max_tokens (finish_reason "length", or reaching max_tokens from a server
// that sends no finish reason); pinned mode has no such share.
func TestMaxTokensHitRate(t *testing.T) {
	mk := func(finish string, out, maxTok int) *result.Request {
		r := ok(10, 100, out, 0)
		r.FinishReason, r.MaxTokens = finish, maxTok
		return r
	}
	reqs := []*result.Request{
		mk("length", 16, 16), mk("stop", 9, 16), mk("stop", 16, 16), // a stop at exactly max_tokens is the model's
		mk("", 16, 16), mk("", 3, 16), fail("timeout", "x"),
	}
	p := finish(Spec{OutputTokens: 16}, time.Second, nil, reqs...)
	eqPtr(t, "max_tokens_hit_rate", p.MaxTokensHitRate, 0.4) // 2 of 5 successes
	p = finish(Spec{OutputTokens: 16, Pinned: true}, time.Second, nil, reqs...)
	eqPtr(t, "max_tokens_hit_rate", p.MaxTokensHitRate, nil)
	p = finish(Spec{OutputTokens: 16}, time.Second, nil, fail("timeout", "x"))
	eqPtr(t, "max_tokens_hit_rate", p.MaxTokensHitRate, nil) // no successes
}
