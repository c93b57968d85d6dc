package enginetest

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/internal/engines"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/runner"
	"github.com/runnerbench/runner/runner/telemetry"
)

// telemetrySink computes a stage's points as a run does and keeps its
// telemetry reads.
type telemetrySink struct {
	*aggregate.Stage
	mu    *sync.Mutex
	reads *[]*result.TelemetryScrape
}

func (s telemetrySink) Telemetry(r *result.TelemetryScrape) {
	s.mu.Lock()
	*s.reads = append(*s.reads, r)
	s.mu.Unlock()
	s.Stage.Telemetry(r)
}

// runTelemetry runs the plan's first stage against eng reading its
// /metrics (and targets) every 100 ms, and returns the stage and the reads.
func runTelemetry(t *testing.T, eng *engines.Engine, model, planYAML string, targets ...*telemetry.Target) (*result.Stage, []*result.TelemetryScrape) {
	t.Helper()
	s := telemetry.New(targets, 100*time.Millisecond, time.Second)
	t.Cleanup(s.Close)
	plan, e, ctx, _ := openEngine(t, eng.BaseURL, model, planYAML, runner.Options{Telemetry: s, TelemetryEndpoint: true})
	var reads []*result.TelemetryScrape
	sink := telemetrySink{Stage: aggregate.NewStage(0), mu: &sync.Mutex{}, reads: &reads}
	if err := e.RunStage(ctx, plan.LoadPlan(plan.Stages[0]), sink); err != nil {
		t.Fatalf("stage: %v\nengine log:\n%s", err, eng.Log())
	}
	return sink.Result(), reads
}

// TestInferenceSimTelemetry: llm-d-inference-sim's vLLM gauges and latency
// histograms, read during a level that queues (4 streams, 2 slots): the
// running gauge never passes its 2 slots and requests wait; its own TTFT
// is at least the configured 100 ms and at most the client's, its E2E
// close to the client's. Its queue-time histogram appears when a request
// first waits (inside this level's window) and holds the wait: its TTFT
// does not (it is the prefill alone), so the TTFT note takes the queue out
// of the gap instead of calling it all network, and what it leaves for the
// network, the HTTP front end and the client is a small part of the gap.
func TestInferenceSimTelemetry(t *testing.T) {
	eng := inferenceSim(t, "telemetry", "--time-to-first-token", "100ms", "--inter-token-latency", "5ms", "--max-num-seqs", "2")
	st, reads := runTelemetry(t, eng, engines.SimModel, planFor("sim", 64, `
  - {name: q, endpoint: sim, prompts: synth, output_tokens: 20, concurrency: [4], requests: 16}
`))
	p := st.Points[0]
	if p.Failed != 0 {
		t.Fatalf("%d failed: %v", p.Failed, p.ErrorSamples)
	}
	names := map[string]bool{}
	for _, r := range reads {
		for _, s := range r.Samples {
			names[s.Metric] = true
		}
	}
	t.Logf("%d reads; metrics kept: %v", len(reads), names)
	if !names["vllm:num_requests_running"] || !names["vllm:num_requests_waiting"] {
		t.Fatalf("the reads hold no vLLM gauges: %v", names)
	}
	if p.ServerRunningMax == nil || *p.ServerRunningMax < 1 || *p.ServerRunningMax > 2 {
		t.Errorf("server_running_max %s, want 1..2", val(p.ServerRunningMax))
	}
	if p.ServerWaitingMax == nil || *p.ServerWaitingMax < 1 {
		t.Errorf("server_waiting_max %s, want ≥ 1 with 4 streams on 2 slots", val(p.ServerWaitingMax))
	}
	if p.ServerTTFTMeanMs == nil || p.TTFTMeanMs == nil || p.ServerE2EMeanMs == nil || p.E2EMeanMs == nil {
		t.Fatalf("server ttft %s e2e %s", val(p.ServerTTFTMeanMs), val(p.ServerE2EMeanMs))
	}
	if *p.ServerTTFTMeanMs < 95 || *p.ServerTTFTMeanMs > *p.TTFTMeanMs+2 {
		t.Errorf("server TTFT mean %v ms, client's %v ms: want 100 ≤ server ≤ client", *p.ServerTTFTMeanMs, *p.TTFTMeanMs)
	}
	if d := *p.E2EMeanMs - *p.ServerE2EMeanMs; d < -2 || d > 0.2**p.E2EMeanMs {
		t.Errorf("server E2E mean %v ms, client's %v ms", *p.ServerE2EMeanMs, *p.E2EMeanMs)
	}
	// Each request holds a slot for about 100 + 20·5 = 200 ms; a stream
	// that waits, waits for one of them to end.
	if p.ServerQueueMeanMs == nil || *p.ServerQueueMeanMs < 50 {
		t.Fatalf("server queue mean %s ms, want the wait for a slot", val(p.ServerQueueMeanMs))
	}
	note := gapNote(p)
	t.Log(note)
	m := regexp.MustCompile(`which starts after the queue .*the queue is ([\d.]+) ms and ([\d.]+) ms is network`).FindStringSubmatch(note)
	if m == nil {
		t.Fatalf("gap %s ms, queue %s ms: %s", val(p.TTFTGapMeanMs), val(p.ServerQueueMeanMs), note)
	}
	queue, rest := atof(t, m[1]), atof(t, m[2])
	if math.Abs(queue+rest-*p.TTFTGapMeanMs) > 0.02 || queue < 50 || rest > 0.5**p.TTFTGapMeanMs {
		t.Errorf("of a gap of %v ms, %v ms is queue and %v ms network: %s", *p.TTFTGapMeanMs, queue, rest, note)
	}
	t.Logf("running max %s waiting max %s kv max %s; server TTFT p50 %s mean %s, client mean %s, gap %s; prefill mean %s decode mean %s itl p50 %s",
		val(p.ServerRunningMax), val(p.ServerWaitingMax), val(p.KVCacheUsageMax), val(p.ServerTTFTP50Ms), val(p.ServerTTFTMeanMs),
		val(p.TTFTMeanMs), val(p.TTFTGapMeanMs), val(p.ServerPrefillMeanMs), val(p.ServerDecodeMeanMs), val(p.ServerITLP50Ms))
}

