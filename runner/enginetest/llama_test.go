package enginetest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runnerbench/runner/internal/engines"
	"github.com/runnerbench/runner/result"
)

// TestLlamaServerStreams runs pinned chat, pinned completions and natural
// chat against llama-server: every request succeeds, prompts calibrated on
// its real tokenizer (and chat template) land within ±2% of 512 tokens,
// pinned outputs are exactly max_tokens (ignore_eos honoured), usage is read
// from wherever it comes, and the server's own timings are kept per request
// and give the TTFT overhead.
func TestLlamaServerStreams(t *testing.T) {
	eng := llama(t, false)
	start := time.Now()
	outs := run(t, eng, engines.LlamaModel, planFor("llama", 512, streamStages("llama", 24, 2, 8)))
	for _, o := range outs {
		noFailures(t, o)
		kernelTimed(t, o)
		p := o.stage.Points[0]
		pinned := o.stage.Mode == "pinned"
		if miss := inputError(o.recs, 512); miss > 0.02 {
			t.Errorf("%s: prompt tokens miss 512 by up to %.1f%%", o.stage.Name, 100*miss)
		}
		for _, r := range o.recs {
			st := r.ServerTimings
			switch {
			case !r.UsageReported:
				t.Errorf("%s seq %d: no usage read", o.stage.Name, r.Seq)
			case pinned && r.OutputTokens != 24, r.OutputTokens < 1 || r.OutputTokens > 24:
				t.Errorf("%s seq %d: %d output tokens of 24", o.stage.Name, r.Seq, r.OutputTokens)
			case r.Chunks > r.OutputTokens:
				t.Errorf("%s seq %d: %d content chunks for %d tokens", o.stage.Name, r.Seq, r.Chunks, r.OutputTokens)
			case st == nil || st.PredictedN != r.OutputTokens || st.PromptN+st.CacheN != r.InputTokens || st.PromptMs <= 0:
				t.Errorf("%s seq %d: server timings %+v for %d input and %d output tokens", o.stage.Name, r.Seq, st, r.InputTokens, r.OutputTokens)
			case *r.TTFTMs < st.PromptMs:
				t.Errorf("%s seq %d: client TTFT %.3f ms below the server's prompt time %.3f ms", o.stage.Name, r.Seq, *r.TTFTMs, st.PromptMs)
			}
		}
		// No prefix-cache counters, and spec counters that stay at 0 without
		// a draft model: both numbers are unknown, not 0.
		if p.PrefixCacheHitRate != nil || p.SpecAcceptanceRate != nil || p.SpecAcceptanceLength != nil {
			t.Errorf("%s: prefix hit rate %s, acceptance rate %s, length %s; want null", o.stage.Name,
				val(p.PrefixCacheHitRate), val(p.SpecAcceptanceRate), val(p.SpecAcceptanceLength))
		}
		if p.OutputLenMismatch != 0 || p.NaturalStop == pinned || p.TTFTOverheadP50Ms == nil || p.TTFTOverheadP95Ms == nil {
			t.Errorf("%s: mismatch %d natural %v overhead %s/%s", o.stage.Name, p.OutputLenMismatch, p.NaturalStop, val(p.TTFTOverheadP50Ms), val(p.TTFTOverheadP95Ms))
		}
		t.Logf("%s: prompt tokens within %.2f%% of 512 (mean %v); TTFT p50 %v ms, overhead p50 %v ms p95 %v ms; reconnects %d",
			o.stage.Name, 100*inputError(o.recs, 512), val(p.MeanInputTokens), val(p.TTFTP50Ms), val(p.TTFTOverheadP50Ms), val(p.TTFTOverheadP95Ms), p.Reconnects)
	}
	t.Logf("three stages in %s", time.Since(start).Round(time.Millisecond))
}

