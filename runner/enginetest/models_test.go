package enginetest

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runnerbench/runner/internal/engines"
)

// loraLines reads the engine's /metrics page every 50 ms until ctx ends and
// returns every vllm:lora_requests_info sample line it saw.
func loraLines(ctx context.Context, url string) func() []string {
	var mu sync.Mutex
	var lines []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if resp, err := http.Get(url); err == nil {
				sc := bufio.NewScanner(resp.Body)
				for sc.Scan() {
					if l := sc.Text(); strings.HasPrefix(l, "vllm:lora_requests_info{") {
						mu.Lock()
						lines = append(lines, l)
						mu.Unlock()
					}
				}
				resp.Body.Close()
			}
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return func() []string {
		<-done
		mu.Lock()
		defer mu.Unlock()
		return lines
	}
}

// loraFlags starts llm-d-inference-sim with two LoRA adapters of its model.
func loraFlags() []string {
	mod := func(name string) string {
		return `{"name":"` + name + `","path":"/adapters/` + name + `","base_model_name":"` + engines.SimModel + `"}`
	}
	return []string{"--max-loras", "2", "--lora-modules", mod("lora-a"), mod("lora-b"),
		"--time-to-first-token", "10ms", "--inter-token-latency", "10ms"}
}

// TestInferenceSimLoRA: a stage's requests spread over llm-d-inference-sim's
// two LoRA adapters (--lora-modules) by weight, 3 to 1. Every request is
// served, each per-model point holds its model's requests, and the server's
// own vllm:lora_requests_info, read during the level, names each adapter
// running at some read, and no other; a model it does not serve is a 404,
// so the adapters were asked for by name.
func TestInferenceSimLoRA(t *testing.T) {
	eng := inferenceSim(t, "lora", loraFlags()...)
	ctx, cancel := context.WithCancel(context.Background())
	lines := loraLines(ctx, metricsURL(eng))
	o := run(t, eng, engines.SimModel, planFor("e", 32, `
  - name: mix
    endpoint: e
    prompts: synth
    output_tokens: 20
    concurrency: [4]
    requests: 40
    models: [{name: lora-a, weight: 3}, {name: lora-b}]
  - {name: unknown, endpoint: e, prompts: synth, output_tokens: 4, concurrency: [1], requests: 2, models: [{name: lora-z}]}
`))
	cancel()
	mix := o[0]
	noFailures(t, mix)
	byModel := map[string]int{}
	for _, r := range mix.recs {
		byModel[r.Model]++
	}
	points := map[string]int{}
	for _, p := range mix.stage.Points {
		points[p.Label()] = p.NRequests
	}
	t.Logf("requests by model %v; points %v", byModel, points)
	if points["c=4 model=lora-a"] != byModel["lora-a"] || points["c=4 model=lora-b"] != byModel["lora-b"] || byModel["lora-a"]+byModel["lora-b"] != 40 {
		t.Errorf("per-model points %v, records by model %v", points, byModel)
	}
	if byModel["lora-a"] <= byModel["lora-b"] {
		t.Errorf("lora-a (weight 3) took %d requests, lora-b (weight 1) %d", byModel["lora-a"], byModel["lora-b"])
	}
	running := map[string]int{}
	for _, l := range lines() {
		_, rest, _ := strings.Cut(l, `running_lora_adapters="`)
		names, _, _ := strings.Cut(rest, `"`)
		for _, n := range strings.Split(names, ",") {
			if n != "" {
				running[n]++
			}
		}
	}
	t.Logf("reads naming each adapter running: %v", running)
	if running["lora-a"] == 0 || running["lora-b"] == 0 || len(running) != 2 {
		t.Errorf("the server's lora_requests_info named %v running: want lora-a and lora-b, nothing else", running)
	}
	if p := o[1].stage.Points[0]; p.Failed != 2 || p.ErrorsByKind["http_404"] != 2 {
		t.Errorf("a model the server does not serve: %d of 2 failed (%v), want two 404s", p.Failed, p.ErrorsByKind)
	}
}