// TestLlamaServerTelemetry: llama-server's llamacpp: gauges, read during a
// level of 6 streams on its 4 slots: requests processing never pass 4 and
// some are deferred. It has no latency histograms.
func TestLlamaServerTelemetry(t *testing.T) {
	eng := llama(t, false)
	st, reads := runTelemetry(t, eng, "tiny", planFor("llama", 64, `
  - {name: q, endpoint: llama, prompts: synth, output_tokens: 48, concurrency: [6], requests: 18}
`))
	p := st.Points[0]
	if p.Failed != 0 {
		t.Fatalf("%d failed: %v", p.Failed, p.ErrorSamples)
	}
	names := map[string]bool{}
	for _, r := range reads {
		for _, s := range r.Samples {
			names[s.Metric] = true
		}
	}
	t.Logf("%d reads; metrics kept: %v", len(reads), names)
	if !names["llamacpp:requests_processing"] || !names["llamacpp:requests_deferred"] {
		t.Fatalf("the reads hold no llamacpp: gauges: %v", names)
	}
	if p.ServerRunningMax == nil || *p.ServerRunningMax < 1 || *p.ServerRunningMax > 4 {
		t.Errorf("server_running_max %s, want 1..4 slots", val(p.ServerRunningMax))
	}
	if p.ServerWaitingMax == nil {
		t.Errorf("server_waiting_max null")
	}
	if p.ServerTTFTMeanMs != nil {
		t.Errorf("server TTFT %v from an engine without histograms", *p.ServerTTFTMeanMs)
	}
	t.Logf("running mean %s max %s, waiting max %s, kv max %s", val(p.ServerRunningMean), val(p.ServerRunningMax), val(p.ServerWaitingMax), val(p.KVCacheUsageMax))
}

var nodeBuild struct {
	once sync.Once
	bin  string
	err  error
}

// nodeExporter returns the shared Prometheus node exporter, built once per
// test binary from the tools module.
func nodeExporter(t testing.TB) *engines.Engine {
	t.Helper()
	r := root(t)
	return pool.Get(t, "node_exporter", func(ctx context.Context) (*engines.Engine, error) {
		nodeBuild.once.Do(func() { nodeBuild.bin, nodeBuild.err = engines.BuildNodeExporter(ctx, r) })
		if nodeBuild.err != nil {
			return nil, nodeBuild.err
		}
		return engines.StartNodeExporter(ctx, nodeBuild.bin)
	})
}

