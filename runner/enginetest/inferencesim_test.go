package enginetest

import (
	"strings"
	"testing"

	"github.com/runnerbench/runner/checks"
	"github.com/runnerbench/runner/internal/engines"
)

// simFlags are the timing flags every llm-d-inference-sim here runs with:
// fast, so the tests stay short.
var simFlags = []string{"--time-to-first-token", "10ms", "--inter-token-latency", "1ms"}

// TestInferenceSimStreams runs pinned chat and completions and natural chat
// against llm-d-inference-sim: prompts calibrated with its /tokenize land
// within ±2%, pinned outputs are exactly max_tokens (it honours ignore_eos),
// usage comes in a chunk of its own on both APIs, and natural mode sees its
// early stops. It sends no timings, so the TTFT overhead is null.
func TestInferenceSimStreams(t *testing.T) {
	eng := inferenceSim(t, "plain", simFlags...)
	outs := run(t, eng, engines.SimModel, planFor("sim", 256, streamStages("sim", 32, 4, 16)))
	for _, o := range outs {
		noFailures(t, o)
		kernelTimed(t, o)
		p := o.stage.Points[0]
		pinned := o.stage.Mode == "pinned"
		if miss := inputError(o.recs, 256); miss > 0.02 {
			t.Errorf("%s: prompt tokens miss 256 by up to %.1f%%", o.stage.Name, 100*miss)
		}
		early := 0
		for _, r := range o.recs {
			if !r.UsageReported || (pinned && r.OutputTokens != 32) || r.OutputTokens < 1 || r.OutputTokens > 32 || r.ServerTimings != nil {
				t.Errorf("%s seq %d: usage %v, %d output tokens of 32, server timings %v", o.stage.Name, r.Seq, r.UsageReported, r.OutputTokens, r.ServerTimings)
			}
			if r.OutputTokens < 32 {
				early++
			}
		}
		if !pinned && early == 0 {
			t.Errorf("%s: no request stopped before max_tokens in natural mode", o.stage.Name)
		}
		if p.TTFTOverheadP50Ms != nil || p.OutputLenMismatch != 0 {
			t.Errorf("%s: ttft overhead %v without server timings; mismatch %d", o.stage.Name, val(p.TTFTOverheadP50Ms), p.OutputLenMismatch)
		}
		t.Logf("%s: prompt tokens within %.2f%% of 256; %d of %d stopped early; TTFT p50 %v ms", o.stage.Name, 100*inputError(o.recs, 256), early, len(o.recs), val(p.TTFTP50Ms))
	}
	for _, path := range []string{"/chat/completions", "/completions"} {
		body := map[string]any{"model": engines.SimModel, "max_tokens": 4, "stream": true, "ignore_eos": true,
			"stream_options": map[string]any{"include_usage": true}}
		if path == "/completions" {
			body["prompt"] = "hello there"
		} else {
			body["messages"] = []map[string]string{{"role": "user", "content": "hello there"}}
		}
		chunks, _ := rawStream(t, eng.BaseURL+path, body)
		if got := placement(chunks); got != "own chunk" {
			t.Errorf("%s: usage in %s, want its own chunk", path, got)
		}
	}
}

