package enginetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/internal/engines"
	"github.com/runnerbench/runner/internal/testutil"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/runner"
	"github.com/runnerbench/runner/scenario"
)

// typedStages is pinned and natural stages of the Responses and Messages
// APIs against endpoint ep: n requests of out tokens each, conc at a time.
func typedStages(ep string, out, conc, n int, extra string) string {
	var b strings.Builder
	for _, api := range []string{"responses", "messages"} {
		for _, mode := range []string{"pinned", "natural"} {
			fmt.Fprintf(&b, "\n  - {name: %s-%s, endpoint: %s, prompts: synth, api: %s, mode: %s, output_tokens: %d, concurrency: [%d], requests: %d%s}",
				api, mode, ep, api, mode, out, conc, n, extra)
		}
	}
	return b.String() + "\n"
}

// checkTyped holds what every typed-API stage must show: no failures, usage
// read from the stream (input from response.completed or message_start,
// output from response.completed or message_delta), a TTFT per request,
// pinned outputs of exactly out tokens where the engine honours ignore_eos,
// and prompts calibrated within ±2% of in tokens.
func checkTyped(t *testing.T, outs []outcome, in, out int, pinnedExact bool) {
	t.Helper()
	for _, o := range outs {
		noFailures(t, o)
		pinned := o.stage.Mode == "pinned"
		if miss := inputError(o.recs, in); miss > 0.02 {
			t.Errorf("%s: prompt tokens miss %d by up to %.1f%%", o.stage.Name, in, 100*miss)
		}
		for _, r := range o.recs {
			switch {
			case !r.UsageReported || r.InputTokens <= 0:
				t.Errorf("%s seq %d: usage %v, %d input tokens", o.stage.Name, r.Seq, r.UsageReported, r.InputTokens)
			case pinned && pinnedExact && r.OutputTokens != out, r.OutputTokens < 1 || r.OutputTokens > out:
				t.Errorf("%s seq %d: %d output tokens of %d", o.stage.Name, r.Seq, r.OutputTokens, out)
			case r.TTFTMs == nil || r.Chunks == 0 || r.Chunks > r.OutputTokens:
				t.Errorf("%s seq %d: TTFT %v with %d token events for %d tokens", o.stage.Name, r.Seq, r.TTFTMs, r.Chunks, r.OutputTokens)
			case strings.HasPrefix(o.stage.Name, "messages") && r.FinishReason == "":
				t.Errorf("%s seq %d: no finish reason", o.stage.Name, r.Seq)
			case strings.HasPrefix(o.stage.Name, "responses") && r.FinishReason != "":
				// Both engines end with response.completed even when cut at
				// max_output_tokens: no reason is given.
				t.Errorf("%s seq %d: finish reason %q from response.completed", o.stage.Name, r.Seq, r.FinishReason)
			}
		}
		p := o.stage.Points[0]
		t.Logf("%s: prompt tokens within %.2f%% of %d; mean output %v; TTFT p50 %v ms; ITL p50 %v ms; mismatch %d; finish %q",
			o.stage.Name, 100*inputError(o.recs, in), in, val(p.MeanOutputTokens), val(p.TTFTP50Ms), val(p.ITLP50Ms), p.OutputLenMismatch, o.recs[0].FinishReason)
	}
}

