// Package result is the run's data model: one record per request, one Point per
// load level, one Stage per plan stage, and the Report that holds them. It is a
// leaf package: scenario (to type-check check expressions), runner (to fill it)
// and reporters (to print it) all import it, and it imports none of them.
//
// Field names carry their units (_ms, _s, _tps) in Go, in JSON and in check
// expressions alike; the expr tag is the name a check expression uses.
package result

import "time"

// SchemaVersion is the version of report.json; bump it on any incompatible change.
const SchemaVersion = 1

// Check and stop vocabulary shared by the engine, the reporters and the CLI.
const (
	StatusPass    = "pass"
	StatusFail    = "fail"
	StatusWarn    = "warn"
	StatusSkipped = "skipped"

	StopCompleted   = "completed"
	StopInterrupted = "interrupted"
	StopError       = "error"
)

// Error kinds a failed request is classified into.
const (
	ErrConnect     = "connect"
	ErrTimeout     = "timeout"
	ErrTruncated   = "truncated"
	ErrMalformed   = "malformed"
	ErrServer      = "server_error" // an error object inside a 200 stream
	ErrInterrupted = "interrupted"
	// HTTP failures are "http_<status>", e.g. "http_429".
)

// Request is one request's record: a line of requests.jsonl. It holds numbers
// only, never prompt or output text, so memory per request stays bounded.
type Request struct {
	Stage       string  `json:"stage"`
	Level       int     `json:"level"` // index of the level within the stage
	Concurrency int     `json:"concurrency,omitempty"`
	Rate        float64 `json:"rate,omitempty"`
	Seq         int     `json:"seq"` // order of dispatch within the level
	// Replicate is the replicate of the level the request belongs to (0:
	// the first, or the only one).
	Replicate int    `json:"replicate,omitempty"`
	Warmup    bool   `json:"warmup,omitempty"`
	Nonce     string `json:"nonce"`
	// MaxTokens is the max_tokens the request asked for (lengths may vary
	// per request: sampled output lengths, per-line max_tokens in a file).
	MaxTokens int `json:"max_tokens,omitempty"`
	// Inputs is the texts a batch API's request carried: its inputs, or the
	// documents it scored against the prompt (0, omitted: one prompt).
	Inputs int `json:"inputs,omitempty"`
	// ImageBytes is the bytes of the images the request sent (before
	// their base64 encoding in data URLs; 0, omitted: none).
	ImageBytes int `json:"image_bytes,omitempty"`
	// Prompt is the index, in its prompt set, of the file or inline prompt
	// the request sent (nil for generated prompts), so a replay of these
	// records can send the same prompts.
	Prompt *int      `json:"prompt,omitempty"`
	Start  time.Time `json:"start"`
	// DispatchLagMs is how late the request was sent against when it was due
	// (open loop: its scheduled time; closed loop: when its worker was free).
	DispatchLagMs float64 `json:"dispatch_lag_ms"`
	OK            bool    `json:"ok"`
	Status        int     `json:"status,omitempty"`
	ErrorKind     string  `json:"error_kind,omitempty"`
	Error         string  `json:"error,omitempty"` // short sample message, never a secret
	// TTFTMs is the time to the first chunk carrying content, reasoning or text.
	TTFTMs *float64 `json:"ttft_ms"`
	// TTFATMs is the time to the first answer (content) token; differs from TTFT on
	// reasoning models.
	TTFATMs *float64 `json:"ttfat_ms,omitempty"`
	E2EMs   float64  `json:"e2e_ms"`
	// E2EFromScheduleMs is E2E measured from the scheduled send time (open loop).
	E2EFromScheduleMs *float64 `json:"e2e_from_schedule_ms,omitempty"`
	// TTFTFromScheduleMs is TTFT measured from the scheduled send time (open
	// loop): what a user arriving on schedule waited for the first token.
	TTFTFromScheduleMs *float64 `json:"ttft_from_schedule_ms,omitempty"`
	TPOTMs             *float64 `json:"tpot_ms"`
	MaxITLMs           *float64 `json:"max_itl_ms,omitempty"`
	InputTokens        int      `json:"input_tokens"` // server usage.prompt_tokens (0 when not reported)
	OutputTokens       int      `json:"output_tokens"`
	ReasoningChunks    int      `json:"reasoning_chunks,omitempty"`
	Chunks             int      `json:"chunks"` // content-bearing chunks received
	UsageReported      bool     `json:"usage_reported"`
	// UsageRejected says why the stream's usage was not believed (a count
	// negative, no integer, far above max_tokens or the bytes sent): the
	// request is counted as if it had reported none.
	UsageRejected string `json:"usage_rejected,omitempty"`
	FinishReason  string `json:"finish_reason,omitempty"`
	// ToolCalls is how many tool calls the response made (a stage that
	// sends tools); they are recorded, never executed.
	ToolCalls int `json:"tool_calls,omitempty"`
	Turn      int `json:"turn,omitempty"` // multi-turn conversations: 1-based turn
	// Reconnected: the request failed before any response byte on a
	// kept-alive connection that had carried a request before (the server had
	// closed it), and was sent again once on a new connection; Start and
	// every time are from that second send.
	Reconnected bool `json:"reconnected,omitempty"`
	// Shard is the index of the shard that sent the request, in a sharded
	// run (0, and omitted, otherwise).
	Shard int `json:"shard,omitempty"`
	// ServerTimings is the server's own account of the request, when its
	// stream carries one (llama.cpp's `timings`); nil otherwise.
	ServerTimings *ServerTimings `json:"server_timings,omitempty"`
	// Cancelled is set on a request the client gave up on as the stage's
	// cancel_* settings asked (a user who stopped waiting): neither OK nor
	// failed, it keeps what arrived before (TTFT, chunks, counted output
	// tokens) and its E2E is the time it was cancelled at.
	Cancelled bool `json:"cancelled,omitempty"`
	// Model is the model the request asked for, on a stage that spreads
	// its requests over several (models:); "" otherwise.
	Model string `json:"model,omitempty"`
	// ProbeRequest marks a probe request: a small fixed request sent at a
	// low rate beside the level's load (probe:), counted in the probe
	// requests' point alone.
	ProbeRequest bool `json:"probe_request,omitempty"`
	// Session is the session id the request carried in the stage's
	// session_header (its conversation's nonce; "" without one).
	Session string `json:"session,omitempty"`
	// TraceID is the W3C trace id of the traceparent header the request
	// carried (32 hex digits; empty when the endpoint's traceparent is off),
	// so the request can be found in the server's traces.
	TraceID string `json:"trace_id,omitempty"`
	// ResponseID is the id the server gave its answer (a chat chunk's
	// "id", a Responses or Messages stream's response or message id);
	// XRequestID the x-request-id header of its response, when it sent one.
	ResponseID string `json:"response_id,omitempty"`
	XRequestID string `json:"x_request_id,omitempty"`
}