// TestInferenceSimPrefixCache: with its KV cache on, llm-d-inference-sim
// counts prefix-cache queries and hits (vLLM's names without `_total`).
// Prompts sharing a prefix on purpose hit; unique prompts, each led by
// Runner's nonce, do not.
func TestInferenceSimPrefixCache(t *testing.T) {
	eng := inferenceSim(t, "kvcache", append(simFlags, "--enable-kvcache", "--block-size", "16")...)
	outs := run(t, eng, engines.SimModel, planFor("sim", 256, `
  - {name: shared, endpoint: sim, prompts: shared, output_tokens: 8, concurrency: [2], requests: 16}
  - {name: unique, endpoint: sim, prompts: synth, output_tokens: 8, concurrency: [2], requests: 16}
`))
	shared, unique := outs[0].stage.Points[0], outs[1].stage.Points[0]
	noFailures(t, outs[0])
	noFailures(t, outs[1])
	// 16 prompts of 384 tokens in 2 groups sharing 256: all but each group's
	// first can hit the 256 shared tokens, about (14 × 256) / (16 × 384) = 0.58,
	// less whole blocks and the two groups' concurrent first requests.
	if h := shared.PrefixCacheHitRate; h == nil || *h < 0.4 || *h > 0.67 {
		t.Errorf("shared prefixes: prefix_cache_hit_rate %s, want about 0.58", val(h))
	}
	if h := unique.PrefixCacheHitRate; h == nil || *h > 0.05 {
		t.Errorf("unique prompts: prefix_cache_hit_rate %s, want about 0 (the nonce leads every prompt)", val(h))
	}
	for _, w := range unique.Warnings {
		if strings.Contains(w, "prefix cache hit rate") {
			t.Errorf("unique prompts warned: %s", w)
		}
	}
	if shared.PrefixCacheHitRate != nil && unique.PrefixCacheHitRate != nil {
		t.Logf("prefix_cache_hit_rate: shared prefixes %v, unique prompts %v", val(shared.PrefixCacheHitRate), val(unique.PrefixCacheHitRate))
	}
}

// TestInferenceSimFailures: injected rate-limit and server errors (HTTP 429
// and 503 from llm-d-inference-sim) are classified by status, with their
// messages, and the rest of the level succeeds.
func TestInferenceSimFailures(t *testing.T) {
	// v0.10.2 reads the words after the first --failure-types up to the next
	// flag; a second --failure-types is ignored.
	eng := inferenceSim(t, "faults", append(simFlags, "--failure-injection-rate", "30",
		"--failure-types", "rate_limit", "server_error")...)
	outs := run(t, eng, engines.SimModel, planFor("sim", 256, `
  - {name: faults, endpoint: sim, prompts: synth, output_tokens: 8, concurrency: [4], requests: 80, warmup: 0}
`))
	p := outs[0].stage.Points[0]
	byStatus := map[int]int{}
	for _, r := range outs[0].recs {
		if !r.OK {
			byStatus[r.Status]++
		}
	}
	got429, got503 := p.ErrorsByKind["http_429"], p.ErrorsByKind["http_503"]
	if p.Failed < 8 || p.Failed > 40 || got429 == 0 || got503 == 0 || got429+got503 != p.Failed || p.Completed+p.Failed != 80 {
		t.Errorf("failed %d of 80 by kind %v; want about 24, all http_429 or http_503", p.Failed, p.ErrorsByKind)
	}
	if byStatus[429] != got429 || byStatus[503] != got503 {
		t.Errorf("statuses %v do not match kinds %v", byStatus, p.ErrorsByKind)
	}
	if !strings.Contains(p.ErrorSamples["http_429"], "Rate limit") || !strings.Contains(p.ErrorSamples["http_503"], "overloaded") {
		t.Errorf("error samples %v", p.ErrorSamples)
	}
	t.Logf("failed %d of 80: %v", p.Failed, p.ErrorsByKind)
}

// TestInferenceSimWrongModel: llm-d-inference-sim checks a chat request's
// model and answers one it does not serve with 404 "The model `tiny` does
// not exist." (seen with curl). Every request of the level fails so, and
// the closing diagnosis says the model is not served, not the API.
func TestInferenceSimWrongModel(t *testing.T) {
	eng := inferenceSim(t, "plain", simFlags...)
	o := run(t, eng, "tiny", planFor("sim", 32, `
  - {name: chat, endpoint: sim, prompts: synth, output_tokens: 4, concurrency: [1], requests: 2}
`))[0]
	p := &o.stage.Points[0]
	hint := checks.FailureHint(o.stage, p)
	if p.Completed != 0 || p.ErrorsByKind["http_404"] != p.Failed || !strings.Contains(hint, `the server does not serve model "tiny"`) || strings.Contains(hint, "does not serve api") {
		t.Errorf("completed %d, errors %v: hint %q", p.Completed, p.ErrorsByKind, hint)
	}
}
