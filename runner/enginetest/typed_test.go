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
			case r.FinishReason == "":
				t.Errorf("%s seq %d: no finish reason", o.stage.Name, r.Seq)
			}
		}
		p := o.stage.Points[0]
		t.Logf("%s: prompt tokens within %.2f%% of %d; mean output %v; TTFT p50 %v ms; ITL p50 %v ms; mismatch %d; finish %q",
			o.stage.Name, 100*inputError(o.recs, in), in, val(p.MeanOutputTokens), val(p.TTFTP50Ms), val(p.ITLP50Ms), p.OutputLenMismatch, o.recs[0].FinishReason)
	}
}

// TestLlamaServerTypedAPIs runs the Responses and Messages APIs, pinned
// and natural, against llama-server.
func TestLlamaServerTypedAPIs(t *testing.T) {
	eng := llama(t, false)
	outs := run(t, eng, engines.LlamaModel, planFor("llama", 256, typedStages("llama", 16, 2, 6, "")))
	checkTyped(t, outs, 256, 16, true)
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
