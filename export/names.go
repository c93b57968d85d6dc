package export

import (
	"strings"

	"github.com/runnerbench/runner/result"
)

// typ is what a series is, in both protocols' terms.
type typ uint8

const (
	gauge   typ = iota
	counter     // monotonic within its level: _total in Prometheus, a cumulative Sum in OTLP
	summary     // quantiles, _sum and _count (live latencies)
	histo       // explicit buckets (OTLP only: the semantic conventions' histograms)
)

// unit is how a value is counted: the suffix its Prometheus name carries and
// the OTLP unit, which Prometheus's OTLP receiver turns into the same suffix,
// so both exports land on the same Prometheus names.
type unit struct{ prom, otel string }

var (
	uNone      = unit{"", ""}
	uSeconds   = unit{"_seconds", "s"}
	uRatio     = unit{"_ratio", "1"}
	uRequests  = unit{"", "{request}"}
	uTokens    = unit{"", "{token}"}
	uTokPerSec = unit{"_per_second", "{token}/s"}
	uReqPerSec = unit{"_per_second", "{request}/s"}
	uSteps     = unit{"", "{step}"}
	uWatts     = unit{"_watts", "W"}
	uJoules    = unit{"_joules", "J"}
	uBytes     = unit{"_bytes", "By"}
	uGPUs      = unit{"", "{gpu}"}
	uTokPerJ   = unit{"_per_joule", "{token}/J"}
)

// name is one exported metric: its base name (the Prometheus name without
// unit suffix and _total), unit and type.
type name struct {
	base string
	unit unit
	typ  typ
}

// Prom is the Prometheus name.
func (n name) Prom() string {
	s := n.base + n.unit.prom
	if n.typ == counter {
		s += "_total"
	}
	return s
}

// OTel is the OTLP name: the base with its namespace dotted
// (runner_level_ttft_p95 → runner.level.ttft_p95); a name of the
// semantic conventions is kept as it is.
func (n name) OTel() string {
	if strings.HasPrefix(n.base, "gen_ai.") {
		return n.base
	}
	if rest, ok := strings.CutPrefix(n.base, "runner_level_"); ok {
		return "runner.level." + rest
	}
	return "runner." + strings.TrimPrefix(n.base, "runner_")
}

// pointName maps a catalogue metric to its exported name. scale converts
// the catalogue's value to the name's base unit (ms → s). ok is false for a
// metric that is not exported (see notExported).
type pointName struct {
	name
	scale float64
}

