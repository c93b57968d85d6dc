package servermetrics

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The fixtures below are written by hand after the engines' exposition as
// published in their docs and sources: vLLM's Python prometheus_client
// declares a counter family without `_total` and names its samples with it
// (plus `_created`); SGLang and llama.cpp declare the `_total` name itself.

// vllmV1 is vLLM ≥ 0.9 (V1 engine): prefix-cache and spec-decode counters,
// one label set per data-parallel engine.
func vllmV1(prompt, drafts, draftTok, accepted, queries, hits float64) string {
	return fmt.Sprintf(`# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 3.0
vllm:num_requests_running{engine="1",model_name="m"} 2.0
# HELP vllm:prompt_tokens_total Number of prefill tokens processed.
# TYPE vllm:prompt_tokens counter
vllm:prompt_tokens_total{engine="0",model_name="m"} %[1]v
vllm:prompt_tokens_total{engine="1",model_name="m"} %[1]v
vllm:prompt_tokens_created{engine="0",model_name="m"} 1.7e+09
# HELP vllm:generation_tokens_total Number of generation tokens processed.
# TYPE vllm:generation_tokens counter
vllm:generation_tokens_total{engine="0",model_name="m"} 500.0
vllm:generation_tokens_total{engine="1",model_name="m"} 500.0
# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number of queried tokens.
# TYPE vllm:prefix_cache_queries counter
vllm:prefix_cache_queries_total{engine="0",model_name="m"} %[5]v
vllm:prefix_cache_queries_total{engine="1",model_name="m"} 0.0
# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of cached tokens.
# TYPE vllm:prefix_cache_hits counter
vllm:prefix_cache_hits_total{engine="0",model_name="m"} %[6]v
vllm:prefix_cache_hits_total{engine="1",model_name="m"} 0.0
# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.
# TYPE vllm:spec_decode_num_drafts counter
vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} %[2]v
# HELP vllm:spec_decode_num_draft_tokens_total Number of draft tokens.
# TYPE vllm:spec_decode_num_draft_tokens counter
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="m"} %[3]v
# HELP vllm:spec_decode_num_accepted_tokens_total Number of accepted tokens.
# TYPE vllm:spec_decode_num_accepted_tokens counter
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} %[4]v
# HELP vllm:spec_decode_num_accepted_tokens_per_pos_total Accepted tokens per draft position.
# TYPE vllm:spec_decode_num_accepted_tokens_per_pos counter
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="0"} 10.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="1"} 5.0
# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.001",model_name="m"} 0.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="m"} 12.0
vllm:time_to_first_token_seconds_count{engine="0",model_name="m"} 12.0
vllm:time_to_first_token_seconds_sum{engine="0",model_name="m"} 1.25
`, prompt, drafts, draftTok, accepted, queries, hits)
}

// vllmOld is an older vLLM: gpu_-prefixed prefix-cache counters and no draft
// count (so no acceptance length).
func vllmOld(draftTok, accepted, queries, hits float64) string {
	return fmt.Sprintf(`# HELP vllm:gpu_prefix_cache_queries_total GPU prefix cache queries, in terms of number of queried tokens.
# TYPE vllm:gpu_prefix_cache_queries counter
vllm:gpu_prefix_cache_queries_total{model_name="m"} %v
# HELP vllm:gpu_prefix_cache_hits_total GPU prefix cache hits, in terms of number of cached tokens.
# TYPE vllm:gpu_prefix_cache_hits counter
vllm:gpu_prefix_cache_hits_total{model_name="m"} %v
# HELP vllm:spec_decode_draft_acceptance_rate Speulative token acceptance rate.
# TYPE vllm:spec_decode_draft_acceptance_rate gauge
vllm:spec_decode_draft_acceptance_rate{model_name="m"} 0.61
# HELP vllm:spec_decode_num_accepted_tokens_total Number of accepted tokens.
# TYPE vllm:spec_decode_num_accepted_tokens_total counter
vllm:spec_decode_num_accepted_tokens_total{model_name="m"} %v
# HELP vllm:spec_decode_num_draft_tokens_total Number of draft tokens.
# TYPE vllm:spec_decode_num_draft_tokens_total counter
vllm:spec_decode_num_draft_tokens_total{model_name="m"} %v
`, queries, hits, accepted, draftTok)
}

