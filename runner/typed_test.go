package runner

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnerbench/runner/protocol"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
	"github.com/runnerbench/runner/sim"
)

// TestTypedAPIsTruth runs the Responses and Messages APIs against the
// simulator, whose first three tokens of each response are reasoning, and
// holds every request to the simulator's truth: the tokens and input
// counted from the stream's usage, one token event per chunk written, TTFT
// at the first (reasoning) delta, TTFAT at the answer's first, E2E at the
// end.
func TestTypedAPIsTruth(t *testing.T) {
	for _, api := range []string{"responses", "messages"} {
		t.Run(api, func(t *testing.T) {
			cfg := fastSim()
			cfg.ReasoningTokens = 3
			s := startSim(t, cfg)
			sp := startSpy(t, s)
			e, col := newEngine(t, sp.URL+"/v1", &scenario.Endpoint{APIKey: "sekrit-1"})
			const out = 12
			st := stage(out, 2)
			st.API, st.Requests.Each = scenario.API(api), 6
			res := runStage(t, e, synthPlan(64, ""), st)
			p := res.Points[0]
			reqs := col.measured()
			if p.Failed != 0 || p.Completed != 6 || len(reqs) != 6 {
				t.Fatalf("completed %d failed %d: %v", p.Completed, p.Failed, p.ErrorSamples)
			}
			for _, r := range reqs {
				tr := truth(t, s, r.Nonce)
				if tr.Endpoint != api || r.OutputTokens != out || tr.OutputTokens != out || r.InputTokens != tr.PromptTokens || !r.UsageReported {
					t.Fatalf("%s: %s tokens %d in %d (sim %s: %d, %d)", r.Nonce, api, r.OutputTokens, r.InputTokens, tr.Endpoint, tr.OutputTokens, tr.PromptTokens)
				}
				// Responses: response.completed gives no reason (the engines
				// send it on a cut too); Messages says max_tokens.
				wantFinish := map[string]string{"responses": "", "messages": "length"}[api]
				if r.Chunks != tr.Chunks || r.ReasoningChunks != 3 || tr.ReasoningTokens != 3 || r.FinishReason != wantFinish {
					t.Fatalf("%s: %d token events (%d reasoning), sim wrote %d chunks; finish %q", r.Nonce, r.Chunks, r.ReasoningChunks, tr.Chunks, r.FinishReason)
				}
				if r.TTFTMs == nil || r.TTFATMs == nil {
					t.Fatalf("%s: TTFT %v TTFAT %v", r.Nonce, r.TTFTMs, r.TTFATMs)
				}
				ttft, ttfat, e2e := ms(tr.TokenWritten[0].Sub(r.Start)), ms(tr.TokenWritten[3].Sub(r.Start)), ms(tr.End.Sub(r.Start))
				if !raceOn && (!within(*r.TTFTMs, ttft) || !within(*r.TTFATMs, ttfat) || !within(r.E2EMs, e2e)) {
					t.Errorf("%s: TTFT %.3f (sim %.3f), TTFAT %.3f (sim %.3f), E2E %.3f (sim %.3f) ms", r.Nonce, *r.TTFTMs, ttft, *r.TTFATMs, ttfat, r.E2EMs, e2e)
				}
			}
			// What went on the wire: the API's path, its length field, the
			// key where the API wants it.
			sent := sp.requests("/v1/" + api)
			if len(sent) != 7 { // the warm-up and six measured
				t.Fatalf("%d requests to /v1/%s", len(sent), api)
			}
			c := sent[1]
			switch api {
			case "responses":
				if c.body["max_output_tokens"] != float64(out) || c.body["input"] == nil || c.header.Get("Authorization") != "Bearer sekrit-1" {
					t.Errorf("responses body %v, authorization %q", c.body, c.header.Get("Authorization"))
				}
			case "messages":
				if c.body["max_tokens"] != float64(out) || c.header.Get("X-Api-Key") != "sekrit-1" || c.header.Get("Authorization") != "" ||
					c.header.Get("Anthropic-Version") != protocol.AnthropicVersion {
					t.Errorf("messages body %v, headers %v", c.body, c.header)
				}
			}
			if c.body["ignore_eos"] != true {
				t.Errorf("pinned %s request without ignore_eos: %v", api, c.body)
			}
		})
	}
}