// ServerTimings is the per-request timing a server reports in its stream
// (llama.cpp's `timings` object, under llama.cpp's own field names): the
// server's view of the request, beside the client's.
type ServerTimings struct {
	// PromptN is the prompt tokens the server evaluated (not served from its cache).
	PromptN int `json:"prompt_n"`
	// PromptMs is the server's prompt-processing time, up to the first token.
	PromptMs float64 `json:"prompt_ms"`
	// PredictedN is the tokens the server generated.
	PredictedN int `json:"predicted_n"`
	// PredictedMs is the server's generation time after the first token.
	PredictedMs float64 `json:"predicted_ms"`
	// CacheN is the prompt tokens reused from the server's cache.
	CacheN int `json:"cache_n"`
	// DraftN and DraftNAccepted are the speculative-decoding draft tokens
	// proposed and accepted for this request; 0 (omitted) without a draft model.
	DraftN         int `json:"draft_n,omitempty"`
	DraftNAccepted int `json:"draft_n_accepted,omitempty"`
}

// Bucket is one bar of a latency distribution: Count samples at or below UpperMs
// (and above the previous bucket's bound).
type Bucket struct {
	UpperMs float64 `json:"le_ms"`
	Count   int64   `json:"count"`
}

// Point is one load level's metrics. The first block keeps the reference load
// generator's names, meanings and rounding exactly (a compatibility contract);
// everything after it is added beside them.
//
// Pointer fields are null when the run could not produce the metric (no
// successes, no server counters, pinned mode for output_token_stdev, ...). A
// check that reads a null metric fails and names it.
type Point struct {
	// --- reference fields ---
	Concurrency        int      `json:"concurrency" expr:"concurrency"`
	InputTokens        int      `json:"input_tokens" expr:"input_tokens"`   // requested
	OutputTokens       int      `json:"output_tokens" expr:"output_tokens"` // requested (max_tokens)
	NRequests          int      `json:"n_requests" expr:"n_requests"`
	Completed          int      `json:"completed" expr:"completed"`
	Failed             int      `json:"failed" expr:"failed"`
	DurationS          float64  `json:"duration_s" expr:"duration_s"`                       // 3 dp
	OutputTPSTotal     float64  `json:"output_tps_total" expr:"output_tps_total"`           // 2 dp
	OutputTPSPerStream float64  `json:"output_tps_per_stream" expr:"output_tps_per_stream"` // 2 dp
	TTFTP50Ms          *float64 `json:"ttft_p50_ms" expr:"ttft_p50_ms"`                     // 2 dp
	TTFTP95Ms          *float64 `json:"ttft_p95_ms" expr:"ttft_p95_ms"`                     // 2 dp
	TPOTP50Ms          *float64 `json:"tpot_p50_ms" expr:"tpot_p50_ms"`                     // 2 dp
	PrefillTPS         *float64 `json:"prefill_tps" expr:"prefill_tps"`                     // 1 dp
	SpecAcceptanceRate *float64 `json:"spec_acceptance_rate" expr:"spec_acceptance_rate"`
	SpecDraftTokens    *int64   `json:"spec_draft_tokens" expr:"spec_draft_tokens"`
	NaturalStop        bool     `json:"natural_stop" expr:"natural_stop"`
	OutputTokenStdev   *float64 `json:"output_token_stdev" expr:"output_token_stdev"` // 2 dp, natural mode
	Error              *string  `json:"error" expr:"error"`                           // first failure

	// --- added: load ---
	Rate             *float64 `json:"rate" expr:"rate"`                           // target req/s (open loop)
	AchievedRate     *float64 `json:"achieved_rate" expr:"achieved_rate"`         // req/s actually dispatched
	RequestTPS       float64  `json:"request_tps" expr:"request_tps"`             // completed / duration_s
	MeanInputTokens  *float64 `json:"mean_input_tokens" expr:"mean_input_tokens"` // server-reported
	MeanOutputTokens *float64 `json:"mean_output_tokens" expr:"mean_output_tokens"`
	// InputTPSTotal is the server-reported input tokens of successes over
	// the measured window: the throughput of an API without output tokens
	// (one that answers whole). Null (omitted) for a level whose successes
	// carried output tokens or reported no usage.
	InputTPSTotal *float64 `json:"input_tps_total,omitempty" expr:"input_tps_total"`
	// MeanInputsPerRequest is the mean texts per measured request of a
	// batch API (its inputs, or the documents it scored); omitted otherwise.
	MeanInputsPerRequest *float64 `json:"mean_inputs_per_request,omitempty" expr:"mean_inputs_per_request"`
	Turn                 int      `json:"turn,omitempty" expr:"turn"` // multi-turn per-turn points
	// Users is a users level's people (each one conversation at a time,
	// thinking between requests); 0 on any other level. What they kept
	// in flight is max_in_flight.
	Users int `json:"users,omitempty" expr:"users"`
	// Series is the rate or concurrency a series level followed (nil: a
	// steady load): its label names the level, its slices say what it asked
	// for over each window. Rate is its mean rate, Concurrency its most
	// streams. Not a metric.
	Series *Series `json:"series,omitempty" expr:"-"`
	// Model is the model a per-model point covers (a stage whose requests
	// spread over several models: models:); "" on a level's own point.
	Model string `json:"model,omitempty" expr:"model"`
	// ProbeRequests marks the point of a level's probe requests (a stage's
	// probe:): what a new user saw at the level's load, apart from it. A
	// level-scope check reads it as probe.METRIC. Not a metric.
	ProbeRequests bool `json:"probe_requests,omitempty" expr:"-"`
	// MaxInFlight is the most measured requests the level had in flight at
	// once (from their start and end times): what a closed-loop level's
	// concurrency label claims, and what an open-loop level actually held.
	// Null for a per-turn point, and for a level past the exact limit whose
	// record carries no live peak.
	MaxInFlight *int `json:"max_in_flight" expr:"max_in_flight"`
	// MaxTokensHitRate is the share (0..1) of a natural-mode level's
	// successes the server cut at max_tokens (finish_reason "length"): the
	// part of the length spread that is the cap's, not the model's. Null in
	// pinned mode, where every request runs to max_tokens on purpose.
	MaxTokensHitRate *float64 `json:"max_tokens_hit_rate" expr:"max_tokens_hit_rate"`
	// ToolCallRate is the share (0..1) of the level's successes whose
	// response called a tool (Request.ToolCalls > 0). Null for a stage
	// that sends no tools.
	ToolCallRate *float64 `json:"tool_call_rate,omitempty" expr:"tool_call_rate"`
	// Probe numbers a capacity search's probes in the order they ran, from 1
	// (0: a listed level). Not a metric: checks and compare never read it.
	Probe int `json:"probe,omitempty" expr:"-"`
	// Replicates is how many independent replicates the level ran as (0:
	// one); its metrics pool them. Not a metric.
	Replicates int `json:"replicates,omitempty" expr:"-"`

	// --- added: latency distributions (ms, 2 dp) ---
	TTFTP90Ms   *float64 `json:"ttft_p90_ms" expr:"ttft_p90_ms"`
	TTFTP99Ms   *float64 `json:"ttft_p99_ms" expr:"ttft_p99_ms"`
	TTFTMeanMs  *float64 `json:"ttft_mean_ms" expr:"ttft_mean_ms"`
	TTFTMaxMs   *float64 `json:"ttft_max_ms" expr:"ttft_max_ms"`
	TPOTP90Ms   *float64 `json:"tpot_p90_ms" expr:"tpot_p90_ms"`
	TPOTP95Ms   *float64 `json:"tpot_p95_ms" expr:"tpot_p95_ms"`
	TPOTP99Ms   *float64 `json:"tpot_p99_ms" expr:"tpot_p99_ms"`
	TPOTMeanMs  *float64 `json:"tpot_mean_ms" expr:"tpot_mean_ms"`
	TPOTMaxMs   *float64 `json:"tpot_max_ms" expr:"tpot_max_ms"`
	ITLP50Ms    *float64 `json:"itl_p50_ms" expr:"itl_p50_ms"`
	ITLP90Ms    *float64 `json:"itl_p90_ms" expr:"itl_p90_ms"`
	ITLP95Ms    *float64 `json:"itl_p95_ms" expr:"itl_p95_ms"`
	ITLP99Ms    *float64 `json:"itl_p99_ms" expr:"itl_p99_ms"`
	ITLMeanMs   *float64 `json:"itl_mean_ms" expr:"itl_mean_ms"`
	ITLMaxMs    *float64 `json:"itl_max_ms" expr:"itl_max_ms"`
	E2EP50Ms    *float64 `json:"e2e_p50_ms" expr:"e2e_p50_ms"`
	E2EP90Ms    *float64 `json:"e2e_p90_ms" expr:"e2e_p90_ms"`
	E2EP95Ms    *float64 `json:"e2e_p95_ms" expr:"e2e_p95_ms"`
	E2EP99Ms    *float64 `json:"e2e_p99_ms" expr:"e2e_p99_ms"`
	E2EMeanMs   *float64 `json:"e2e_mean_ms" expr:"e2e_mean_ms"`
	E2EMaxMs    *float64 `json:"e2e_max_ms" expr:"e2e_max_ms"`
	TTFATP50Ms  *float64 `json:"ttfat_p50_ms" expr:"ttfat_p50_ms"`
	TTFATP90Ms  *float64 `json:"ttfat_p90_ms" expr:"ttfat_p90_ms"`
	TTFATP95Ms  *float64 `json:"ttfat_p95_ms" expr:"ttfat_p95_ms"`
	TTFATP99Ms  *float64 `json:"ttfat_p99_ms" expr:"ttfat_p99_ms"`
	TTFATMeanMs *float64 `json:"ttfat_mean_ms" expr:"ttfat_mean_ms"`
	TTFATMaxMs  *float64 `json:"ttfat_max_ms" expr:"ttfat_max_ms"`

	// Open loop: latency measured from each request's scheduled send time,
	// what a user arriving on schedule waited (dispatch lag included).
	TTFTSchedP50Ms  *float64 `json:"ttft_from_schedule_p50_ms" expr:"ttft_from_schedule_p50_ms"`
	TTFTSchedP90Ms  *float64 `json:"ttft_from_schedule_p90_ms" expr:"ttft_from_schedule_p90_ms"`
	TTFTSchedP95Ms  *float64 `json:"ttft_from_schedule_p95_ms" expr:"ttft_from_schedule_p95_ms"`
	TTFTSchedP99Ms  *float64 `json:"ttft_from_schedule_p99_ms" expr:"ttft_from_schedule_p99_ms"`
	TTFTSchedMeanMs *float64 `json:"ttft_from_schedule_mean_ms" expr:"ttft_from_schedule_mean_ms"`
	TTFTSchedMaxMs  *float64 `json:"ttft_from_schedule_max_ms" expr:"ttft_from_schedule_max_ms"`
	E2ESchedP50Ms   *float64 `json:"e2e_from_schedule_p50_ms" expr:"e2e_from_schedule_p50_ms"`
	E2ESchedP90Ms   *float64 `json:"e2e_from_schedule_p90_ms" expr:"e2e_from_schedule_p90_ms"`
	E2ESchedP95Ms   *float64 `json:"e2e_from_schedule_p95_ms" expr:"e2e_from_schedule_p95_ms"`
	E2ESchedP99Ms   *float64 `json:"e2e_from_schedule_p99_ms" expr:"e2e_from_schedule_p99_ms"`
	E2ESchedMeanMs  *float64 `json:"e2e_from_schedule_mean_ms" expr:"e2e_from_schedule_mean_ms"`
	E2ESchedMaxMs   *float64 `json:"e2e_from_schedule_max_ms" expr:"e2e_from_schedule_max_ms"`

	// TTFTHist and ITLHist are the level's distributions for charts: bars
	// on a log scale (bounds 10^(k/m) ms, m bars a decade chosen for about
	// 24 bars over the level's samples; the first bound at least 0.1 ms,
	// holding every smaller sample). The percentiles do not come from them.
	TTFTHist []Bucket `json:"ttft_hist,omitempty" expr:"-"`
	ITLHist  []Bucket `json:"itl_hist,omitempty" expr:"-"`

	// TTFTOverheadP50Ms and TTFTOverheadP95Ms are percentiles of client TTFT
	// minus the server's own prompt time (llama.cpp's timings.prompt_ms) over
	// the successes whose stream reported it: queueing, transport and client
	// delay, which no server-side dashboard shows. Null when the engine sends
	// no timings.
	TTFTOverheadP50Ms *float64 `json:"ttft_overhead_p50_ms" expr:"ttft_overhead_p50_ms"`
	TTFTOverheadP95Ms *float64 `json:"ttft_overhead_p95_ms" expr:"ttft_overhead_p95_ms"`

	// --- added: failures and goodput ---
	ErrorsByKind map[string]int    `json:"errors_by_kind" expr:"errors_by_kind"`
	ErrorSamples map[string]string `json:"error_samples,omitempty" expr:"-"`
	// Reconnects counts the level's requests that were sent a second time on
	// a new connection because the server had closed the kept-alive one they
	// were first written on (see Request.Reconnected).
	Reconnects int `json:"reconnects" expr:"reconnects"`
	// Cancelled counts the requests the client gave up on (the stage's
	// cancel_* settings): neither completed nor failed. CancelRate is
	// cancelled / n_requests on a stage that gives up on requests; null
	// (omitted) on one that does not, and for a level that sent nothing.
	Cancelled  int      `json:"cancelled,omitempty" expr:"cancelled"`
	CancelRate *float64 `json:"cancel_rate,omitempty" expr:"cancel_rate"`
	// Goodput is the share (0..1) of requests that succeeded and met the stage's
	// per-request SLOs; null when the stage declares none.
	Goodput *float64 `json:"goodput" expr:"goodput"`
	// ErrorRate is failed / n_requests (0..1); null for a level that sent nothing.
	ErrorRate *float64 `json:"error_rate" expr:"error_rate"`

	// --- added: server metrics (deltas over the measured window) ---
	SpecAcceptanceLength *float64           `json:"spec_acceptance_length" expr:"spec_acceptance_length"`
	PrefixCacheHitRate   *float64           `json:"prefix_cache_hit_rate" expr:"prefix_cache_hit_rate"`
	ServerCounters       map[string]float64 `json:"server_counters,omitempty" expr:"server_counters"`

	// --- added: server state and GPUs over the window (telemetry.jsonl) ---
	// The engine's own gauges, read every telemetry interval during the
	// measured window (vLLM's, SGLang's, llama.cpp's and
	// llm-d-inference-sim's names): requests running and waiting, and the
	// KV cache's usage (0..1), as mean, p95 and max over the reads inside
	// the window; null when the endpoint exposes none of them.
	ServerRunningMean *float64 `json:"server_running_mean,omitempty" expr:"server_running_mean"`
	ServerRunningP95  *float64 `json:"server_running_p95,omitempty" expr:"server_running_p95"`
	ServerRunningMax  *float64 `json:"server_running_max,omitempty" expr:"server_running_max"`
	ServerWaitingMean *float64 `json:"server_waiting_mean,omitempty" expr:"server_waiting_mean"`
	ServerWaitingP95  *float64 `json:"server_waiting_p95,omitempty" expr:"server_waiting_p95"`
	ServerWaitingMax  *float64 `json:"server_waiting_max,omitempty" expr:"server_waiting_max"`
	KVCacheUsageMean  *float64 `json:"kv_cache_usage_mean,omitempty" expr:"kv_cache_usage_mean"`
	KVCacheUsageP95   *float64 `json:"kv_cache_usage_p95,omitempty" expr:"kv_cache_usage_p95"`
	KVCacheUsageMax   *float64 `json:"kv_cache_usage_max,omitempty" expr:"kv_cache_usage_max"`
	// ServerPreemptions is the engine's preemption counter's delta over the
	// window (vLLM's num_preemptions).
	ServerPreemptions *int64 `json:"server_preemptions,omitempty" expr:"server_preemptions"`
	// The server's own latency over the window, from the deltas of its
	// latency histograms (vLLM-style *_seconds histograms): percentiles
	// interpolated linearly within buckets (Prometheus's histogram_quantile
	// rule), means from the histograms' sums and counts.
	ServerTTFTP50Ms     *float64 `json:"server_ttft_p50_ms,omitempty" expr:"server_ttft_p50_ms"`
	ServerTTFTP95Ms     *float64 `json:"server_ttft_p95_ms,omitempty" expr:"server_ttft_p95_ms"`
	ServerTTFTP99Ms     *float64 `json:"server_ttft_p99_ms,omitempty" expr:"server_ttft_p99_ms"`
	ServerTTFTMeanMs    *float64 `json:"server_ttft_mean_ms,omitempty" expr:"server_ttft_mean_ms"`
	ServerQueueP50Ms    *float64 `json:"server_queue_p50_ms,omitempty" expr:"server_queue_p50_ms"`
	ServerQueueP95Ms    *float64 `json:"server_queue_p95_ms,omitempty" expr:"server_queue_p95_ms"`
	ServerQueueP99Ms    *float64 `json:"server_queue_p99_ms,omitempty" expr:"server_queue_p99_ms"`
	ServerQueueMeanMs   *float64 `json:"server_queue_mean_ms,omitempty" expr:"server_queue_mean_ms"`
	ServerPrefillP50Ms  *float64 `json:"server_prefill_p50_ms,omitempty" expr:"server_prefill_p50_ms"`
	ServerPrefillP95Ms  *float64 `json:"server_prefill_p95_ms,omitempty" expr:"server_prefill_p95_ms"`
	ServerPrefillP99Ms  *float64 `json:"server_prefill_p99_ms,omitempty" expr:"server_prefill_p99_ms"`
	ServerPrefillMeanMs *float64 `json:"server_prefill_mean_ms,omitempty" expr:"server_prefill_mean_ms"`
	ServerDecodeP50Ms   *float64 `json:"server_decode_p50_ms,omitempty" expr:"server_decode_p50_ms"`
	ServerDecodeP95Ms   *float64 `json:"server_decode_p95_ms,omitempty" expr:"server_decode_p95_ms"`
	ServerDecodeP99Ms   *float64 `json:"server_decode_p99_ms,omitempty" expr:"server_decode_p99_ms"`
	ServerDecodeMeanMs  *float64 `json:"server_decode_mean_ms,omitempty" expr:"server_decode_mean_ms"`
	ServerITLP50Ms      *float64 `json:"server_itl_p50_ms,omitempty" expr:"server_itl_p50_ms"`
	ServerITLP95Ms      *float64 `json:"server_itl_p95_ms,omitempty" expr:"server_itl_p95_ms"`
	ServerITLP99Ms      *float64 `json:"server_itl_p99_ms,omitempty" expr:"server_itl_p99_ms"`
	ServerITLMeanMs     *float64 `json:"server_itl_mean_ms,omitempty" expr:"server_itl_mean_ms"`
	ServerE2EP50Ms      *float64 `json:"server_e2e_p50_ms,omitempty" expr:"server_e2e_p50_ms"`
	ServerE2EP95Ms      *float64 `json:"server_e2e_p95_ms,omitempty" expr:"server_e2e_p95_ms"`
	ServerE2EP99Ms      *float64 `json:"server_e2e_p99_ms,omitempty" expr:"server_e2e_p99_ms"`
	ServerE2EMeanMs     *float64 `json:"server_e2e_mean_ms,omitempty" expr:"server_e2e_mean_ms"`
	// TTFTGapMeanMs is the client's mean TTFT minus the server's own (its
	// histogram's mean): network, the HTTP front end and the client, which
	// no server dashboard shows.
	TTFTGapMeanMs *float64 `json:"ttft_gap_mean_ms,omitempty" expr:"ttft_gap_mean_ms"`
	// GPU telemetry over the window, from the plan's telemetry targets
	// (NVIDIA's DCGM exporter, AMD's device metrics exporter), summed over
	// every GPU they report: how many, their power (mean: energy over the
	// window's length; max: the largest summed read inside it), mean
	// utilisation, the most memory in use, and the energy over the same
	// window as output_tps_total, so energy per token is mean power over
	// output tok/s. EnergySource says how the energy was obtained.
	GPUCount             *int     `json:"gpu_count,omitempty" expr:"gpu_count"`
	GPUPowerMeanW        *float64 `json:"gpu_power_mean_w,omitempty" expr:"gpu_power_mean_w"`
	GPUPowerMaxW         *float64 `json:"gpu_power_max_w,omitempty" expr:"gpu_power_max_w"`
	GPUUtilMeanPercent   *float64 `json:"gpu_util_mean_percent,omitempty" expr:"gpu_util_mean_percent"`
	GPUMemoryUsedMaxMiB  *float64 `json:"gpu_memory_used_max_mib,omitempty" expr:"gpu_memory_used_max_mib"`
	EnergyJ              *float64 `json:"energy_j,omitempty" expr:"energy_j"`
	EnergyPerOutputTokMJ *float64 `json:"energy_per_output_token_mj,omitempty" expr:"energy_per_output_token_mj"`
	OutputTokensPerJoule *float64 `json:"output_tokens_per_joule,omitempty" expr:"output_tokens_per_joule"`
	EnergySource         *string  `json:"energy_source,omitempty" expr:"energy_source"`

	// --- added: validity ---
	// OutputLenMismatch counts pinned-mode successes whose output tokens differ from
	// the requested count (ignore_eos not honoured).
	OutputLenMismatch int `json:"output_len_mismatch" expr:"output_len_mismatch"`
	// UsageRejected counts successes whose stream reported usage that cannot
	// be true (Request.UsageRejected); they are counted as reporting none.
	UsageRejected    int      `json:"usage_rejected" expr:"usage_rejected"`
	DispatchLagP99Ms *float64 `json:"dispatch_lag_p99_ms" expr:"dispatch_lag_p99_ms"`
	DispatchLagMaxMs *float64 `json:"dispatch_lag_max_ms" expr:"dispatch_lag_max_ms"`
	ClientCPUPercent *float64 `json:"client_cpu_percent" expr:"client_cpu_percent"` // of one core
	// ClientSchedP90Ms is the p90 of the Go runtime's scheduling latency over
	// the level: how long the runner's goroutines waited for a core. (p90, not
	// p99: a closed loop's first wave wakes every worker at once, a burst that
	// says nothing about token timing and would own the p99 of a short level.)
	ClientSchedP90Ms *float64 `json:"client_sched_p90_ms" expr:"client_sched_p90_ms"`
	// TimestampSource says how the level's token chunks were timed: "kernel"
	// (the kernel's receive time of every one), "user" (the runner's clock
	// after its read: no kernel time), or "mixed"; TimestampKernelShare is
	// the share of token chunks the kernel timed. Null without token chunks.
	TimestampSource      *string  `json:"timestamp_source,omitempty" expr:"timestamp_source"`
	TimestampKernelShare *float64 `json:"timestamp_kernel_share,omitempty" expr:"timestamp_kernel_share"`
	// ClientReadLag*Ms are the p50, p99 and largest client read lag of the
	// kernel-timed token chunks: how long after the kernel received a
	// chunk's bytes the runner had decoded it. Null without kernel times.
	ClientReadLagP50Ms *float64 `json:"client_read_lag_p50_ms,omitempty" expr:"client_read_lag_p50_ms"`
	ClientReadLagP99Ms *float64 `json:"client_read_lag_p99_ms,omitempty" expr:"client_read_lag_p99_ms"`
	ClientReadLagMaxMs *float64 `json:"client_read_lag_max_ms,omitempty" expr:"client_read_lag_max_ms"`
	ClientBottleneck   bool     `json:"client_bottleneck" expr:"client_bottleneck"`
	// ClientBottleneckBy names the signals that raised ClientBottleneck, as
	// the catalogue's metrics that measure them (client_read_lag_p99_ms,
	// client_cpu_percent, client_sched_p90_ms, dispatch_lag_p99_ms), so a
	// report says why.
	ClientBottleneckBy []string `json:"client_bottleneck_by,omitempty" expr:"-"`
	// The built-in simulator's account of how far it fell behind its own
	// timing model over the window (its /metrics; null for another server).
	// The stretch maxima bound how much that stretched any request's time to
	// first token, decode, and whole (a bucket bound; null past the last);
	// SimBehind is set when the first or second is above 2.5%, and a
	// comparison then judges only changes the stretch cannot explain.
	SimLateSteps        *int64   `json:"sim_late_steps,omitempty" expr:"sim_late_steps"`
	SimLatenessMs       *float64 `json:"sim_lateness_ms,omitempty" expr:"sim_lateness_ms"`
	SimBehindRequests   *int64   `json:"sim_behind_requests,omitempty" expr:"sim_behind_requests"`
	SimLagMeanMs        *float64 `json:"sim_lag_mean_ms,omitempty" expr:"sim_lag_mean_ms"`
	SimTTFTStretchMax   *float64 `json:"sim_ttft_stretch_max,omitempty" expr:"sim_ttft_stretch_max"`
	SimDecodeStretchMax *float64 `json:"sim_decode_stretch_max,omitempty" expr:"sim_decode_stretch_max"`
	SimE2EStretchMax    *float64 `json:"sim_e2e_stretch_max,omitempty" expr:"sim_e2e_stretch_max"`
	SimBehind           bool     `json:"sim_behind,omitempty" expr:"sim_behind"`
	LowConfidence       []string `json:"low_confidence,omitempty" expr:"-"` // metrics drawn from too few samples
	// Warnings say what makes a number of this level wrong: the client set
	// the pace, the nonce did not defeat the prefix cache, the engine did not
	// hold the pinned length, fewer requests were in flight than the label says.
	Warnings []string `json:"warnings,omitempty" expr:"-"`
	// Notes say how a number was obtained without making it wrong
	// (percentiles estimated from a histogram, arrivals that waited for the
	// max_concurrency cap).
	Notes       []string `json:"notes,omitempty" expr:"-"`
	Interrupted bool     `json:"interrupted,omitempty" expr:"-"`

	// Slices is the level cut into time windows, when the stage asked for
	// them (slices:, --slices); nil otherwise. Steady is its steadiness
	// verdict, null when there are no slices or too few to judge (a check
	// reading it then fails and names it).
	Slices *Slices `json:"slices,omitempty" expr:"-"`
	Steady *bool   `json:"steady,omitempty" expr:"steady"`

	// BaselineComparison is this level against the same level of the
	// --baseline run, metric by metric (nil without a baseline); worse() in
	// checks reads it.
	BaselineComparison []Comparison `json:"baseline_comparison,omitempty" expr:"-"`

	// Stop says why a level of a stage with until: stopped sending (nil on
	// a stage without until:, whose levels send their fixed count).
	Stop *LevelStop `json:"stop,omitempty" expr:"-"`
	// Anytime are the anytime-valid intervals, over the level's requests,
	// of the metrics its checks read (and its until: metric), which decide
	// those checks on a stage with until: (nil on other stages).
	Anytime []AnytimeInterval `json:"anytime,omitempty" expr:"-"`
}

