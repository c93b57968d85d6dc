package runner

import (
	"testing"
	"time"

	"github.com/runnerbench/runner/scenario"
)

// A request given up on by time is recorded as cancelled, with what had
// arrived: neither ok nor failed, its E2E the time it was cancelled at (not
// before its cancel_after, not long after), and the simulator, which stops
// writing when its client goes, sent far fewer tokens than the request asked.
func TestCancelAfterTime(t *testing.T) {
	cfg := fastSim()
	cfg.ITLMs = 10 // 200 tokens: two seconds of decode, cut at 150 ms
	s := startSim(t, cfg)
	e, col := newEngine(t, s.URL(), nil)
	st := stage(200, 2)
	st.Requests = scenario.PerLevel{Each: 6}
	st.CancelAfter = scenario.Duration(150 * time.Millisecond)
	res := runStage(t, e, synthPlan(16, "reference"), st)
	p := res.Points[0]
	if p.Cancelled != 6 || p.Completed != 0 || p.Failed != 0 || p.NRequests != 6 || p.CancelRate == nil || *p.CancelRate != 1 {
		t.Fatalf("point: cancelled %d completed %d failed %d n %d rate %v, want all 6 cancelled", p.Cancelled, p.Completed, p.Failed, p.NRequests, p.CancelRate)
	}
	if p.E2EP50Ms != nil || p.TPOTP50Ms != nil || p.OutputTPSTotal != 0 {
		t.Errorf("a level of cancelled requests has E2E p50 %v, TPOT p50 %v, output tok/s %v: none is the server's", p.E2EP50Ms, p.TPOTP50Ms, p.OutputTPSTotal)
	}
	if p.TTFTP50Ms == nil {
		t.Errorf("no TTFT: the cancelled requests had their first tokens")
	}
	for _, r := range col.measured() {
		if !r.Cancelled || r.OK || r.ErrorKind != "" {
			t.Fatalf("request %d: cancelled %v ok %v error %q %q", r.Seq, r.Cancelled, r.OK, r.ErrorKind, r.Error)
		}
		// Never before its time; on a busy machine a timer may fire late,
		// but not by the better part of the two seconds the stream would take.
		if r.E2EMs < 150 || r.E2EMs > 1000 {
			t.Errorf("request %d cancelled at %.1f ms, asked at 150 ms", r.Seq, r.E2EMs)
		}
		if r.TTFTMs == nil || r.Chunks == 0 || r.OutputTokens != r.Chunks {
			t.Errorf("request %d kept no account of what arrived: ttft %v chunks %d tokens %d", r.Seq, r.TTFTMs, r.Chunks, r.OutputTokens)
		}
		if tr := truth(t, s, r.Nonce); tr.OutputTokens >= 200 || tr.OutputTokens < r.Chunks {
			t.Errorf("request %d: the simulator sent %d of 200 tokens, the client read %d", r.Seq, tr.OutputTokens, r.Chunks)
		}
	}
}

// A request given up on after N token chunks has read exactly N, and the
// simulator stopped soon after (the rest of its 400 tokens never went out).
func TestCancelAfterTokens(t *testing.T) {
	s := startSim(t, fastSim())
	e, col := newEngine(t, s.URL(), nil)
	st := stage(400, 2)
	st.Requests = scenario.PerLevel{Each: 4}
	st.CancelAfterTokens = 10
	res := runStage(t, e, synthPlan(16, "reference"), st)
	if p := res.Points[0]; p.Cancelled != 4 || p.Failed != 0 {
		t.Fatalf("cancelled %d failed %d, want 4 and 0", p.Cancelled, p.Failed)
	}
	for _, r := range col.measured() {
		if !r.Cancelled || r.Chunks != 10 || r.OutputTokens != 10 {
			t.Errorf("request %d: cancelled %v after %d chunks (%d tokens), want 10", r.Seq, r.Cancelled, r.Chunks, r.OutputTokens)
		}
		if tr := truth(t, s, r.Nonce); tr.OutputTokens >= 400 {
			t.Errorf("request %d: the simulator sent all %d tokens to a client that had gone", r.Seq, tr.OutputTokens)
		}
	}
}

// A share alone: about that share of requests give up, each after a count
// of chunks below its max_tokens; the rest complete. The draw is the seed's:
// a second run gives up on the same requests.
func TestCancelShare(t *testing.T) {
	s := startSim(t, fastSim())
	var runs [2][]bool
	for i := range runs {
		e, col := newEngine(t, s.URL(), nil)
		st := stage(20, 4)
		st.Requests = scenario.PerLevel{Each: 80}
		st.CancelShare = 0.25
		res := runStage(t, e, synthPlan(16, "reference"), st)
		p := res.Points[0]
		if p.Cancelled+p.Completed != 80 || p.Failed != 0 {
			t.Fatalf("cancelled %d + completed %d of 80, failed %d", p.Cancelled, p.Completed, p.Failed)
		}
		if p.Cancelled < 10 || p.Cancelled > 30 {
			t.Errorf("%d of 80 cancelled at a share of 0.25", p.Cancelled)
		}
		for _, r := range col.measured() {
			if r.Cancelled && (r.Chunks < 1 || r.Chunks >= 20) {
				t.Errorf("request %d gave up after %d chunks, outside 1..19", r.Seq, r.Chunks)
			}
			runs[i] = append(runs[i], r.Cancelled)
		}
	}
	for k := range runs[0] {
		if runs[0][k] != runs[1][k] {
			t.Fatalf("request %d: cancelled %v in one run, %v in the other: the share is not the seed's", k, runs[0][k], runs[1][k])
		}
	}
}