// TestLlamaServerTypedAPIs runs the Responses and Messages APIs, pinned
// and natural, against llama-server, and shows that it honours ignore_eos
// on the Responses API: with a logit bias that makes its end-of-generation
// tokens all but certain, natural mode stops after one token (which decodes
// to no text: no delta event, so no TTFT, and usage says 1) while pinned
// mode runs to max_output_tokens. (On /v1/messages it reads no logit_bias;
// TestLlamaServerMessagesIgnoreEOS shows what it does with ignore_eos.) Its
// timings ride on response.completed and are kept, as on chat.
func TestLlamaServerTypedAPIs(t *testing.T) {
	eng := llama(t, false)
	outs := run(t, eng, engines.LlamaModel, planFor("llama", 256, typedStages("llama", 16, 2, 6, "")))
	checkTyped(t, outs, 256, 16, true)
	for _, o := range outs[:2] { // responses
		for _, r := range o.recs {
			if st := r.ServerTimings; st == nil || st.PredictedN != r.OutputTokens || st.PromptN+st.CacheN != r.InputTokens {
				t.Errorf("%s seq %d: server timings %+v for %d in, %d out", o.stage.Name, r.Seq, st, r.InputTokens, r.OutputTokens)
			}
		}
	}
	bias := `extra_body: {logit_bias: {"32000": 100, "32007": 100}}`
	eos := run(t, eng, engines.LlamaModel, planFor("llama", 256, `
  - {name: pinned, endpoint: llama, prompts: synth, api: responses, input_tokens: 64, output_tokens: 16, concurrency: [2], requests: 4, `+bias+`}
  - {name: natural, endpoint: llama, prompts: synth, api: responses, input_tokens: 64, output_tokens: 16, concurrency: [2], requests: 4, mode: natural, `+bias+`}
`))
	for _, o := range eos {
		noFailures(t, o)
		want := 16
		if o.stage.Mode == "natural" {
			want = 1
		}
		for _, r := range o.recs {
			if r.OutputTokens != want || (want == 1) != (r.TTFTMs == nil) {
				t.Errorf("%s seq %d: %d tokens (TTFT %v); want %d", o.stage.Name, r.Seq, r.OutputTokens, r.TTFTMs, want)
			}
		}
	}
}

// TestLlamaServerMessagesIgnoreEOS: llama-server drops ignore_eos on
// /v1/messages (its Anthropic-to-chat conversion passes temperature, top_p,
// top_k, stream and few others on, not ignore_eos nor logit_bias). Started
// with a server-wide logit bias that makes its end-of-generation tokens all
// but certain, pinned chat and Responses requests still run to their
// max_tokens, while pinned Messages requests stop after one token, as
// natural ones do: Runner says so with output_len_mismatch and its warning.
func TestLlamaServerMessagesIgnoreEOS(t *testing.T) {
	eng := llamaWith(t, "llama-eos-bias", engines.LlamaOptions{EOSBias: true})
	outs := run(t, eng, engines.LlamaModel, planFor("llama", 64, `
  - {name: chat, endpoint: llama, prompts: synth, output_tokens: 16, concurrency: [2], requests: 4}
  - {name: responses, endpoint: llama, prompts: synth, api: responses, output_tokens: 16, concurrency: [2], requests: 4}
  - {name: messages, endpoint: llama, prompts: synth, api: messages, output_tokens: 16, concurrency: [2], requests: 4}
  - {name: messages-natural, endpoint: llama, prompts: synth, api: messages, mode: natural, output_tokens: 16, concurrency: [2], requests: 4}
`))
	for _, o := range outs {
		noFailures(t, o)
		want, mismatch := 16, 0
		switch o.stage.Name {
		case "messages":
			want, mismatch = 1, 4
		case "messages-natural":
			want = 1
		}
		for _, r := range o.recs {
			if r.OutputTokens != want || !r.UsageReported {
				t.Errorf("%s seq %d: %d tokens (usage %v), want %d", o.stage.Name, r.Seq, r.OutputTokens, r.UsageReported, want)
			}
		}
		p := o.stage.Points[0]
		warned := strings.Contains(strings.Join(p.Warnings, "\n"), "did not honour ignore_eos")
		if p.OutputLenMismatch != mismatch || warned != (mismatch > 0) {
			t.Errorf("%s: output_len_mismatch %d (warned %v), want %d: %q", o.stage.Name, p.OutputLenMismatch, warned, mismatch, p.Warnings)
		}
	}
}