// LevelEnv is what a level-scope check expression sees: every Point metric by
// name, plus the matching level of the baseline report (nil without one).
type LevelEnv struct {
	Point
	Baseline *Point `expr:"baseline"`
	// Probe is the level's probe requests' point (a stage's probe:), read
	// as probe.METRIC; nil on a stage without probes.
	Probe *Point `expr:"probe"`
	// Worse is worse(metric, pct): whether the metric is significantly worse
	// than the baseline's, by more than pct percent (Comparison.Fails). It
	// errs without a baseline, as reading baseline.* does.
	Worse func(metric string, pct float64) (bool, error) `expr:"worse"`
}

// StageEnv is what a stage-scope check expression sees.
type StageEnv struct {
	Points   []Point `expr:"points"`
	Baseline []Point `expr:"baseline"` // nil without a baseline
	// Capacity is a search stage's capacity per target, by target name
	// (null: the search decided none); nil on a stage without a search.
	Capacity map[string]*float64 `expr:"capacity"`
	// BaselineCapacity is the baseline stage's Capacity. Expressions write it
	// baseline.capacity (the loader rewrites that to this field, whose
	// name no expression can spell: stage-scope baseline stays a list).
	BaselineCapacity map[string]*float64 `expr:"baseline capacity"`
}

// CheckOutcome is one check evaluated on one level (scope level) or on a whole
// stage (scope stage).
type CheckOutcome struct {
	Name     string `json:"name"`
	Expr     string `json:"expr"`
	Scope    string `json:"scope"`    // level | stage
	Severity string `json:"severity"` // fail | warn
	// Level is the index of the level for level-scope checks; nil for stage scope.
	Level      *int   `json:"level,omitempty"`
	LevelLabel string `json:"level_label,omitempty"` // "c=32" or "rate=4"
	Status     string `json:"status"`                // pass | fail | warn | skipped | undecided
	Message    string `json:"message,omitempty"`
	// Undecided is set on a check of a level of a stage with until: whose
	// interval still straddled its threshold when the level stopped: its
	// status is then the stage's undecided rule's (undecided, or the point
	// value's pass or fail, or fail).
	Undecided bool `json:"undecided,omitempty"`
	// Values are the metric values the expression read, by name.
	Values map[string]any `json:"values,omitempty"`
}