// pointNames are the catalogue metrics whose names are not derived by rule
// (a latency in ms → its base name in seconds).
var pointNames = map[string]pointName{
	"concurrency":             {name{"runner_level_concurrency", uRequests, gauge}, 1},
	"users":                   {name{"runner_level_users", uNone, gauge}, 1},
	"input_tokens":            {name{"runner_level_requested_input_tokens", uTokens, gauge}, 1},
	"output_tokens":           {name{"runner_level_requested_output_tokens", uTokens, gauge}, 1},
	"n_requests":              {name{"runner_level_requests", uRequests, counter}, 1},
	"completed":               {name{"runner_level_completed_requests", uRequests, counter}, 1},
	"failed":                  {name{"runner_level_failed_requests", uRequests, counter}, 1},
	"duration_s":              {name{"runner_level_duration", uSeconds, gauge}, 1},
	"output_tps_total":        {name{"runner_level_output_tokens", uTokPerSec, gauge}, 1},
	"output_tps_per_stream":   {name{"runner_level_output_tokens_per_stream", uTokPerSec, gauge}, 1},
	"prefill_tps":             {name{"runner_level_prefill_tokens", uTokPerSec, gauge}, 1},
	"spec_acceptance_rate":    {name{"runner_level_spec_acceptance", uRatio, gauge}, 1},
	"spec_draft_tokens":       {name{"runner_level_spec_draft_tokens", uTokens, counter}, 1},
	"natural_stop":            {name{"runner_level_natural_stop", uNone, gauge}, 1},
	"output_token_stdev":      {name{"runner_level_output_tokens_stdev", uTokens, gauge}, 1},
	"rate":                    {name{"runner_level_target_requests", uReqPerSec, gauge}, 1},
	"achieved_rate":           {name{"runner_level_dispatched_requests", uReqPerSec, gauge}, 1},
	"request_tps":             {name{"runner_level_completions", uReqPerSec, gauge}, 1},
	"mean_input_tokens":       {name{"runner_level_mean_input_tokens", uTokens, gauge}, 1},
	"mean_output_tokens":      {name{"runner_level_mean_output_tokens", uTokens, gauge}, 1},
	"input_tps_total":         {name{"runner_level_input_tokens", uTokPerSec, gauge}, 1},
	"mean_inputs_per_request": {name{"runner_level_mean_inputs_per_request", uNone, gauge}, 1},
	"max_in_flight":           {name{"runner_level_max_in_flight_requests", uRequests, gauge}, 1},
	"max_tokens_hit_rate":     {name{"runner_level_max_tokens_hit", uRatio, gauge}, 1},
	"tool_call_rate":          {name{"runner_level_tool_call", uRatio, gauge}, 1},
	"errors_by_kind":          {name{"runner_level_errors", uRequests, counter}, 1},
	"reconnects":              {name{"runner_level_reconnects", uRequests, counter}, 1},
	"cancelled":               {name{"runner_level_cancelled_requests", uRequests, counter}, 1},
	"cancel_rate":             {name{"runner_level_cancel", uRatio, gauge}, 1},
	"goodput":                 {name{"runner_level_goodput", uRatio, gauge}, 1},
	"spec_acceptance_length":  {name{"runner_level_spec_acceptance_length", uTokens, gauge}, 1},
	"prefix_cache_hit_rate":   {name{"runner_level_prefix_cache_hit", uRatio, gauge}, 1},
	"output_len_mismatch":     {name{"runner_level_output_len_mismatches", uRequests, counter}, 1},
	"client_cpu_percent":      {name{"runner_level_client_cpu", uRatio, gauge}, 0.01},
	"client_bottleneck":       {name{"runner_level_client_bottleneck", uNone, gauge}, 1},
	"timestamp_kernel_share":  {name{"runner_level_timestamp_kernel", uRatio, gauge}, 1},
	"error_rate":              {name{"runner_level_error", uRatio, gauge}, 1},
	"usage_rejected":          {name{"runner_level_usage_rejected_requests", uRequests, counter}, 1},
	"sim_late_steps":          {name{"runner_level_sim_late_steps", uSteps, counter}, 1},
	"sim_behind_requests":     {name{"runner_level_sim_behind_requests", uRequests, counter}, 1},
	"sim_ttft_stretch_max":    {name{"runner_level_sim_ttft_stretch_max", uRatio, gauge}, 1},
	"sim_decode_stretch_max":  {name{"runner_level_sim_decode_stretch_max", uRatio, gauge}, 1},
	"sim_e2e_stretch_max":     {name{"runner_level_sim_e2e_stretch_max", uRatio, gauge}, 1},
	"sim_behind":              {name{"runner_level_sim_behind", uNone, gauge}, 1},

	"server_running_mean":        {name{"runner_level_server_running_mean", uRequests, gauge}, 1},
	"server_running_p95":         {name{"runner_level_server_running_p95", uRequests, gauge}, 1},
	"server_running_max":         {name{"runner_level_server_running_max", uRequests, gauge}, 1},
	"server_waiting_mean":        {name{"runner_level_server_waiting_mean", uRequests, gauge}, 1},
	"server_waiting_p95":         {name{"runner_level_server_waiting_p95", uRequests, gauge}, 1},
	"server_waiting_max":         {name{"runner_level_server_waiting_max", uRequests, gauge}, 1},
	"kv_cache_usage_mean":        {name{"runner_level_kv_cache_usage_mean", uRatio, gauge}, 1},
	"kv_cache_usage_p95":         {name{"runner_level_kv_cache_usage_p95", uRatio, gauge}, 1},
	"kv_cache_usage_max":         {name{"runner_level_kv_cache_usage_max", uRatio, gauge}, 1},
	"server_preemptions":         {name{"runner_level_server_preemptions", uRequests, counter}, 1},
	"gpu_count":                  {name{"runner_level_gpus", uGPUs, gauge}, 1},
	"gpu_power_mean_w":           {name{"runner_level_gpu_power_mean", uWatts, gauge}, 1},
	"gpu_power_max_w":            {name{"runner_level_gpu_power_max", uWatts, gauge}, 1},
	"gpu_util_mean_percent":      {name{"runner_level_gpu_utilization_mean", uRatio, gauge}, 0.01},
	"gpu_memory_used_max_mib":    {name{"runner_level_gpu_memory_used_max", uBytes, gauge}, 1 << 20},
	"energy_j":                   {name{"runner_level_energy", uJoules, counter}, 1},
	"energy_per_output_token_mj": {name{"runner_level_energy_per_output_token", uJoules, gauge}, 0.001},
	"output_tokens_per_joule":    {name{"runner_level_output_tokens", uTokPerJ, gauge}, 1},
	"steady":                     {name{"runner_level_steady", uNone, gauge}, 1},
}