// TestInferenceSimToolCalls: llm-d-inference-sim answers a Messages request
// whose tool_choice asks for a call with a tool_use block, and a chat
// request with tool_calls deltas: each response is recorded as one call, its
// argument deltas (input_json_delta on Messages, tool_calls[].function.arguments
// on chat, with no content at all) timed as output tokens for TTFT and ITL,
// its usage counted, and the level's tool_call_rate is 1. With tool_choice
// auto it calls its one tool on about half the requests (its coin, seeded):
// tool_call_rate is the share of responses that called it. (Its Responses
// API takes no tools; llama-server's tiny model has no tool template, so it
// answers with text.)
func TestInferenceSimToolCalls(t *testing.T) {
	eng := inferenceSim(t, "plain", simFlags...)
	const tools = "tools: [{type: function, function: {name: lookup, parameters: {type: object, properties: {text: {type: string}}, required: [text]}}}]"
	outs := run(t, eng, engines.SimModel, planFor("sim", 64, `
  - {name: messages-required, endpoint: sim, prompts: synth, api: messages, output_tokens: 32, concurrency: [2], requests: 6, `+tools+`, tool_choice: required}
  - {name: chat-required, endpoint: sim, prompts: synth, output_tokens: 32, concurrency: [2], requests: 6, `+tools+`, tool_choice: required}
  - {name: chat-auto, endpoint: sim, prompts: synth, output_tokens: 32, concurrency: [2], requests: 16, `+tools+`, tool_choice: auto}
`))
	for _, o := range outs {
		noFailures(t, o)
		called := 0
		for _, r := range o.recs {
			if r.ToolCalls == 0 {
				if o.stage.Name != "chat-auto" || r.FinishReason == "tool_calls" {
					t.Errorf("%s seq %d: no tool call, finish %q", o.stage.Name, r.Seq, r.FinishReason)
				}
				continue
			}
			called++
			// The simulator holds the first token for its 10 ms TTFT and
			// sends the arguments' tokens 1 ms apart: a TTFT below 10 ms or
			// no ITL would mean the argument deltas were not timed.
			if r.ToolCalls != 1 || r.FinishReason != "tool_calls" || !r.UsageReported || r.Chunks < 2 || r.OutputTokens < r.Chunks {
				t.Errorf("%s seq %d: %d tool calls, finish %q, usage %v, %d argument events for %d tokens",
					o.stage.Name, r.Seq, r.ToolCalls, r.FinishReason, r.UsageReported, r.Chunks, r.OutputTokens)
			}
			// TTFAT is omitted when it is TTFT: the arguments are the answer.
			if r.TTFTMs == nil || *r.TTFTMs < 10 || r.TTFATMs != nil || r.MaxITLMs == nil || r.TPOTMs == nil {
				t.Errorf("%s seq %d: TTFT %s, TTFAT %s, max ITL %s, TPOT %s from the argument deltas",
					o.stage.Name, r.Seq, val(r.TTFTMs), val(r.TTFATMs), val(r.MaxITLMs), val(r.TPOTMs))
			}
		}
		p := o.stage.Points[0]
		share := float64(called) / float64(len(o.recs))
		if o.stage.Name == "chat-auto" && (called == 0 || called == len(o.recs)) {
			t.Errorf("chat-auto: %d of %d responses called the tool, want some but not all", called, len(o.recs))
		} else if o.stage.Name != "chat-auto" && called != len(o.recs) {
			t.Errorf("%s: %d of %d responses called the tool", o.stage.Name, called, len(o.recs))
		}
		if p.ToolCallRate == nil || *p.ToolCallRate != share {
			t.Errorf("%s: tool_call_rate %s, want %d/%d", o.stage.Name, val(p.ToolCallRate), called, len(o.recs))
		}
		if p.ITLP50Ms == nil || p.TTFTP50Ms == nil || *p.TTFTP50Ms < 10 {
			t.Errorf("%s: TTFT p50 %s, ITL p50 %s", o.stage.Name, val(p.TTFTP50Ms), val(p.ITLP50Ms))
		}
		t.Logf("%s: tool_call_rate %s (%d of %d); TTFT p50 %s ms; ITL p50 %s ms; mean output %s",
			o.stage.Name, val(p.ToolCallRate), called, len(o.recs), val(p.TTFTP50Ms), val(p.ITLP50Ms), val(p.MeanOutputTokens))
	}
}