// Endpoint identifies what a stage measured. It never carries a key or header.
type Endpoint struct {
	Name      string `json:"name"`
	BaseURL   string `json:"base_url"`
	Model     string `json:"model"`
	Simulator bool   `json:"simulator,omitempty"`
}

// Stage is one plan stage's result.
type Stage struct {
	Name     string   `json:"name"`
	Endpoint Endpoint `json:"endpoint"`
	API      string   `json:"api"`  // the API the stage called, as the plan names it
	Mode     string   `json:"mode"` // the plan's mode; "" for an API without output
	Load     LoadKind `json:"load"` // what the stage's levels vary
	// Trace is a replay stage's trace, as it asked: requests, span, rates,
	// lengths and the prefix-cache hit rate it implies (nil for other stages).
	Trace    *TraceSummary  `json:"trace,omitempty"`
	Points   []Point        `json:"points"`
	Checks   []CheckOutcome `json:"checks"`
	Warnings []string       `json:"warnings,omitempty"`
	// Error is set when the stage could not run at all (or a level could not).
	Error string `json:"error,omitempty"`
	// Search is a capacity search's outcome, computed from its probes
	// (Points); nil on a stage that lists its levels.
	Search *SearchResult `json:"search,omitempty"`
	// Diagnosis is a sweep's knee, saturation and what limits the server
	// there (package diagnosis); nil on a stage of fewer than two loads.
	Diagnosis *Diagnosis `json:"diagnosis,omitempty"`
	// Interrupted is set when the run was stopped before the stage's levels
	// were done (inside a level or between two): its points are part of
	// what it would have measured, so its stage-scope checks are skipped.
	Interrupted bool `json:"interrupted,omitempty"`
	// SweepStop says why a sweep that stops at saturation ended before its
	// last listed level, and which levels it skipped (nil: it ran them all,
	// or does not stop at saturation).
	SweepStop *SweepStop `json:"sweep_stop,omitempty"`
}