// sglang exposes token counters (cached prompt tokens by source in newer
// versions) and gauges for its recent hit rate and acceptance length.
func sglang(prompt, cachedDevice, cachedHost float64) string {
	return fmt.Sprintf(`# HELP sglang:prompt_tokens_total Number of prefill tokens processed.
# TYPE sglang:prompt_tokens_total counter
sglang:prompt_tokens_total{model_name="m"} %v
# HELP sglang:generation_tokens_total Number of generation tokens processed.
# TYPE sglang:generation_tokens_total counter
sglang:generation_tokens_total{model_name="m"} 8.0
# HELP sglang:cached_tokens_total Number of cached prompt tokens by source (device/host/storage).
# TYPE sglang:cached_tokens_total counter
sglang:cached_tokens_total{cache_source="device",model_name="m"} %v
sglang:cached_tokens_total{cache_source="host",model_name="m"} %v
# HELP sglang:cache_hit_rate The prefix cache hit rate.
# TYPE sglang:cache_hit_rate gauge
sglang:cache_hit_rate{model_name="m"} 0.0075
# HELP sglang:spec_accept_length The average acceptance length of speculative decoding.
# TYPE sglang:spec_accept_length gauge
sglang:spec_accept_length{model_name="m"} 2.4
# HELP sglang:spec_accept_rate The average acceptance rate of speculative decoding (accepted tokens / total draft tokens in batch).
# TYPE sglang:spec_accept_rate gauge
sglang:spec_accept_rate{model_name="m"} 0.35
`, prompt, cachedDevice, cachedHost)
}

// llamacpp is llama-server --metrics: no labels, no spec or cache counters.
func llamacpp(prompt, predicted float64) string {
	return fmt.Sprintf(`# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total %v
# HELP llamacpp:prompt_seconds_total Prompt process time
# TYPE llamacpp:prompt_seconds_total counter
llamacpp:prompt_seconds_total 2903.63
# HELP llamacpp:tokens_predicted_total Number of generation tokens processed.
# TYPE llamacpp:tokens_predicted_total counter
llamacpp:tokens_predicted_total %v
# HELP llamacpp:prompt_tokens_seconds Average prompt throughput in tokens/s.
# TYPE llamacpp:prompt_tokens_seconds gauge
llamacpp:prompt_tokens_seconds 2.37151
# HELP llamacpp:kv_cache_usage_ratio KV-cache usage. 1 means 100 percent usage.
# TYPE llamacpp:kv_cache_usage_ratio gauge
llamacpp:kv_cache_usage_ratio 0.125
# HELP llamacpp:requests_processing Number of requests processing.
# TYPE llamacpp:requests_processing gauge
llamacpp:requests_processing 0
`, prompt, predicted)
}

// serve starts a loopback server that returns pages[i] on the i-th scrape
// (the last one thereafter).
func serve(t *testing.T, pages ...string) string {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		i := min(int(n.Add(1))-1, len(pages)-1)
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprint(w, pages[i])
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/metrics"
}

// window scrapes twice and diffs, as the engine does around a level.
func window(t *testing.T, names Names, before, after string) *Delta {
	t.Helper()
	s := New(nil, serve(t, before, after), names)
	b, err := s.Read(context.Background())
	if err != nil || b == nil {
		t.Fatalf("first read: %v, %v", b, err)
	}
	a, err := s.Read(context.Background())
	if err != nil || a == nil {
		t.Fatalf("second read: %v, %v", a, err)
	}
	return Diff(b, a)
}

func want(t *testing.T, name string, got *float64, w any) {
	t.Helper()
	switch w := w.(type) {
	case nil:
		if got != nil {
			t.Errorf("%s = %v, want nil", name, *got)
		}
	case float64:
		if got == nil || *got != w {
			t.Errorf("%s = %v, want %v", name, got, w)
		}
	}
}

func TestVLLMV1(t *testing.T) {
	d := window(t, Names{},
		vllmV1(1000, 10, 30, 15, 2000, 100),
		vllmV1(1500, 50, 150, 90, 6000, 300))
	want(t, "drafts", d.SpecDrafts, 40.0)
	want(t, "draft tokens", d.SpecDraftTokens, 120.0)
	want(t, "accepted", d.SpecAcceptedTokens, 75.0)
	want(t, "acceptance rate", d.AcceptanceRate(), 0.625)     // 75/120
	want(t, "acceptance length", d.AcceptanceLength(), 2.875) // 1 + 75/40
	want(t, "prefix hit rate", d.PrefixCacheHitRate(), 0.05)  // 200/4000
	if got := d.Counters["vllm:prompt_tokens"]; got != 1000 { // two engines × 500
		t.Errorf("prompt tokens delta = %v, want 1000 (summed over label sets)", got)
	}
	if got, ok := d.Counters["vllm:generation_tokens"]; !ok || got != 0 {
		t.Errorf("generation tokens delta = %v, %v; want 0", got, ok)
	}
}