// TestLlamaServerIgnoreEOS proves that llama-server honours ignore_eos,
// which the random-weight model alone cannot (it almost never ends a stream
// early): a logit bias makes its end-of-generation tokens (32000
// <|endoftext|>, 32007 <|end|>) all but certain, so natural mode stops after
// one token, while pinned mode still runs to max_tokens.
func TestLlamaServerIgnoreEOS(t *testing.T) {
	eng := llama(t, false)
	bias := `extra_body: {logit_bias: {"32000": 100, "32007": 100}}`
	outs := run(t, eng, engines.LlamaModel, planFor("llama", 512, `
  - {name: pinned, endpoint: llama, prompts: synth, input_tokens: 64, output_tokens: 16, concurrency: [2], requests: 6, `+bias+`}
  - {name: natural, endpoint: llama, prompts: synth, input_tokens: 64, output_tokens: 16, concurrency: [2], requests: 6, mode: natural, `+bias+`}
`))
	for _, o := range outs {
		noFailures(t, o)
		want, reason := 16, "length"
		if o.stage.Mode == "natural" {
			want, reason = 1, "stop"
		}
		for _, r := range o.recs {
			if r.OutputTokens != want || r.FinishReason != reason {
				t.Errorf("%s seq %d: %d tokens, finish %q; want %d, %q", o.stage.Name, r.Seq, r.OutputTokens, r.FinishReason, want, reason)
			}
		}
	}
}

