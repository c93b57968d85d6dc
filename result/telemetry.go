package result

import (
	"strings"
	"time"
)

// TelemetryScrape is one line of a result directory's telemetry.jsonl: one
// read of one Prometheus page during a level, with the samples Runner keeps
// of it (time, target, metric, labels, value). The load stage writes one
// line per read as it happens (a failed read too, with its error and no
// samples, so missing samples are visible in the records); everything
// computed from telemetry (server state, GPU power and energy, time slices)
// is a pure function of these lines and the level records, so `runner
// report` and `runner merge` recompute it.
//
// A level's lines are those with its Stage and Level; they start before its
// measured window opens (one read as the level starts, before its warm-ups)
// and end after it closes (one read after its last completion), so a
// counter can be interpolated at both edges of the window (see
// TelemetrySeries.At). Time is on the wall clock, as LevelRecord.Start and
// End are.
//
// Histograms appear as Prometheus samples do: name_bucket with an "le"
// label, name_sum and name_count. A sample whose value is NaN or infinite is
// not kept (JSON has no such numbers).
type TelemetryScrape struct {
	// Time is when the page's headers arrived (the moment its gauges are
	// closest to), or when the read failed.
	Time time.Time `json:"time"`
	// Target is the telemetry target's name as the plan gives it, or the
	// endpoint's name when Endpoint is set.
	Target string `json:"target"`
	// Endpoint is set on reads of the stage's endpoint's own /metrics.
	Endpoint bool `json:"endpoint,omitempty"`
	// Stage and Level are the level being run (Level is its index within
	// the stage, as in LevelRecord).
	Stage string `json:"stage"`
	Level int    `json:"level"`
	// Shard is the shard that read it, in a sharded run (0, omitted, otherwise).
	Shard int `json:"shard,omitempty"`
	// TookMs is how long the read took, request to end of body.
	TookMs float64 `json:"took_ms"`
	// Error says why the read gave no samples (a timeout, an HTTP status, a
	// page too large, not Prometheus text); empty when it succeeded.
	Error string `json:"error,omitempty"`
	// Dropped counts samples the page had beyond the per-read bound, not kept.
	Dropped int `json:"dropped,omitempty"`
	// Samples are the samples kept, in page order.
	Samples []TelemetrySample `json:"samples,omitempty"`
}

// TelemetrySample is one sample of a page: a metric's name, its labels and
// its value.
type TelemetrySample struct {
	Metric string            `json:"metric"`
	Labels map[string]string `json:"labels,omitempty"`
	Value  float64           `json:"value"`
}

// TelemetryStat is one telemetry target's account of a run: how many reads
// it answered and how many failed (their samples are missing, not late).
type TelemetryStat struct {
	Target string `json:"target"`
	// URL is where it was read, shown without credentials.
	URL    string `json:"url"`
	Reads  int    `json:"reads"`
	Failed int    `json:"failed"`
	// LastError is why the last failed read failed.
	LastError string `json:"last_error,omitempty"`
}

// Engine gauge names, first present wins: vLLM's (llm-d-inference-sim's and
// the built-in simulator's), vLLM V0's, SGLang's, llama.cpp's.
var (
	RunningGauges = []string{"vllm:num_requests_running", "sglang:num_running_reqs", "llamacpp:requests_processing"}
	WaitingGauges = []string{"vllm:num_requests_waiting", "sglang:num_queue_reqs", "llamacpp:requests_deferred"}
	KVCacheGauges = []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage", "llamacpp:kv_cache_usage_ratio"}
)

// telemetryKept are the metric names a telemetry read keeps by default
// (beside a target's own list): the engines' state gauges and counters, the
// DCGM exporter's fields, AMD's device metrics exporter's power, energy,
// activity and memory, and a node exporter's CPU, load, memory and network.
// A page holds many more samples (histogram buckets, per-core and per-disk
// series); keeping only what a figure or chart reads keeps telemetry.jsonl
// small at one read a second.
var telemetryKept = map[string]bool{
	"vllm:prompt_tokens_total": true, "vllm:generation_tokens_total": true,
	"vllm:prompt_tokens": true, "vllm:generation_tokens": true,
	"vllm:num_preemptions_total": true, "vllm:num_preemptions": true,
	"sglang:gen_throughput": true, "sglang:num_retracted_reqs": true,
	"llamacpp:n_busy_slots_per_decode": true, "llamacpp:kv_cache_tokens": true,
	"llamacpp:tokens_predicted_total": true, "llamacpp:prompt_tokens_total": true,
	"gpu_package_power": true, "gpu_power_usage": true, "gpu_average_package_power": true,
	"gpu_energy_consumed": true, "gpu_gfx_activity": true, "gpu_used_vram": true, "gpu_total_vram": true,
	"gpu_edge_temperature": true, "gpu_junction_temperature": true, "gpu_memory_temperature": true,
	"node_cpu_seconds_total": true, "node_load1": true, "node_memory_MemAvailable_bytes": true,
	"node_memory_MemTotal_bytes": true, "node_network_receive_bytes_total": true, "node_network_transmit_bytes_total": true,
}

func init() {
	for _, l := range [][]string{RunningGauges, WaitingGauges, KVCacheGauges} {
		for _, n := range l {
			telemetryKept[n] = true
		}
	}
}

// TelemetryKept reports whether a telemetry read keeps metric by default:
// a known engine, GPU or node metric, or any DCGM field (DCGM_FI_*: a
// DCGM exporter exposes the few its counters file names).
func TelemetryKept(metric string) bool {
	return telemetryKept[metric] || strings.HasPrefix(metric, "DCGM_FI_")
}
