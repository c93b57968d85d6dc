package aggregate

import (
	"testing"
	"time"

	"github.com/runnerbench/runner/result"
)

// cancelled is a request the client gave up on after ttft (nil: before its
// first token), at e2e ms, having read chunks token chunks.
func cancelled(ttft *float64, e2e float64, chunks int) *result.Request {
	return &result.Request{Cancelled: true, TTFTMs: ttft, E2EMs: e2e, Chunks: chunks, OutputTokens: chunks}
}

// TestCancelledPopulations: a cancelled request is counted apart, neither
// completed nor failed; its TTFT joins the successes' when it had one, its
// E2E, tokens and TPOT join nothing. By hand:
//
//	ok        TTFT 10 E2E 100 out 10
//	ok        TTFT 30 E2E 300 out 10
//	cancelled TTFT 20 at 50 ms, 3 chunks
//	cancelled before its first token, at 40 ms
//	failed    http_500
//
// n 5, completed 2, failed 1, cancelled 2: error_rate 0.2, cancel_rate 0.4;
// TTFT over 10, 20, 30 (mean 20, max 30); E2E over 100, 300 (mean 200);
// output over the successes' 20 tokens in 1 s; goodput over all five.
func TestCancelledPopulations(t *testing.T) {
	l := NewLevel(result.LevelSpec{Concurrency: 2, OutputTokens: 10, Pinned: true,
		SLO: &result.SLO{E2EMs: 1000}, Cancel: &result.CancelSpec{AfterMs: 50, Share: 1}}, 0)
	for _, r := range []*result.Request{ok(10, 100, 10, 0), ok(30, 300, 10, 0), cancelled(f(20), 50, 3), cancelled(nil, 40, 0), fail("http_500", "boom")} {
		l.Add(r)
	}
	p := l.Point(record(time.Second, nil))
	if p.NRequests != 5 || p.Completed != 2 || p.Failed != 1 || p.Cancelled != 2 {
		t.Fatalf("n %d completed %d failed %d cancelled %d, want 5 2 1 2", p.NRequests, p.Completed, p.Failed, p.Cancelled)
	}
	eqPtr(t, "error_rate", p.ErrorRate, 0.2)
	eqPtr(t, "cancel_rate", p.CancelRate, 0.4)
	eqPtr(t, "ttft_mean_ms", p.TTFTMeanMs, 20.0)
	eqPtr(t, "ttft_max_ms", p.TTFTMaxMs, 30.0)
	eqPtr(t, "e2e_mean_ms", p.E2EMeanMs, 200.0)
	eqPtr(t, "e2e_max_ms", p.E2EMaxMs, 300.0)
	eqPtr(t, "goodput", p.Goodput, 0.4)
	if p.OutputTPSTotal != 20 || p.OutputLenMismatch != 0 {
		t.Errorf("output tok/s %v, length mismatches %d: a cancelled request's tokens are not the server's", p.OutputTPSTotal, p.OutputLenMismatch)
	}
	if p.ErrorsByKind["http_500"] != 1 || len(p.ErrorsByKind) != 1 {
		t.Errorf("errors by kind %v: a cancellation is no error", p.ErrorsByKind)
	}
	// A stage that gives up on nothing reports no cancel rate.
	q := finish(Spec{Concurrency: 1}, time.Second, nil, ok(10, 100, 10, 0))
	if q.CancelRate != nil || q.Cancelled != 0 {
		t.Errorf("cancel_rate %v, cancelled %d on a stage without cancel_*", q.CancelRate, q.Cancelled)
	}
}