// TestLlamaServerWire checks, on the raw stream, the facts about llama-server
// that the README states and Runner relies on: on chat, usage (with timings)
// comes in a chunk of its own after the finish chunk, and only when asked
// for; on completions, usage and timings ride on the finish chunk; and the
// server closes the connection after a stream although its headers offer
// keep-alive.
func TestLlamaServerWire(t *testing.T) {
	eng := llama(t, false)
	msgs := []map[string]string{{"role": "user", "content": "hello there"}}
	usage := map[string]any{"include_usage": true}
	for _, c := range []struct {
		path  string
		body  map[string]any
		where string
	}{
		{"/chat/completions", map[string]any{"messages": msgs, "stream_options": usage}, "own chunk"},
		{"/chat/completions", map[string]any{"messages": msgs}, "none"},
		{"/completions", map[string]any{"prompt": "hello there", "stream_options": usage}, "finish chunk"},
		{"/completions", map[string]any{"prompt": "hello there"}, "finish chunk"},
	} {
		c.body["model"], c.body["max_tokens"], c.body["stream"], c.body["ignore_eos"] = engines.LlamaModel, 4, true, true
		chunks, _ := rawStream(t, eng.BaseURL+c.path, c.body)
		if got := placement(chunks); got != c.where {
			t.Errorf("%s %v: usage in %s, want %s", c.path, c.body["stream_options"], got, c.where)
		}
		if _, ok := chunks[len(chunks)-1]["timings"].(map[string]any); !ok {
			t.Errorf("%s: the last chunk carries no timings: %v", c.path, chunks[len(chunks)-1])
		}
	}

	// The close, on a raw connection: the whole response, then EOF.
	conn, err := net.Dial("tcp", strings.TrimPrefix(eng.Origin, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"messages":[{"role":"user","content":"hi"}],"max_tokens":2,"stream":true}`
	fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatalf("reading the stream: %v", err)
	}
	if resp.Close || !strings.Contains(resp.Header.Get("Keep-Alive"), "timeout") {
		t.Errorf("headers %v: expected an offer of keep-alive", resp.Header)
	}
	if n, err := br.ReadByte(); err != io.EOF {
		t.Errorf("after the stream: read %v, %v; want EOF (the server closes the connection)", n, err)
	}
}

// TestLlamaServerReconnects is the sweep: 1, 4 and 16 streams, 64
// requests a level, against a server that closes every connection after a
// stream. Every request succeeds; those that found their connection closed
// were sent again and are counted, and the log says so once.
func TestLlamaServerReconnects(t *testing.T) {
	eng := llama(t, false)
	outs := run(t, eng, engines.LlamaModel, planFor("llama", 512, `
  - {name: sweep, endpoint: llama, prompts: synth, input_tokens: 64, output_tokens: 16, concurrency: [1, 4, 16], requests: 64}
`))
	o := outs[0]
	noFailures(t, o)
	marked := map[int]int{}
	for _, r := range o.recs {
		if r.Reconnected {
			marked[r.Level]++
		}
	}
	total := 0
	for i, p := range o.stage.Points {
		if p.Reconnects != marked[i] {
			t.Errorf("%s: reconnects %d, records marked %d", p.Label(), p.Reconnects, marked[i])
		}
		total += p.Reconnects
		t.Logf("%s: %d requests, failed %d, reconnects %d, TTFT p50 %s ms, E2E max %s ms, %v s", p.Label(), p.NRequests, p.Failed, p.Reconnects, val(p.TTFTP50Ms), val(p.E2EMaxMs), p.DurationS)
	}
	lines := strings.Count(o.log, "closed a kept-alive connection")
	if (total > 0) != (lines == 1) || lines > 1 {
		t.Errorf("%d reconnects, %d log lines about them; want one line when there were any", total, lines)
	}
}

// TestLlamaServerFewHTTPThreads: llama-server with 2 HTTP threads and a
// level of 16 streams. Opening the 16 connections before the level, it
// answers some of the GETs and then none (how many varies: 2 to 13 of 16);
// the level still runs every request, and if Prime gave up, its one warning
// says how many of the 16 were answered, fewer than 16.
func TestLlamaServerFewHTTPThreads(t *testing.T) {
	r := root(t)
	eng := pool.Get(t, "llama-2-http-threads", func(ctx context.Context) (*engines.Engine, error) {
		return engines.StartLlama(ctx, r, engines.LlamaOptions{HTTPThreads: 2})
	})
	outs := run(t, eng, engines.LlamaModel, planFor("llama", 512, `
  - {name: wide, endpoint: llama, prompts: synth, input_tokens: 32, output_tokens: 8, concurrency: [16], requests: 32}
`))
	o := outs[0]
	noFailures(t, o)
	if p := o.stage.Points[0]; p.Completed != 32 {
		t.Fatalf("%s: %d of 32 requests completed", p.Label(), p.Completed)
	}
	lines := strings.Count(o.log, "sent on 16 connections, to open them")
	if lines > 1 {
		t.Fatalf("%d warnings about opening the connections, want at most one:\n%s", lines, o.log)
	}
	if lines == 1 {
		said := regexp.MustCompile(`were answered on (\d+), then on none for 1s`).FindStringSubmatch(o.log)
		field := regexp.MustCompile(`"answered":(\d+)`).FindStringSubmatch(o.log)
		n := -1
		if said != nil && field != nil && said[1] == field[1] {
			n, _ = strconv.Atoi(said[1])
		}
		if n < 0 || n >= 16 {
			t.Fatalf("the warning does not say how many of 16 GETs were answered, fewer than 16:\n%s", o.log)
		}
		t.Logf("Prime gave up with %d of 16 answered", n)
	}
}

// TestLlamaServerSpeculative: with the model drafting for itself at
// temperature 0, nearly every drafted token is accepted (all of them at one
// stream; two streams batched together can round a logit apart now and
// then). Runner reads llama.cpp's counters into the same three numbers as
// vLLM's, and they agree exactly with the per-request draft counts in the
// server's timings.
func TestLlamaServerSpeculative(t *testing.T) {
	eng := llama(t, true)
	outs := run(t, eng, engines.LlamaModel, planFor("llama", 512, `
  - {name: spec, endpoint: llama, prompts: synth, input_tokens: 128, output_tokens: 64, concurrency: [2], requests: 8, temperature: 0}
`))
	o := outs[0]
	noFailures(t, o)
	p := o.stage.Points[0]
	var drafted, accepted int
	for _, r := range o.recs {
		if r.ServerTimings == nil {
			t.Fatalf("seq %d: no server timings", r.Seq)
		}
		drafted += r.ServerTimings.DraftN
		accepted += r.ServerTimings.DraftNAccepted
	}
	drafts := p.ServerCounters["llamacpp:spec_decode_num_drafts"]
	switch {
	case drafted == 0 || p.SpecDraftTokens == nil || int(*p.SpecDraftTokens) != drafted:
		t.Errorf("spec_draft_tokens %v, the requests' timings say %d", p.SpecDraftTokens, drafted)
	case p.SpecAcceptanceRate == nil || *p.SpecAcceptanceRate != float64(accepted)/float64(drafted) || *p.SpecAcceptanceRate < 0.9:
		t.Errorf("spec_acceptance_rate %s; the timings say %d of %d accepted (self-drafting at temperature 0 accepts nearly all)", val(p.SpecAcceptanceRate), accepted, drafted)
	case drafts <= 0 || p.SpecAcceptanceLength == nil || *p.SpecAcceptanceLength != result.Round(1+float64(accepted)/drafts, 4):
		t.Errorf("spec_acceptance_length %s with %v drafts and %d accepted tokens", val(p.SpecAcceptanceLength), drafts, accepted)
	default:
		t.Logf("spec_acceptance_rate %v, spec_draft_tokens %d, spec_acceptance_length %v (%v drafts)", *p.SpecAcceptanceRate, *p.SpecDraftTokens, *p.SpecAcceptanceLength, drafts)
	}
}