func TestVLLMOldNames(t *testing.T) {
	d := window(t, Names{}, vllmOld(100, 60, 1000, 10), vllmOld(300, 180, 3000, 1010))
	want(t, "acceptance rate", d.AcceptanceRate(), 0.6) // 120/200
	want(t, "acceptance length", d.AcceptanceLength(), nil)
	want(t, "drafts", d.SpecDrafts, nil)
	want(t, "prefix hit rate", d.PrefixCacheHitRate(), 0.5) // 1000/2000
}

func TestSGLang(t *testing.T) {
	d := window(t, Names{}, sglang(1000, 100, 0), sglang(3000, 500, 100))
	want(t, "prefix hit rate", d.PrefixCacheHitRate(), 0.25) // (400+100)/2000
	want(t, "acceptance length", d.AcceptanceLength(), 2.4)  // its gauge
	want(t, "acceptance rate", d.AcceptanceRate(), 0.35)     // its gauge
	if d.Counters["sglang:generation_tokens"] != 0 || d.Counters["sglang:prompt_tokens"] != 2000 {
		t.Errorf("counters %v", d.Counters)
	}
}

func TestLlamaCpp(t *testing.T) {
	d := window(t, Names{}, llamacpp(100, 50), llamacpp(612, 306))
	want(t, "acceptance rate", d.AcceptanceRate(), nil)
	want(t, "acceptance length", d.AcceptanceLength(), nil)
	want(t, "prefix hit rate", d.PrefixCacheHitRate(), nil)
	if d.Counters["llamacpp:prompt_tokens"] != 512 || d.Counters["llamacpp:tokens_predicted"] != 256 {
		t.Errorf("counters %v", d.Counters)
	}
	if _, ok := d.Counters["llamacpp:prompt_tokens_seconds"]; ok {
		t.Error("a gauge was diffed as a counter")
	}
}

// llamacppSpec is llama-server --metrics with a draft model, as this build
// writes it (the spec counters come after the gauges; per-position
// acceptances carry a label).
func llamacppSpec(drafts, draftTok, accepted float64) string {
	return llamacpp(100, 40) + fmt.Sprintf(`# HELP llamacpp:spec_decode_num_draft_tokens_total Number of draft tokens generated.
# TYPE llamacpp:spec_decode_num_draft_tokens_total counter
llamacpp:spec_decode_num_draft_tokens_total %v
# HELP llamacpp:spec_decode_num_accepted_tokens_total Number of draft tokens accepted.
# TYPE llamacpp:spec_decode_num_accepted_tokens_total counter
llamacpp:spec_decode_num_accepted_tokens_total %v
# HELP llamacpp:spec_decode_num_drafts_total Number of drafts generated.
# TYPE llamacpp:spec_decode_num_drafts_total counter
llamacpp:spec_decode_num_drafts_total %v
# HELP llamacpp:spec_decode_num_accepted_tokens_per_pos_total Accepted tokens per draft position.
# TYPE llamacpp:spec_decode_num_accepted_tokens_per_pos_total counter
llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="0"} %v
`, draftTok, accepted, drafts, drafts)
}

// TestLlamaCppSpec: llama.cpp's speculative-decoding counters give the same
// three numbers as vLLM's, by the same definitions.
func TestLlamaCppSpec(t *testing.T) {
	d := window(t, Names{}, llamacppSpec(10, 29, 29), llamacppSpec(190, 556, 500))
	want(t, "drafts", d.SpecDrafts, 180.0)
	want(t, "draft tokens", d.SpecDraftTokens, 527.0)
	want(t, "accepted", d.SpecAcceptedTokens, 471.0)
	want(t, "acceptance rate", d.AcceptanceRate(), 471.0/527)
	want(t, "acceptance length", d.AcceptanceLength(), 1+471.0/180)
	if d.Counters["llamacpp:spec_decode_num_draft_tokens"] != 527 {
		t.Errorf("counters %v", d.Counters)
	}
	// Counters present but nothing drafted (no draft model): null, not 0.
	d = window(t, Names{}, llamacppSpec(0, 0, 0), llamacppSpec(0, 0, 0))
	want(t, "acceptance rate", d.AcceptanceRate(), nil)
	want(t, "acceptance length", d.AcceptanceLength(), nil)
}

