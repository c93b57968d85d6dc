package runner

import (
	"testing"

	"github.com/runnerbench/runner/scenario"
)

// TestLoadedPlan runs a plan as the CLI gets it from scenario.LoadBytes
// (defaults applied, prompts loaded), against the simulator.
func TestLoadedPlan(t *testing.T) {
	s := startSim(t, fastSim())
	yaml := []byte(`version: 1
name: engine-plan
endpoints:
  local:
    base_url: ` + s.URL() + `
    model: sim
prompts:
  synth: {synthetic: {input_tokens: {min: 60, max: 80}}}
  real:
    inline: ["tell me about ships", "and about harbours"]
stages:
  - name: synth
    endpoint: local
    prompts: synth
    output_tokens: 6
    concurrency: [1, 3]
    requests: 3
  - name: real
    endpoint: local
    prompts: real
    api: completions
    mode: natural
    output_tokens: 40
    concurrency: [2]
`)
	plan, err := scenario.LoadBytes("plan.yaml", yaml, t.TempDir(), noEnv)
	if err != nil {
		t.Fatalf("LoadBytes: %v", err)
	}
	e, col := newEngine(t, s.URL(), plan.Endpoints["local"])
	res := runStage(t, e, plan, plan.Stages[0])
	if len(res.Points) != 2 || res.API != "chat" || res.Mode != "pinned" || res.Load != "concurrency" {
		t.Fatalf("stage %+v", res)
	}
	for _, p := range res.Points {
		if p.Completed != 3 || p.Failed != 0 || p.OutputTokens != 6 || p.InputTokens != 70 {
			t.Errorf("point c=%d: completed %d failed %d out %d in %d", p.Concurrency, p.Completed, p.Failed, p.OutputTokens, p.InputTokens)
		}
		if p.MeanInputTokens == nil || *p.MeanInputTokens < 58 || *p.MeanInputTokens > 82 {
			t.Errorf("mean input tokens %v outside the uniform 60..80 range", deref(p.MeanInputTokens))
		}
	}
	res = runStage(t, e, plan, plan.Stages[1])
	p := res.Points[0]
	if res.Mode != "natural" || p.Completed != 2 || !p.NaturalStop {
		t.Fatalf("natural stage: mode %s completed %d natural %v (%v)", res.Mode, p.Completed, p.NaturalStop, p.Error)
	}
	if len(col.measured()) != 8 || col.warmups() != 3 {
		t.Fatalf("%d measured, %d warm-ups", len(col.measured()), col.warmups())
	}
}