// TestMessagesIgnoreEOSDropped: against a server that reads no ignore_eos
// on /v1/messages (the simulator playing llama-server), a pinned Messages
// stage sends it all the same, every request stops where the model would,
// and the level counts each in output_len_mismatch with its warning; the
// same server's pinned chat requests keep their length.
func TestMessagesIgnoreEOSDropped(t *testing.T) {
	cfg := fastSim()
	cfg.MessagesDropIgnoreEOS = true
	cfg.OutputMean, cfg.OutputStdev = 4, 0.01 // every natural stop at 4 tokens (0 is the default stdev)
	s := startSim(t, cfg)
	for _, api := range []scenario.API{"messages", scenario.APIChat} {
		e, col := newEngine(t, s.URL(), nil)
		st := stage(16, 2)
		st.API, st.Requests.Each = api, 4
		p := runStage(t, e, synthPlan(32, ""), st).Points[0]
		want, mismatch := 4, 4
		if api == scenario.APIChat {
			want, mismatch = 16, 0
		}
		for _, r := range col.measured() {
			if tr := truth(t, s, r.Nonce); !r.OK || r.OutputTokens != want || tr.OutputTokens != want || tr.IgnoreEOS != (api == scenario.APIChat) {
				t.Errorf("%s: ok %v, %d tokens (sim %d, read ignore_eos %v), want %d", api, r.OK, r.OutputTokens, tr.OutputTokens, tr.IgnoreEOS, want)
			}
		}
		warned := strings.Contains(strings.Join(p.Warnings, "\n"), "did not honour ignore_eos")
		if p.OutputLenMismatch != mismatch || warned != (mismatch > 0) {
			t.Errorf("%s: output_len_mismatch %d (warned %v), want %d: %q", api, p.OutputLenMismatch, warned, mismatch, p.Warnings)
		}
	}
}

// TestToolCalls: a stage with tools, on each API that takes them. With
// tool_choice required every response is a call, whose argument deltas are
// its tokens (TTFT, chunks, usage as for text); with auto and the
// simulator calling for about half the requests, tool_call_rate is the
// share of records that called, each record's call matching the truth.
func TestToolCalls(t *testing.T) {
	tools := []*scenario.ToolDef{{Type: "function", Function: scenario.ToolFunction{Name: "lookup", Description: "look it up",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}}}}
	for _, api := range []string{"chat", "responses", "messages"} {
		for _, choice := range []string{"required", "auto"} {
			t.Run(api+"-"+choice, func(t *testing.T) {
				cfg := fastSim()
				cfg.ToolCallRate = 0.5
				s := startSim(t, cfg)
				e, col := newEngine(t, s.URL(), nil)
				st := stage(8, 2)
				st.API, st.Requests.Each = scenario.API(api), 16
				st.Tools, st.ToolChoice = tools, &scenario.ToolChoice{Mode: choice}
				res := runStage(t, e, synthPlan(32, ""), st)
				p := res.Points[0]
				if p.Failed != 0 || p.ToolCallRate == nil {
					t.Fatalf("failed %d %v; tool_call_rate %v", p.Failed, p.ErrorSamples, p.ToolCallRate)
				}
				called := 0
				for _, r := range col.measured() {
					tr := truth(t, s, r.Nonce)
					if (r.ToolCalls == 1) != tr.ToolCall || r.ToolCalls > 1 {
						t.Fatalf("%s: %d tool calls recorded, sim called %v", r.Nonce, r.ToolCalls, tr.ToolCall)
					}
					if r.OutputTokens != 8 || r.Chunks != tr.Chunks || r.TTFTMs == nil {
						t.Fatalf("%s: %d tokens in %d events (sim %d chunks), TTFT %v", r.Nonce, r.OutputTokens, r.Chunks, tr.Chunks, r.TTFTMs)
					}
					if tr.ToolCall {
						called++
						if want := map[string]string{"responses": ""}[api]; api != "responses" && r.FinishReason != "tool_calls" || api == "responses" && r.FinishReason != want {
							t.Errorf("%s: finish %q after a call", r.Nonce, r.FinishReason)
						}
					}
				}
				if want := float64(called) / 16; *p.ToolCallRate != want || (choice == "required" && called != 16) || (choice == "auto" && (called == 0 || called == 16)) {
					t.Errorf("tool_call_rate %v, %d of 16 called", *p.ToolCallRate, called)
				}
			})
		}
	}
}

