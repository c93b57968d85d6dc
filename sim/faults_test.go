package sim

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

func faultSim(t *testing.T, f Faults) *Server {
	cfg := FastConfig()
	cfg.Faults = f
	return startSim(t, cfg)
}

func TestFaultHTTPErrors(t *testing.T) {
	for _, c := range []struct {
		f    Faults
		code int
		want Fault
	}{
		{Faults{HTTP429: 1}, 429, FaultHTTP429},
		{Faults{HTTP500: 1}, 500, FaultHTTP500},
		{Faults{HTTP503: 1}, 503, FaultHTTP503},
	} {
		s := faultSim(t, c.f)
		n := nonce()
		res := doStream(t, t.Context(), s, "/chat/completions", chatBody("["+n+"] hi", 4, nil))
		var e struct {
			Error struct {
				Message, Type string
				Code          int
			}
		}
		if err := json.Unmarshal(res.body, &e); err != nil || res.status != c.code || e.Error.Code != c.code || e.Error.Message == "" {
			t.Errorf("%v: status %d body %s", c.want, res.status, res.body)
		}
		tr, err := s.TruthByNonce(t.Context(), n)
		if err != nil || tr.Fault != c.want || tr.Status != c.code || tr.OutputTokens != 0 {
			t.Errorf("%v: truth %+v err %v", c.want, tr, err)
		}
	}
}

func TestFaultHTML(t *testing.T) {
	s := faultSim(t, Faults{HTML: 1})
	res := doStream(t, t.Context(), s, "/chat/completions", chatBody("hi", 4, nil))
	if res.status != 200 || !strings.HasPrefix(res.contentType, "text/html") || !strings.Contains(string(res.body), "<html>") {
		t.Errorf("status %d type %q body %s", res.status, res.contentType, res.body)
	}
}

func TestFaultMidStream(t *testing.T) {
	const n, after = 10, 4
	for _, c := range []struct {
		name  string
		f     Faults
		check func(t *testing.T, res sseResult, tr RequestTruth)
	}{
		{"disconnect", Faults{Disconnect: 1, AfterTokens: after}, func(t *testing.T, res sseResult, tr RequestTruth) {
			if !errors.Is(res.err, io.ErrUnexpectedEOF) {
				t.Errorf("read error %v, want unexpected EOF", res.err)
			}
			if contentChunks(res) != after || hasDone(res) {
				t.Errorf("content chunks %d done %v", contentChunks(res), hasDone(res))
			}
		}},
		{"truncate", Faults{Truncate: 1, AfterTokens: after}, func(t *testing.T, res sseResult, tr RequestTruth) {
			if res.err != nil || contentChunks(res) != after || hasDone(res) || hasFinish(res) {
				t.Errorf("err %v chunks %d done %v finish %v", res.err, contentChunks(res), hasDone(res), hasFinish(res))
			}
		}},
		{"malformed", Faults{Malformed: 1, AfterTokens: after}, func(t *testing.T, res sseResult, tr RequestTruth) {
			// One data line is not JSON; the stream otherwise completes.
			if len(res.lines)-1-len(res.chunks) != 1 || !hasDone(res) || contentChunks(res) != n {
				t.Errorf("lines %d chunks %d content %d done %v", len(res.lines), len(res.chunks), contentChunks(res), hasDone(res))
			}
			if tr.OutputTokens != n || tr.FinishReason != "length" {
				t.Errorf("truth %d tokens, finish %q", tr.OutputTokens, tr.FinishReason)
			}
		}},
		{"error_in_stream", Faults{ErrorInStream: 1, AfterTokens: after}, func(t *testing.T, res sseResult, tr RequestTruth) {
			last := res.chunks[len(res.chunks)-1]
			e, ok := last["error"].(map[string]any)
			if !ok || e["message"] == "" || !hasDone(res) || hasFinish(res) || contentChunks(res) != after {
				t.Errorf("last chunk %v done %v", last, hasDone(res))
			}
			if tr.FinishReason != "error" {
				t.Errorf("truth finish %q", tr.FinishReason)
			}
		}},
		{"stall_then_resume", Faults{Stall: 1, AfterTokens: after, StallMs: 60}, func(t *testing.T, res sseResult, tr RequestTruth) {
			if contentChunks(res) != n || !hasDone(res) {
				t.Fatalf("content %d done %v", contentChunks(res), hasDone(res))
			}
			gap := tr.TokenWritten[after].Sub(tr.TokenWritten[after-1])
			if gap < 60*time.Millisecond {
				t.Errorf("stall gap %v < 60ms", gap)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := faultSim(t, c.f)
			nc := nonce()
			res := doStream(t, t.Context(), s, "/chat/completions",
				chatBody("["+nc+"] hello", n, map[string]any{"ignore_eos": true}))
			if res.status != 200 {
				t.Fatalf("status %d", res.status)
			}
			tr, err := s.TruthByNonce(t.Context(), nc)
			if err != nil {
				t.Fatal(err)
			}
			if string(tr.Fault) != c.name && !(c.name == "stall_then_resume" && tr.Fault == FaultStall) {
				t.Errorf("truth fault %q", tr.Fault)
			}
			if tr.FaultAfterTokens != after {
				t.Errorf("fault after %d tokens, want %d", tr.FaultAfterTokens, after)
			}
			c.check(t, res, tr)
		})
	}
}

func TestFaultStallForever(t *testing.T) {
	s := faultSim(t, Faults{Stall: 1, AfterTokens: 2})
	nc := nonce()
	// start before the deadline's clock: a busy machine can spend
	// milliseconds between the two.
	start := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 150*time.Millisecond)
	defer cancel()
	res := doStream(t, ctx, s, "/chat/completions", chatBody("["+nc+"] hi", 10, map[string]any{"ignore_eos": true}))
	if res.err == nil || time.Since(start) < 150*time.Millisecond || contentChunks(res) != 2 {
		t.Errorf("err %v after %v, %d content chunks", res.err, time.Since(start), contentChunks(res))
	}
	wctx, wcancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer wcancel()
	tr, err := s.TruthByNonce(wctx, nc)
	if err != nil || tr.Fault != FaultStall || tr.FinishReason != "abort" || tr.OutputTokens != 2 {
		t.Errorf("truth %+v err %v", tr, err)
	}
}