// Plan identifies the plan a report came from.
type Plan struct {
	Name string `json:"name"`
	Path string `json:"path"`
	Hash string `json:"hash"` // sha256 of the plan file's bytes
}

// Report is a whole run: what report.json holds.
type Report struct {
	SchemaVersion int       `json:"schema_version"`
	RunnerVersion string    `json:"runner_version"`
	Plan          Plan      `json:"plan"`
	StartedAt     time.Time `json:"started_at"`
	EndedAt       time.Time `json:"ended_at"`
	// Labels say what the run is (the plan's labels, overridden by --label):
	// at most 64, a key a letter then letters, digits, '_', '.' or '-' (at
	// most 64 bytes), a value one line of at most 256 bytes; untrusted text.
	Labels Labels `json:"labels,omitempty"`
	// Host is the machine that ran it (Facts.Host).
	Host string `json:"host,omitempty"`
	// StopReason is completed, interrupted or error.
	StopReason string   `json:"stop_reason"`
	Verdict    string   `json:"verdict"` // pass | fail
	Stages     []Stage  `json:"stages"`
	Warnings   []string `json:"warnings,omitempty"`
	Baseline   string   `json:"baseline,omitempty"` // path of the baseline report, when given
	// Shard is set on the report of one shard of a sharded run: its levels
	// hold that shard's part only, and its checks are left to runner merge.
	Shard *Shard `json:"shard,omitempty"`
	// Shards is how many shards a merged report was merged from (0: one run).
	Shards int `json:"shards,omitempty"`
	// Comparison says how the levels were compared with the baseline's
	// (each point's baseline_comparison); nil without a baseline.
	Comparison *ComparisonSummary `json:"comparison,omitempty"`
	// Regated is set when the run's records were judged with another
	// plan's checks and SLOs than the run recorded (runner report DIR
	// --plan NEW.yaml); Plan stays the plan that ran.
	Regated *Regate `json:"regated,omitempty"`
	// Export is each export target's account of the run (--export, the
	// plan's export block); empty without one.
	Export []ExportStat `json:"export,omitempty"`
	// Telemetry is each telemetry target's account of the run (the plan's
	// telemetry block); empty without one.
	Telemetry []TelemetryStat `json:"telemetry,omitempty"`
}