// TestAPINotServed: an endpoint that answers the API's path with a 404, or
// with an event stream of another API, stops the stage with one error
// naming the API and the path tried; with warm-ups no measured request is
// sent at all.
func TestAPINotServed(t *testing.T) {
	s := startSim(t, fastSim())
	h := s.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/responses":
			http.NotFound(w, r)
		case "/v1/messages": // a proxy that answers with chat chunks
			r.URL.Path = "/v1/chat/completions"
			h.ServeHTTP(w, r)
		default:
			h.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	for _, c := range []struct {
		api, want string
		warmup    int
	}{
		{"responses", "answered http 404", 1}, {"responses", "answered http 404", 0},
		{"messages", "answered with an event stream of api chat, not of api messages", 1},
	} {
		e, col := newEngine(t, srv.URL+"/v1", nil)
		st := stage(4, 4)
		st.API, st.Requests.Each, st.Warmup = scenario.API(c.api), 40, &c.warmup
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		res, err := runStageCtx(ctx, e, synthPlan(16, "reference"), st)
		cancel()
		if err == nil || !strings.Contains(err.Error(), "api "+c.api+": POST "+srv.URL+"/v1/"+c.api+" "+c.want) {
			t.Fatalf("%s: err %v", c.api, err)
		}
		sent := len(col.measured())
		if (c.warmup > 0 && sent != 0) || sent > 8 {
			t.Errorf("%s warmup %d: %d measured requests sent after the API showed it is not served", c.api, c.warmup, sent)
		}
		t.Logf("%s (warmup %d): %v; %d measured requests; points %d", c.api, c.warmup, err, sent, len(res.Points))
	}
	// A 404 after the API was served is that request's failure only.
	var n atomic.Int32
	flaky := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/responses" {
			if n.Add(1) == 3 {
				http.NotFound(w, r)
				return
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(flaky.Close)
	e, _ := newEngine(t, flaky.URL+"/v1", nil)
	st := stage(4, 1)
	st.API, st.Requests.Each = "responses", 6
	res := runStage(t, e, synthPlan(16, "reference"), st)
	if p := res.Points[0]; p.Failed != 1 || p.Completed != 5 || p.ErrorsByKind["http_404"] != 1 {
		t.Errorf("a 404 after success: completed %d failed %d %v", p.Completed, p.Failed, p.ErrorsByKind)
	}
}

// TestTypedFaults: the simulator's faults on the typed APIs are classified
// as on chat: an error event (response.failed; Messages' error) is a
// server error with its message, a broken event malformed, a body that
// stops early truncated.
func TestTypedFaults(t *testing.T) {
	for _, api := range []string{"responses", "messages"} {
		for _, f := range []struct {
			set  func(*sim.Faults)
			kind string
			msg  string
		}{
			{func(f *sim.Faults) { f.ErrorInStream = 1 }, result.ErrServer, "simulated engine error mid-stream"},
			{func(f *sim.Faults) { f.Malformed = 1 }, result.ErrMalformed, "unparseable chunk"},
			{func(f *sim.Faults) { f.Truncate = 1 }, result.ErrTruncated, "stream ended without"},
		} {
			cfg := fastSim()
			f.set(&cfg.Faults)
			s := startSim(t, cfg)
			e, col := newEngine(t, s.URL(), nil)
			st := stage(8, 1)
			st.API, st.Requests.Each = scenario.API(api), 2
			zero := 0
			st.Warmup = &zero
			res := runStage(t, e, synthPlan(16, "reference"), st)
			p := res.Points[0]
			if p.Failed != 2 || p.ErrorsByKind[f.kind] != 2 || !strings.Contains(p.ErrorSamples[f.kind], f.msg) {
				t.Errorf("%s %s: failed %d %v %v", api, f.kind, p.Failed, p.ErrorsByKind, p.ErrorSamples)
			}
			for _, r := range col.measured() {
				if r.TTFTMs == nil {
					t.Errorf("%s %s: the tokens before the fault were not timed", api, f.kind)
				}
			}
		}
	}
}