// notExported are the catalogue metrics that are not numbers a time series
// can hold, and why.
var notExported = map[string]string{
	"error":            "text (the first failure's message)",
	"turn":             "a per-turn point's turn; only whole levels are exported",
	"model":            "a per-model point's model; only whole levels are exported",
	"server_counters":  "the server's own counters, which it exports itself",
	"energy_source":    "text (how the energy was obtained)",
	"timestamp_source": "text (kernel, user or mixed: timestamp_kernel_share is its number)",
}

// pointNameOf returns the exported name of catalogue metric m.
func pointNameOf(m *result.Metric) (pointName, bool) {
	if n, ok := pointNames[m.Name]; ok {
		return n, true
	}
	if _, skip := notExported[m.Name]; skip {
		return pointName{}, false
	}
	if base, ok := strings.CutSuffix(m.Name, "_ms"); ok && m.Unit == "ms" {
		return pointName{name{"runner_level_" + base, uSeconds, gauge}, 0.001}, true
	}
	return pointName{}, false
}

// Live names: the running figures of the level in progress.
var (
	liveStarted   = name{"runner_requests_started", uRequests, counter}
	liveCompleted = name{"runner_requests_completed", uRequests, counter}
	liveFailed    = name{"runner_requests_failed", uRequests, counter} // by kind
	liveOutTok    = name{"runner_output_tokens", uTokens, counter}
	liveInFlight  = name{"runner_in_flight_requests", uRequests, gauge}
	liveTTFT      = name{"runner_ttft", uSeconds, summary}
	liveITL       = name{"runner_itl", uSeconds, summary}
	liveE2E       = name{"runner_e2e", uSeconds, summary}
	liveLag       = name{"runner_dispatch_lag", uSeconds, summary}

	// The OpenTelemetry generative-AI semantic conventions' client
	// histograms (OTLP only; in Prometheus: gen_ai_client_..._seconds_bucket).
	semTTFT   = name{"gen_ai.client.operation.time_to_first_chunk", uSeconds, histo}
	semITL    = name{"gen_ai.client.operation.time_per_output_chunk", uSeconds, histo}
	semE2E    = name{"gen_ai.client.operation.duration", uSeconds, histo}
	semTokens = name{"gen_ai.client.token.usage", uTokens, histo}
)

// durationBounds and tokenBounds are the semantic conventions' advised
// explicit bucket boundaries (seconds, tokens).
var (
	durationBounds = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	tokenBounds    = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
)

// quantiles are the live summaries' quantiles.
var quantiles = []float64{0.5, 0.9, 0.95, 0.99}
