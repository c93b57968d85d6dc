package enginetest

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/internal/engines"
	"github.com/runnerbench/runner/reporters/html"
	"github.com/runnerbench/runner/result"
)

// TestKVCacheNotDrawnWhereNotMeasured: llm-d-inference-sim without its KV-cache
// model exposes vllm:kv_cache_usage_perc, at 0 in every read, while it
// runs requests. The page draws its requests running and waiting over time
// (the stage has no slices) and, instead of a KV-cache chart at zero, says
// the gauge read 0 in all its reads while up to 2 requests ran.
func TestKVCacheNotDrawnWhereNotMeasured(t *testing.T) {
	eng := inferenceSim(t, "kvzero", "--time-to-first-token", "50ms", "--inter-token-latency", "5ms", "--max-num-seqs", "2")
	st, reads := runTelemetry(t, eng, engines.SimModel, planFor("sim", 64, `
  - {name: q, endpoint: sim, prompts: synth, output_tokens: 20, concurrency: [4], requests: 12}
`))
	kv, running := 0, 0.0
	for _, r := range reads {
		for _, s := range r.Samples {
			switch s.Metric {
			case "vllm:kv_cache_usage_perc":
				if s.Value != 0 {
					t.Fatalf("this llm-d-inference-sim reports a KV-cache usage of %v without --enable-kvcache: the setup needs one that reports 0", s.Value)
				}
				kv++
			case "vllm:num_requests_running":
				running = max(running, s.Value)
			}
		}
	}
	if kv < 3 || running < 1 {
		t.Fatalf("%d KV-cache reads, running up to %v: the setup needs both", kv, running)
	}
	tracks, undrawn := aggregate.Tracks(reads)
	var b bytes.Buffer
	rep := &result.Report{StopReason: result.StopCompleted, Stages: []result.Stage{*st}}
	if err := html.WriteWith(&b, rep, html.Options{Telemetry: &html.Telemetry{Tracks: tracks, Undrawn: undrawn}}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	name := st.Endpoint.Name
	if !strings.Contains(page, "<figcaption>server requests running over time (endpoint "+name+")</figcaption>") ||
		!strings.Contains(page, "<figcaption>server requests waiting over time (endpoint "+name+")</figcaption>") {
		t.Error("the server's state over time is not drawn")
	}
	why := fmt.Sprintf("KV-cache usage: endpoint %s read 0 in all %d reads while it ran up to %s requests", name, kv, fmt.Sprint(running))
	if strings.Contains(page, "KV-cache usage (0–1) over time") || !strings.Contains(page, why) {
		t.Errorf("a KV-cache chart at zero, or no %q", why)
	}
}