// ExportStat is one export target's account of a run: the samples it sent
// and those it dropped (a slow, down or refusing receiver, a full queue).
type ExportStat struct {
	// To is the protocol: prometheus-rw or otlp.
	To string `json:"to"`
	// URL is where the samples went, shown without credentials.
	URL string `json:"url"`
	// RunID is the run_id label every sample carried.
	RunID   string `json:"run_id"`
	Sent    int    `json:"sent"`
	Dropped int    `json:"dropped"`
	// LostEvents counts level events the exporter's goroutine was too far
	// behind to take (their figures are missing, not late).
	LostEvents int `json:"lost_events,omitempty"`
	// LastError is why the last dropped samples were dropped.
	LastError string `json:"last_error,omitempty"`
}

// StageNamed returns the report's stage called name, or nil (also for a nil
// report).
func (r *Report) StageNamed(name string) *Stage {
	if r == nil {
		return nil
	}
	for i := range r.Stages {
		if r.Stages[i].Name == name {
			return &r.Stages[i]
		}
	}
	return nil
}

// Label names a level for people: "c=32" for closed loop, "rate=4" for open
// loop, with " turn=2" after it for a multi-turn stage's per-turn points, and
// "probe 3 " before it for a capacity search's third probe. It is also the
// key that matches a level to its baseline (a probe by its LoadLabel).
func (p *Point) Label() string { return p.label(p.Probe) }