// TestNodeExporterTarget reads a real Prometheus node exporter as a
// telemetry target during a level: every read answers, keeps the node's
// CPU, load, memory and network series (and nothing else of its page), and
// gives the point no GPU figures and no telemetry warning.
func TestNodeExporterTarget(t *testing.T) {
	node := nodeExporter(t)
	eng := inferenceSim(t, "plain", simFlags...)
	tg := &telemetry.Target{Name: "node", URL: node.Origin + "/metrics", Keep: telemetry.KeepFor(nil)}
	st, reads := runTelemetry(t, eng, engines.SimModel, planFor("sim", 64, `
  - {name: n, endpoint: sim, prompts: synth, output_tokens: 40, concurrency: [2], requests: 16}
`), tg)
	p := st.Points[0]
	n, kept := 0, map[string]int{}
	for _, r := range reads {
		if r.Target != "node" || r.Endpoint {
			continue
		}
		n++
		if r.Error != "" {
			t.Errorf("node read failed: %s", r.Error)
		}
		for _, s := range r.Samples {
			kept[s.Metric]++
		}
	}
	if n < 2 {
		t.Fatalf("%d reads of the node exporter", n)
	}
	for _, m := range []string{"node_cpu_seconds_total", "node_load1", "node_memory_MemAvailable_bytes", "node_network_receive_bytes_total"} {
		if kept[m] == 0 {
			t.Errorf("no %s kept (kept %v)", m, kept)
		}
	}
	for m := range kept {
		if !strings.HasPrefix(m, "node_") {
			t.Errorf("kept %s from the node exporter", m)
		}
	}
	if p.GPUCount != nil || p.EnergyJ != nil {
		t.Errorf("GPU figures from a node exporter: %v %v", p.GPUCount, p.EnergyJ)
	}
	for _, w := range p.Warnings {
		if strings.Contains(w, "telemetry") {
			t.Errorf("warning %q", w)
		}
	}
	t.Logf("%d reads of the node exporter, %d samples kept a read of %d kinds", n, len(reads[len(reads)-1].Samples), len(kept))
}

// gapNote is a point's note on its TTFT gap ("" when it has none).
func gapNote(p result.Point) string {
	for _, n := range p.Notes {
		if strings.HasPrefix(n, "of the client's mean TTFT") {
			return n
		}
	}
	return ""
}

// TestInferenceSimGapIsNetwork: in front of llm-d-inference-sim, a proxy
// that holds each request 150 ms before passing it on puts that time
// between the client and the server, where no server figure sees it; with
// as many slots as streams nothing waits. The TTFT note says the gap
// (at least the proxy's 150 ms) is network, the HTTP front end and the
// client.
func TestInferenceSimGapIsNetwork(t *testing.T) {
	eng := inferenceSim(t, "network", "--time-to-first-token", "20ms", "--inter-token-latency", "2ms", "--max-num-seqs", "4")
	origin, err := url.Parse(eng.Origin)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(origin)
	rp.FlushInterval = -1 // pass each chunk on as it comes
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			time.Sleep(150 * time.Millisecond)
		}
		rp.ServeHTTP(w, r)
	}))
	defer srv.Close()
	proxy := &engines.Engine{Name: "proxy to " + eng.Name, Origin: srv.URL, BaseURL: srv.URL + "/v1"}
	st, _ := runTelemetry(t, proxy, engines.SimModel, planFor("sim", 64, `
  - {name: net, endpoint: sim, prompts: synth, output_tokens: 8, concurrency: [2], requests: 8}
`))
	p := st.Points[0]
	if p.Failed != 0 || p.TTFTGapMeanMs == nil || *p.TTFTGapMeanMs < 150 {
		t.Fatalf("%d failed, gap %s ms (the proxy holds each request 150 ms)", p.Failed, val(p.TTFTGapMeanMs))
	}
	note := gapNote(p)
	t.Log(note)
	if want := fmt.Sprintf("and %.2f ms is network, the HTTP front end and the client", *p.TTFTGapMeanMs); !strings.Contains(note, want) || strings.Contains(note, "queue (") {
		t.Errorf("waiting max %s, queue %s: %s\nwant %q", val(p.ServerWaitingMax), val(p.ServerQueueMeanMs), note, want)
	}
}

func atof(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