// inferenceSim is llm-d-inference-sim's /metrics: vLLM's names, but its
// prefix-cache counters carry no `_total`.
func inferenceSim(queries, hits float64) string {
	return fmt.Sprintf(`# HELP vllm:prefix_cache_hits Prefix cache hits, in terms of number of cached tokens.
# TYPE vllm:prefix_cache_hits counter
vllm:prefix_cache_hits{model_name="testmodel"} %v
# HELP vllm:prefix_cache_queries Prefix cache queries, in terms of number of queried tokens.
# TYPE vllm:prefix_cache_queries counter
vllm:prefix_cache_queries{model_name="testmodel"} %v
# HELP vllm:prompt_tokens_total Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{model_name="testmodel"} %v
`, hits, queries, queries)
}

func TestInferenceSimPrefixCache(t *testing.T) {
	d := window(t, Names{}, inferenceSim(26, 0), inferenceSim(4026, 3000))
	want(t, "prefix hit rate", d.PrefixCacheHitRate(), 0.75) // 3000/4000
	if d.Counters["vllm:prefix_cache_queries"] != 4000 || d.Counters["vllm:prompt_tokens"] != 4000 {
		t.Errorf("counters %v", d.Counters)
	}
}

// TestOverrideNames: plan-given names win, with or without `_total`.
func TestOverrideNames(t *testing.T) {
	page := func(d, a float64) string {
		return fmt.Sprintf("# TYPE my_drafts_total counter\nmy_drafts_total{a=\"1\"} %v\nmy_drafts_total{a=\"2\"} %v\nmy_accepted %v\n", d/2, d/2, a)
	}
	d := window(t, Names{SpecDraftTokens: "my_drafts", SpecAcceptedTokens: "my_accepted_total"}, page(10, 5), page(110, 85))
	want(t, "acceptance rate", d.AcceptanceRate(), 0.8) // 80/100
	if d.Counters["my_drafts"] != 100 {
		t.Errorf("override counter not kept: %v", d.Counters)
	}
}

// TestCounterReset: a counter that went down (engine restarted mid-window)
// gives nil, not a negative or partial count.
func TestCounterReset(t *testing.T) {
	d := window(t, Names{}, vllmV1(1000, 50, 150, 90, 6000, 300), vllmV1(10, 1, 3, 1, 60, 3))
	want(t, "acceptance rate", d.AcceptanceRate(), nil)
	want(t, "prefix hit rate", d.PrefixCacheHitRate(), nil)
	if _, ok := d.Counters["vllm:prompt_tokens"]; ok {
		t.Error("a reset counter was reported")
	}
}

// TestNoMetrics: 404 is "no metrics", (nil, nil), and the diff is nil; an
// unreachable server and a 500 are errors.
func TestNoMetrics(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	s := New(srv.Client(), srv.URL+"/metrics", Names{})
	snap, err := s.Read(context.Background())
	if snap != nil || err != nil {
		t.Fatalf("404: got %v, %v; want nil, nil", snap, err)
	}
	if Diff(snap, snap) != nil || Diff(nil, &Snapshot{}) != nil {
		t.Error("Diff with a nil snapshot is not nil")
	}
	var d *Delta
	if d.AcceptanceRate() != nil || d.AcceptanceLength() != nil || d.PrefixCacheHitRate() != nil {
		t.Error("nil Delta gave a metric")
	}

	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "boom", http.StatusInternalServerError)
	}))
	defer bad.Close()
	if _, err := New(nil, bad.URL+"/metrics?token=s3cret", Names{}).Read(context.Background()); err == nil || !strings.Contains(err.Error(), "500") || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("500: err = %v", err)
	}

	// A port with nothing listening: grab one, then close it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	if _, err := New(nil, "http://"+addr+"/metrics", Names{}).Read(context.Background()); err == nil {
		t.Error("connection refused gave no error")
	}
}

// TestMissingCounters: a page without the known counters gives nil fields,
// not an error.
func TestMissingCounters(t *testing.T) {
	d := window(t, Names{}, "# TYPE up gauge\nup 1\n", "# TYPE up gauge\nup 1\n")
	if d == nil {
		t.Fatal("nil delta for a page with metrics")
	}
	for name, v := range map[string]*float64{"drafts": d.SpecDrafts, "draft tokens": d.SpecDraftTokens, "accepted": d.SpecAcceptedTokens, "queries": d.PrefixCacheQueries, "hits": d.PrefixCacheHits} {
		if v != nil {
			t.Errorf("%s = %v, want nil", name, *v)
		}
	}
	if d.Counters != nil {
		t.Errorf("counters = %v", d.Counters)
	}

	// vLLM's V0 engine has only a hit-rate gauge for its prefix cache.
	v0 := "# TYPE vllm:gpu_prefix_cache_hit_rate gauge\nvllm:gpu_prefix_cache_hit_rate{model_name=\"m\"} 0.42\n"
	d = window(t, Names{}, v0, v0)
	want(t, "prefix hit rate (gauge)", d.PrefixCacheHitRate(), 0.42)
}

