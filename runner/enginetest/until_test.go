package enginetest

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/runnerbench/runner/internal/engines"
	"github.com/runnerbench/runner/pipeline"
	"github.com/runnerbench/runner/records"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
)

// runUntil runs an until: plan (YAML, ENDPOINT and MODEL filled in) against
// eng through the whole pipeline into a result directory, and returns the
// report and the report recomputed from the records.
func runUntil(t *testing.T, eng *engines.Engine, model, planYAML string) (live, again *result.Report) {
	t.Helper()
	src := []byte(strings.NewReplacer("ENDPOINT", eng.BaseURL, "MODEL", model).Replace(planYAML))
	dir := t.TempDir()
	plan, err := scenario.LoadBytes(t.Name()+".yaml", src, dir, scenario.Options{Getenv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	w, err := records.Create(dir, src)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	live, err = pipeline.Run(ctx, pipeline.Options{Plan: plan, PlanBytes: src, Records: w, Logger: zerolog.Nop()})
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("run: %v\nengine log:\n%s", err, eng.Log())
	}
	if again, err = pipeline.Recompute(dir, nil); err != nil {
		t.Fatal(err)
	}
	return live, again
}

// untilPlan is an until: stage against ENDPOINT: its check far from any
// real TTFT median, so each level is decided as soon as a median can be
// bounded (12 requests at 95%), long before its cap.
const untilPlan = `
version: 1
name: until
endpoints:
  e: {base_url: ENDPOINT, model: MODEL}
prompts:
  synth: {synthetic: {input_tokens: 64}}
stages:
  - name: gate
    endpoint: e
    prompts: synth
    output_tokens: 4
    concurrency: [1, 2]
    until: decided
    max_requests: 200
    checks:
      - {name: interactive, expr: ttft_p50_ms < 20000}
      - {name: ok, expr: failed == 0}
`

// untilDecided checks what an until: plan against a real engine must give:
// each level decided by its check at 12 or more finished requests, far
// below its cap, no request failed, the stop in the report and in the
// report recomputed from the records.
func untilDecided(t *testing.T, live, again *result.Report) {
	t.Helper()
	st := live.Stages[0]
	for _, p := range st.Points {
		s := p.Stop
		if s == nil || s.Reason != result.StopDecided || !slices.Equal(s.By, []string{"interactive"}) || s.Requests < 12 || s.Requests >= 200 || p.Failed != 0 {
			t.Errorf("%s: stop %+v, %d of %d failed", p.Label(), s, p.Failed, p.NRequests)
			continue
		}
		t.Logf("%s: decided at %d requests (%d sent), TTFT p50 %s %s", p.Label(), s.Requests, p.NRequests, val(p.TTFTP50Ms), p.Anytime[0].Text())
	}
	if live.Verdict != result.StatusPass {
		t.Errorf("verdict %s: %+v", live.Verdict, st.Checks)
	}
	a, _ := json.Marshal(live)
	b, _ := json.Marshal(again)
	if !bytes.Equal(a, b) {
		t.Error("the report recomputed from the records differs from the live one")
	}
}

// TestInferenceSimUntil: an until: plan runs on llm-d-inference-sim.
func TestInferenceSimUntil(t *testing.T) {
	eng := inferenceSim(t, "plain", simFlags...)
	live, again := runUntil(t, eng, engines.SimModel, untilPlan)
	untilDecided(t, live, again)
}

// TestLlamaServerUntil: an until: plan runs on llama-server.
func TestLlamaServerUntil(t *testing.T) {
	eng := llama(t, false)
	live, again := runUntil(t, eng, engines.LlamaModel, untilPlan)
	untilDecided(t, live, again)
}