// TestFaultShares checks that fault draws follow the configured shares and are
// reproducible by arrival order.
func TestFaultShares(t *testing.T) {
	f := Faults{HTTP429: 0.2, HTTP500: 0.1, HTML: 0.1}
	draw := func() []Fault {
		s := faultSim(t, f)
		var out []Fault
		for range 60 {
			doStream(t, t.Context(), s, "/completions", map[string]any{"prompt": "x", "max_tokens": 1, "stream": true})
		}
		for _, tr := range s.Truth() {
			out = append(out, tr.Fault)
		}
		return out
	}
	a, b := draw(), draw()
	counts := map[Fault]int{}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("request %d: fault %q then %q with the same seed", i, a[i], b[i])
		}
		counts[a[i]]++
	}
	if counts[FaultHTTP429] < 4 || counts[FaultHTTP429] > 22 || counts[FaultNone] < 24 || counts[FaultHTTP500]+counts[FaultHTML] == 0 {
		t.Errorf("fault counts %v over 60 requests", counts)
	}
}

func contentChunks(res sseResult) int {
	n := 0
	for _, c := range res.chunks {
		if txt, r, _, _ := deltaText(c); txt != "" || r != "" {
			n++
		}
	}
	return n
}

func hasDone(res sseResult) bool {
	return len(res.lines) > 0 && res.lines[len(res.lines)-1] == "[DONE]"
}

func hasFinish(res sseResult) bool {
	for _, c := range res.chunks {
		if _, _, f, ok := deltaText(c); ok && f != nil {
			return true
		}
	}
	return false
}

func TestFaultNonStreaming(t *testing.T) {
	for _, c := range []struct {
		f     Faults
		check func(status int, body []byte, err error) bool
	}{
		{Faults{Disconnect: 1}, func(_ int, _ []byte, err error) bool { return err != nil }},
		{Faults{Truncate: 1}, func(s int, b []byte, err error) bool { return s == 200 && !json.Valid(b) }},
		{Faults{ErrorInStream: 1}, func(s int, b []byte, err error) bool {
			return s == 200 && strings.Contains(string(b), `"error"`)
		}},
		{Faults{Stall: 1, StallMs: 30}, func(s int, b []byte, err error) bool { return s == 200 && json.Valid(b) }},
	} {
		s := faultSim(t, c.f)
		var status int
		var body []byte
		resp, err := post(t.Context(), s.URL()+"/completions", map[string]any{"prompt": "x", "max_tokens": 3})
		if err == nil {
			status = resp.StatusCode
			body, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		if !c.check(status, body, err) {
			t.Errorf("%+v: status %d body %q err %v", c.f, status, body, err)
		}
	}
}