// TestParseErrors: text that is not Prometheus exposition is an error, and
// no input panics.
func TestParseErrors(t *testing.T) {
	for _, in := range []string{
		"<html>oops</html>\n",
		"<html>\n<body>\nBad gateway\n</body>\n</html>\n",
		"vllm:x{a=\"1\" 3\n",
		"x 1 2 3 4\n",
	} {
		if _, err := Parse(strings.NewReader(in)); err == nil {
			t.Errorf("Parse(%q) gave no error", in)
		}
	}
	snap, err := Parse(strings.NewReader(""))
	if err != nil || len(snap.SampleNames()) != 0 {
		t.Errorf("empty page: %v, %v", snap.SampleNames(), err)
	}
}

// TestParseLenient: a page the strict parser rejects (one family declared
// twice, as when two processes' pages are concatenated; an OpenMetrics type)
// still yields its samples, labels with braces and escaped quotes included.
func TestParseLenient(t *testing.T) {
	page := `# TYPE vllm:prompt_tokens counter
vllm:prompt_tokens_total{engine="0"} 100
# TYPE vllm:prompt_tokens counter
vllm:prompt_tokens_total{engine="1"} 50
# TYPE vllm:cache_config info
vllm:cache_config_info{block_size="16",odd="a} \"b\" {c"} 1
vllm:prefix_cache_hits_total{engine="0"} 7 1700000000000
not a sample line
`
	strict := expfmt.NewTextParser(model.UTF8Validation)
	if _, err := strict.TextToMetricFamilies(strings.NewReader(page)); err == nil {
		t.Fatal("fixture does not exercise the fallback: the strict parser accepts it")
	}
	snap, err := Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]float64{"vllm:prompt_tokens": 150, "vllm:cache_config_info": 1, "vllm:prefix_cache_hits": 7} {
		if got, ok := snap.Value(name); !ok || got != want {
			t.Errorf("%s = %v, %v; want %v", name, got, ok, want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(vllmV1(1, 2, 3, 4, 5, 6))
	f.Add(sglang(1, 2, 3))
	f.Add(llamacpp(1, 2))
	f.Fuzz(func(t *testing.T, s string) {
		a, err := Parse(strings.NewReader(s))
		if err != nil {
			return
		}
		d := Diff(a, a)
		d.AcceptanceRate()
		d.AcceptanceLength()
		d.PrefixCacheHitRate()
	})
}

// TestHistogramAppearingInTheWindow: a labelled histogram appears at its
// first observation (llm-d-inference-sim's vllm:request_queue_time_seconds
// when a request first waits, seen on v0.10.2), so one the before read
// lacked counts from zero: the window holds all of it. One that went
// backwards (a restart) is still dropped.
func TestHistogramAppearingInTheWindow(t *testing.T) {
	const queue = `# TYPE vllm:request_queue_time_seconds histogram
vllm:request_queue_time_seconds_bucket{model_name="m",le="0.3"} 0
vllm:request_queue_time_seconds_bucket{model_name="m",le="0.5"} 40
vllm:request_queue_time_seconds_bucket{model_name="m",le="+Inf"} 40
vllm:request_queue_time_seconds_sum{model_name="m"} 16.3
vllm:request_queue_time_seconds_count{model_name="m"} 40
`
	before, err := Parse(strings.NewReader("# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	after, err := Parse(strings.NewReader(queue))
	if err != nil {
		t.Fatal(err)
	}
	h, ok := Diff(before, after).Histograms["vllm:request_queue_time_seconds"]
	if !ok || h.Count != 40 || h.Sum != 16.3 || len(h.Buckets) == 0 || h.Buckets[len(h.Buckets)-1].Count != 40 {
		t.Errorf("a histogram new in the window: %+v (present %v)", h, ok)
	}
	if _, ok := Diff(after, before).Histograms["vllm:request_queue_time_seconds"]; ok {
		t.Error("a histogram gone after the window is kept")
	}
}