// LoadLabel is Label without the probe number: the load alone ("c=32",
// "rate=4 turn=2"), which is what a search's probe has in common with the
// baseline's probes at the same load.
func (p *Point) LoadLabel() string { return p.label(0) }

// label is the point's label with a search's probe number probe (0: none),
// and its part's after it.
func (p *Point) label(probe int) string {
	if p.Series != nil {
		return decorate(p.Series.Label(), probe, p.Turn) + p.Key().suffix()
	}
	if p.Users > 0 {
		return decorate(UsersLabel(p.Users), probe, p.Turn) + p.Key().suffix()
	}
	return LevelLabel(p.Concurrency, p.Rate, probe, p.Turn) + p.Key().suffix()
}

// PartKey says which part of its level a point covers: a turn of a
// multi-turn level (" turn=2"), a model of a stage that spreads its
// requests over several (" model=lora-a"), the probe requests beside the
// load (" probes"); its zero value is the level itself. A part's point
// follows its level's in the stage's points, and its label keys it (to a
// baseline's, in compare and in the checks) as a level's does.
type PartKey struct {
	Turn          int
	Model         string
	ProbeRequests bool
}

// Key is the part of its level the point covers.
func (p *Point) Key() PartKey {
	return PartKey{Turn: p.Turn, Model: p.Model, ProbeRequests: p.ProbeRequests}
}