// TestTypedAPINotServed: a base_url whose API root is wrong makes both
// engines answer the API's path with a 404; the stage stops with one error
// naming the API and the URL tried, before any measured request.
func TestTypedAPINotServed(t *testing.T) {
	for _, c := range []struct {
		name, model string
		// eng takes the subtest's t, so an engine missing here skips its
		// subtest only (see TestUnservedBatchAPIs).
		eng func(testing.TB) *engines.Engine
	}{
		{"llama-server", engines.LlamaModel, func(t testing.TB) *engines.Engine { return llama(t, false) }},
		{"llm-d-inference-sim", engines.SimModel, func(t testing.TB) *engines.Engine { return inferenceSim(t, "plain", simFlags...) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			eng := c.eng(t)
			for _, api := range []string{"responses", "messages"} {
				base := eng.Origin + "/v2"
				err := runStageErr(t, base, c.model, planFor("ep", 64, `
  - {name: s, endpoint: ep, prompts: synth, api: `+api+`, output_tokens: 4, concurrency: [2], requests: 4}
`))
				if want := "api " + api + ": POST " + base + "/" + api + " answered http 404"; err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("%s %s: err %v, want %q", eng.Name, api, err, want)
				}
			}
		})
	}
}

// TestInferenceSimTypedAPIs runs the Responses and Messages APIs, pinned
// and natural, against llm-d-inference-sim.
func TestInferenceSimTypedAPIs(t *testing.T) {
	eng := inferenceSim(t, "plain", simFlags...)
	outs := run(t, eng, engines.SimModel, planFor("sim", 256, typedStages("sim", 24, 4, 12, "")))
	checkTyped(t, outs, 256, 24, true)
}

// runStageErr runs the plan's first stage against base and returns the
// stage's error.
func runStageErr(t *testing.T, base, model, planYAML string) error {
	t.Helper()
	src := strings.NewReplacer("ENDPOINT", base, "MODEL", model).Replace(planYAML)
	plan, err := scenario.LoadBytes(t.Name()+".yaml", []byte(src), t.TempDir(), scenario.Options{Getenv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	var logs testutil.SyncBuffer
	name := plan.Stages[0].Endpoint
	e, err := runner.NewEngine(runner.Target{Name: name, Endpoint: plan.Endpoints[name], BaseURL: base}, runner.Options{Logger: zerolog.New(&logs)})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return e.RunStage(ctx, plan.LoadPlan(plan.Stages[0]), recordingSink{Stage: aggregate.NewStage(0), add: func(*result.Request) {}})
}

// TestLlamaServerMessagesKey: llama-server started with --api-key takes the
// key of a Messages request in x-api-key, which is where Runner sends it
// (with anthropic-version, and no bearer token): the right key is served, a
// wrong one is refused with 401 on every request.
func TestLlamaServerMessagesKey(t *testing.T) {
	r := root(t)
	eng := pool.Get(t, "llama-key", func(ctx context.Context) (*engines.Engine, error) {
		return engines.StartLlama(ctx, r, engines.LlamaOptions{APIKey: "k-right"})
	})
	for _, key := range []string{"k-right", "k-wrong"} {
		outs := run(t, eng, engines.LlamaModel, fmt.Sprintf(`
version: 1
name: key
endpoints:
  llama: {base_url: ENDPOINT, model: MODEL, api_key: %s}
prompts:
  synth: {synthetic: {input_tokens: 64, sizing: reference}}
stages:
  - {name: messages, endpoint: llama, prompts: synth, api: messages, output_tokens: 4, concurrency: [1], requests: 2, warmup: 0}
`, key))
		p := outs[0].stage.Points[0]
		if ok := key == "k-right"; ok && (p.Completed != 2 || p.Failed != 0) || !ok && p.ErrorsByKind["http_401"] != 2 {
			t.Errorf("key %s: completed %d, failed %v", key, p.Completed, p.ErrorsByKind)
		}
	}
}