// Part reports whether the point covers a part of its level (a turn, a
// model, the probe requests) rather than the level itself.
func (p *Point) Part() bool { return p.Key() != PartKey{} }

// suffix is what a part adds to its level's label (a turn's is decorate's).
func (k PartKey) suffix() string {
	switch {
	case k.Model != "":
		return " model=" + k.Model
	case k.ProbeRequests:
		return " probes"
	}
	return ""
}

// UsersLabel is a users level's label: "users=8".
func UsersLabel(users int) string { return "users=" + itoa(users) }

// LevelLabel is the one place a level's label is made (Point.Label, and the
// engine's label for a level it is about to run): the load ("c=32" closed
// loop, "rate=4" when rate is set), "probe N " before it for a search's
// probe (probe > 0), " turn=T" after it for a per-turn point (turn > 0).
func LevelLabel(concurrency int, rate *float64, probe, turn int) string {
	label := "c=" + itoa(concurrency)
	if rate != nil {
		label = "rate=" + trimFloat(*rate)
	}
	return decorate(label, probe, turn)
}

// decorate is a load's label as a search's probe (probe > 0) or a
// per-turn point (turn > 0) names it.
func decorate(label string, probe, turn int) string {
	if probe > 0 {
		label = "probe " + itoa(probe) + " " + label
	}
	if turn > 0 {
		label += " turn=" + itoa(turn)
	}
	return label
}
