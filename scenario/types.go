// Package scenario owns the plan: its YAML model, defaults, ${ENV} interpolation,
// validation with file:line:col errors, and compilation of check expressions
// against the typed metric environment of package result. It knows nothing of
// HTTP; package runner executes what it describes.
package scenario

import (
	"time"

	"github.com/expr-lang/expr/vm"

	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario/promptfile"
	"github.com/runnerbench/runner/sim/simconfig"
	"github.com/runnerbench/runner/trace"
)

// Plan is a whole plan file (version 1).
type Plan struct {
	// Version of the plan format; only 1 is supported.
	Version int `yaml:"version" json:"version"`
	// Name of the plan; names the results directory and the report.
	Name string `yaml:"name" json:"name"`
	// Description is free text shown in reports.
	Description string `yaml:"description,omitempty" json:"description,omitempty"`
	// Labels say what the run is (engine, model, hardware, submission, gpus, ...):
	// free key: value strings, recorded in run.jsonl and report.json; --label
	// k=v adds or overrides one per run. At most 64; a key is a letter then
	// letters, digits, '_', '.' or '-', at most 64 bytes; a value one line of
	// at most 256 bytes.
	Labels result.Labels `yaml:"labels,omitempty" json:"labels,omitempty"`
	// Endpoints by name.
	Endpoints map[string]*Endpoint `yaml:"endpoints" json:"endpoints"`
	// Prompts are prompt sets by name.
	Prompts map[string]*PromptSet `yaml:"prompts" json:"prompts"`
	// Stages run in order.
	Stages []*Stage `yaml:"stages" json:"stages"`
	// Export sends the run's figures to Prometheus (remote write) or
	// OpenTelemetry (OTLP/HTTP) while it runs, beside --export's targets.
	Export []*Export `yaml:"export,omitempty" json:"export,omitempty"`
	// Telemetry is what Runner reads during every level beside the requests:
	// the endpoint's own /metrics and the Prometheus pages of the targets
	// named here (a DCGM exporter, AMD's device metrics exporter, a node
	// exporter, another engine replica), written to telemetry.jsonl.
	Telemetry *Telemetry `yaml:"telemetry,omitempty" json:"telemetry,omitempty"`

	// Path is the file the plan was loaded from, Source its bytes and Hash
	// their sha256.
	Path   string `yaml:"-" json:"-"`
	Source []byte `yaml:"-" json:"-"`
	Hash   string `yaml:"-" json:"-"`
}

// Export is one receiver of the run's figures. Its URL's credentials and its
// headers' values follow the endpoints' rules: a credential must be allowed
// for the URL's host (--allow-env NAME@HOST).
type Export struct {
	// To is the protocol: prometheus-rw (remote write 2.0) or otlp (OTLP/HTTP, protobuf).
	To string `yaml:"to" json:"to"`
	// URL is the remote-write URL (http://host:9090/api/v1/write), or the OTLP endpoint as in OTEL_EXPORTER_OTLP_ENDPOINT (Runner appends /v1/metrics).
	URL string `yaml:"url" json:"url"`
	// Headers are sent with every request (e.g. Authorization). Values are treated as secrets.
	Headers map[string]Secret `yaml:"headers,omitempty" json:"headers,omitempty"`
	// Interval is how often a level's running figures are sent. Default 5s.
	Interval Duration `yaml:"interval,omitempty" json:"interval,omitempty"`
}

// Telemetry says what Runner samples during every level, on goroutines of
// its own (never in the way of a send or a token read). A target's URL
// credentials and its headers' values follow the endpoints' rules: a
// credential must be allowed for the URL's host (--allow-env NAME@HOST).
type Telemetry struct {
	// Interval between two reads of each target (and of the endpoint's /metrics). Default 1s; at least 100ms.
	Interval Duration `yaml:"interval,omitempty" json:"interval,omitempty"`
	// Timeout bounds one read. Default: the interval, at most 5s.
	Timeout Duration `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	// Endpoint reads the stage's endpoint's own /metrics (metrics_url) during every level. Default true.
	Endpoint *bool `yaml:"endpoint,omitempty" json:"endpoint,omitempty"`
	// Targets are the Prometheus pages read beside the endpoint's.
	Targets []*TelemetryTarget `yaml:"targets,omitempty" json:"targets,omitempty"`
}

// TelemetryTarget is one Prometheus page read during every level.
type TelemetryTarget struct {
	// Name names the target in telemetry.jsonl and reports.
	Name string `yaml:"name" json:"name"`
	// URL is the page, e.g. http://gpu-node:9400/metrics (DCGM exporter) or http://gpu-node:5000/metrics (AMD).
	URL string `yaml:"url" json:"url"`
	// Headers are sent with every read (e.g. Authorization). Values are treated as secrets.
	Headers map[string]Secret `yaml:"headers,omitempty" json:"headers,omitempty"`
	// Metrics are more metric names to keep beside the known GPU, engine and node ones (a name, or a prefix ending in *).
	Metrics []string `yaml:"metrics,omitempty" json:"metrics,omitempty"`
}

// Defaults of the telemetry block.
const (
	DefaultTelemetryInterval = Duration(time.Second)
	MinTelemetryInterval     = Duration(100 * time.Millisecond)
	MaxTelemetryTimeout      = Duration(5 * time.Second)
	MaxTelemetryTargets      = 32
)

// ReadsEndpoint reports whether the endpoint's own /metrics is sampled
// (true without a telemetry block).
func (t *Telemetry) ReadsEndpoint() bool { return t == nil || t.Endpoint == nil || *t.Endpoint }

// Every is the interval between reads (the default when unset).
func (t *Telemetry) Every() time.Duration {
	if t == nil || t.Interval == 0 {
		return DefaultTelemetryInterval.D()
	}
	return t.Interval.D()
}

// ReadTimeout bounds one read: the timeout given, else the interval, at most MaxTelemetryTimeout.
func (t *Telemetry) ReadTimeout() time.Duration {
	if t != nil && t.Timeout > 0 {
		return t.Timeout.D()
	}
	return min(t.Every(), MaxTelemetryTimeout.D())
}

// Endpoint is an OpenAI-compatible server, or the built-in simulator.
type Endpoint struct {
	// BaseURL is the API root, e.g. http://127.0.0.1:8000/v1. Required unless simulator is set.
	BaseURL string `yaml:"base_url,omitempty" json:"base_url,omitempty"`
	// Model is the model name sent in every request. Default for a simulator: "sim".
	Model string `yaml:"model,omitempty" json:"model,omitempty"`
	// APIKey is sent as "Authorization: Bearer <key>". A secret: never printed, logged or reported.
	APIKey Secret `yaml:"api_key,omitempty" json:"api_key,omitempty"`
	// Headers are extra HTTP headers. Values are treated as secrets.
	Headers map[string]Secret `yaml:"headers,omitempty" json:"headers,omitempty"`
	// MetricsURL is the Prometheus endpoint; default: the base URL's origin + /metrics.
	MetricsURL string `yaml:"metrics_url,omitempty" json:"metrics_url,omitempty"`
	// Counters names server counters for engines whose names Runner does not know.
	Counters *Counters `yaml:"counters,omitempty" json:"counters,omitempty"`
	// ReadyTimeout is how long to wait for the endpoint before the first stage. Default 60s.
	ReadyTimeout Duration `yaml:"ready_timeout,omitempty" json:"ready_timeout,omitempty"`
	// Timeouts bound each request.
	Timeouts Timeouts `yaml:"timeouts,omitempty" json:"timeouts,omitempty"`
	// TLS options for https base URLs.
	TLS *TLS `yaml:"tls,omitempty" json:"tls,omitempty"`
	// Simulator starts the built-in simulator in-process on a loopback port and points the endpoint at it.
	Simulator *simconfig.Config `yaml:"simulator,omitempty" json:"simulator,omitempty"`
	// Traceparent sends a W3C traceparent header with every measured request, a trace id of its own each, recorded in requests.jsonl beside the server's response id and x-request-id, so a request can be found in the server's logs and traces. Default true; false sends none.
	Traceparent *bool `yaml:"traceparent,omitempty" json:"traceparent,omitempty"`
}

// SendsTraceparent reports whether the endpoint's requests carry a
// traceparent (true unless the plan turns it off).
func (e *Endpoint) SendsTraceparent() bool { return e.Traceparent == nil || *e.Traceparent }

// Timeouts bound a request. Zero means the default.
type Timeouts struct {
	// Connect bounds TCP and TLS set-up. Default 10s.
	Connect Duration `yaml:"connect,omitempty" json:"connect,omitempty"`
	// FirstToken bounds the time from sending to the first token. Default 120s.
	FirstToken Duration `yaml:"first_token,omitempty" json:"first_token,omitempty"`
	// Idle bounds the gap between two chunks of a stream. Default 30s.
	Idle Duration `yaml:"idle,omitempty" json:"idle,omitempty"`
	// Request bounds the whole request. Default 10m.
	Request Duration `yaml:"request,omitempty" json:"request,omitempty"`
}

// TLS configures certificate checking.
type TLS struct {
	// CAFile is a PEM bundle of extra trusted CAs, inside the plan's directory (or an --allow-dir one).
	CAFile string `yaml:"ca_file,omitempty" json:"ca_file,omitempty"`
	// InsecureSkipVerify turns certificate checking off; warned about in the log and report.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify,omitempty" json:"insecure_skip_verify,omitempty"`
	// ServerName overrides the name checked in the server certificate.
	ServerName string `yaml:"server_name,omitempty" json:"server_name,omitempty"`

	// CAPEM is the content of CAFile, read and checked by the loader inside
	// the plan's tree; the engine trusts these bytes and never opens CAFile.
	CAPEM []byte `yaml:"-" json:"-"`
}

// Counters names the Prometheus counters Runner reads for an engine it does not know.
type Counters struct {
	// SpecDrafts counts speculative-decoding draft rounds.
	SpecDrafts string `yaml:"spec_drafts,omitempty" json:"spec_drafts,omitempty"`
	// SpecDraftTokens counts tokens proposed by the draft model.
	SpecDraftTokens string `yaml:"spec_draft_tokens,omitempty" json:"spec_draft_tokens,omitempty"`
	// SpecAcceptedTokens counts draft tokens the target model accepted.
	SpecAcceptedTokens string `yaml:"spec_accepted_tokens,omitempty" json:"spec_accepted_tokens,omitempty"`
	// PrefixCacheQueries counts prompt tokens (or blocks) looked up in the prefix cache.
	PrefixCacheQueries string `yaml:"prefix_cache_queries,omitempty" json:"prefix_cache_queries,omitempty"`
	// PrefixCacheHits counts prompt tokens (or blocks) found in the prefix cache.
	PrefixCacheHits string `yaml:"prefix_cache_hits,omitempty" json:"prefix_cache_hits,omitempty"`
}

// PromptSet is where prompts come from: exactly one of synthetic, file, inline or trace.
type PromptSet struct {
	// Synthetic prompts of a requested length in tokens.
	Synthetic *Synthetic `yaml:"synthetic,omitempty" json:"synthetic,omitempty"`
	// File of prompts, inside the plan's directory (or an --allow-dir one): JSONL ({"prompt": ...} or {"messages": [...]},
	// optional "max_tokens"), ShareGPT JSON, or CSV.
	File string `yaml:"file,omitempty" json:"file,omitempty"`
	// Format of File: auto (by extension), jsonl, sharegpt or csv. Default auto.
	Format Format `yaml:"format,omitempty" json:"format,omitempty"`
	// Column names the prompt column of a CSV file. Default "prompt".
	Column string `yaml:"column,omitempty" json:"column,omitempty"`
	// Inline prompts, one string each.
	Inline []string `yaml:"inline,omitempty" json:"inline,omitempty"`
	// Turns makes each prompt a conversation of this many user turns, each resending the history. Default 1.
	Turns int `yaml:"turns,omitempty" json:"turns,omitempty"`
	// Trace replays a trace file: each request's arrival time, prompt and output lengths, and the prefixes prompts share. A stage over it is a replay.
	Trace *Trace `yaml:"trace,omitempty" json:"trace,omitempty"`
	// Images adds images to every request, for an API whose content can carry them: synthetic ones of a size and format, or image files.
	Images *Images `yaml:"images,omitempty" json:"images,omitempty"`

	// Loaded holds the prompts read from File or Inline (filled by the loader).
	Loaded []Prompt `yaml:"-" json:"-"`
}

// Trace is a trace file a prompt set replays.
type Trace struct {
	// File is the trace, inside the plan's directory (or an --allow-dir one).
	File string `yaml:"file" json:"file"`
	// Format is mooncake (JSONL: timestamp in ms, input_length, output_length, hash_ids), azure (CSV: TIMESTAMP, ContextTokens, GeneratedTokens) or runner (requests.jsonl of an earlier run).
	Format TraceFormat `yaml:"format" json:"format"`
	// BlockTokens is the tokens each Mooncake hash id stands for. Default 512.
	BlockTokens int `yaml:"block_tokens,omitempty" json:"block_tokens,omitempty"`
	// Prompts names a file or inline prompt set whose prompts a runner trace's records sent (by their recorded index); without it they get generated text of their recorded length.
	Prompts string `yaml:"prompts,omitempty" json:"prompts,omitempty"`
	// Stage picks the records of this stage from a runner trace that holds several.
	Stage string `yaml:"stage,omitempty" json:"stage,omitempty"`
	// Level picks the records of this level (its index in the stage, from 0) from a runner trace that holds several.
	Level *int `yaml:"level,omitempty" json:"level,omitempty"`

	// Requests are the trace's requests sorted by arrival (read by the loader).
	Requests []trace.Request `yaml:"-" json:"-"`
	// Note is said in the replay stage's warnings (records completed with means).
	Note string `yaml:"-" json:"-"`
}

// Prompt is one supplied prompt (a prompt file's, see package promptfile).
type Prompt = promptfile.Prompt

// Synthetic describes generated prompts.
type Synthetic struct {
	// InputTokens is the prompt length in tokens: a number, {min, max} (uniform) or {mean, stdev[, min, max]} (normal).
	InputTokens Length `yaml:"input_tokens" json:"input_tokens"`
	// Sizing is how text length is chosen: calibrated (default; probe the server's tokenizer)
	// or reference (the reference generator's tokens/0.75 words, for comparing old results).
	Sizing Sizing `yaml:"sizing,omitempty" json:"sizing,omitempty"`
	// SharedPrefix makes groups of prompts share a prefix, to measure prefix caching on purpose.
	SharedPrefix *SharedPrefix `yaml:"shared_prefix,omitempty" json:"shared_prefix,omitempty"`
}

// SharedPrefix makes Groups groups of prompts, each sharing a prefix of
// PrefixTokens tokens; the nonce goes after the shared prefix.
type SharedPrefix struct {
	// Groups is the number of distinct shared prefixes; prompts are spread over them.
	Groups int `yaml:"groups" json:"groups"`
	// PrefixTokens is the length of each shared prefix in tokens.
	PrefixTokens int `yaml:"prefix_tokens" json:"prefix_tokens"`
}

// Length is a token count: fixed, uniform in [Min, Max], or normal(Mean, Stdev) clipped to [Min, Max].
// In YAML it is either a number or a mapping.
type Length struct {
	Fixed int     `yaml:"-" json:"-"`
	Min   int     `yaml:"min,omitempty" json:"min,omitempty"`
	Max   int     `yaml:"max,omitempty" json:"max,omitempty"`
	Mean  float64 `yaml:"mean,omitempty" json:"mean,omitempty"`
	Stdev float64 `yaml:"stdev,omitempty" json:"stdev,omitempty"`
}

// Stage is one measured sweep: a list of load levels against one endpoint.
type Stage struct {
	// Name of the stage, unique in the plan.
	Name string `yaml:"name" json:"name"`
	// Endpoint names an entry of endpoints.
	Endpoint string `yaml:"endpoint" json:"endpoint"`
	// Prompts names an entry of prompts.
	Prompts string `yaml:"prompts" json:"prompts"`
	// API is the API the stage calls, a name in the protocol registry (default chat); one that is not streamed has an E2E and input tokens, no first token or output tokens.
	API API `yaml:"api,omitempty" json:"api,omitempty"`
	// InputsPerRequest is how many texts a request of an API that batches inputs carries (its batch), each a prompt of the prompt set. Default 1.
	InputsPerRequest int `yaml:"inputs_per_request,omitempty" json:"inputs_per_request,omitempty"`
	// DocumentsPerRequest is how many documents a request of an API that scores documents scores against its query (the prompt). Default 8.
	DocumentsPerRequest int `yaml:"documents_per_request,omitempty" json:"documents_per_request,omitempty"`
	// DocumentTokens is each scored document's length in tokens, generated like a synthetic prompt. Default: the prompt set's input_tokens.
	DocumentTokens *Length `yaml:"document_tokens,omitempty" json:"document_tokens,omitempty"`
	// Mode is pinned (ignore_eos, exactly output_tokens; default) or natural (the model stops); an API that is not streamed has none.
	Mode Mode `yaml:"mode,omitempty" json:"mode,omitempty"`
	// InputTokens overrides the synthetic prompt set's input length for this stage.
	InputTokens *Length `yaml:"input_tokens,omitempty" json:"input_tokens,omitempty"`
	// OutputTokens is max_tokens per request. Default 256.
	OutputTokens Length `yaml:"output_tokens,omitempty" json:"output_tokens,omitempty"`
	// Concurrency levels (closed loop). Exactly one of concurrency, rate and search.
	Concurrency []int `yaml:"concurrency,omitempty" json:"concurrency,omitempty"`
	// Rate levels in requests per second (open loop).
	Rate []float64 `yaml:"rate,omitempty" json:"rate,omitempty"`
	// Search looks for the highest load each target holds at, instead of a list of levels.
	Search *Search `yaml:"search,omitempty" json:"search,omitempty"`
	// Series makes the stage one level whose rate or concurrency follows a series over time: a linear or exponential ramp, steps, or pieces of (duration, load); the level lasts as long as its pieces, and its slices (by default a twentieth of it, at least 1s; a step's length for steps) show the load asked for beside the latencies.
	Series *Series `yaml:"series,omitempty" json:"series,omitempty"`
	// Users levels: each of N users holds one conversation at a time (the prompt set's turns long; a new one after its last turn) and waits think_time before each request after their first. requests counts conversations.
	Users []int `yaml:"users,omitempty" json:"users,omitempty"`
	// ThinkTime is how long a user waits before each request after their first (users stages): a duration, or drawn with the seed: {min, max} uniform, {mean, stdev[, min, max]} normal (clipped at 0), {exponential: MEAN}.
	ThinkTime *ThinkTime `yaml:"think_time,omitempty" json:"think_time,omitempty"`
	// Probe sends small fixed requests at a low rate beside each level's load, reported apart (a point of their own; checks read them as probe.METRIC): what a new user sees while the server is at this load.
	Probe *Probe `yaml:"probe,omitempty" json:"probe,omitempty"`
	// Models spreads the stage's requests over several model names (LoRA adapters, or models behind one router), each drawn with the seed by its weight (a conversation keeps its model); one point per model follows each level's. Default: the endpoint's model alone.
	Models []*ModelWeight `yaml:"models,omitempty" json:"models,omitempty"`
	// SessionHeader names a header that carries each conversation's session id (its nonce) on every request of it, for session-affine routers (e.g. x-session-id).
	SessionHeader string `yaml:"session_header,omitempty" json:"session_header,omitempty"`
	// Arrival is the open-loop arrival process: poisson (default), constant or gamma.
	Arrival Arrival `yaml:"arrival,omitempty" json:"arrival,omitempty"`
	// Burstiness is the gamma shape's inverse: 1 is Poisson, above 1 burstier.
	Burstiness float64 `yaml:"burstiness,omitempty" json:"burstiness,omitempty"`
	// MaxConcurrency caps in-flight requests in open loop (0: no cap).
	MaxConcurrency int `yaml:"max_concurrency,omitempty" json:"max_concurrency,omitempty"`
	// Requests per level: one number for every level, or a list with one per level
	// (requests: [8, 32, 64] beside concurrency: [1, 8, 32]). A closed-loop level needs at
	// least as many as its concurrency. Default: the level's concurrency (the reference's
	// single wave), or rate × duration in open loop.
	Requests PerLevel `yaml:"requests,omitempty" json:"requests,omitempty"`
	// Duration bounds each level by time instead of (or as well as) requests.
	Duration Duration `yaml:"duration,omitempty" json:"duration,omitempty"`
	// Until makes levels run until their answer is known instead of for a fixed count: decided (every level-scope check that applies to the level is decided: the anytime-valid interval, at the stage's confidence, of each metric it reads lies wholly on one side of its threshold) or "METRIC within P%" (the metric's interval lies within ±P% of its value); one rule for every level, or a list with one per level (fixed: that level sends its requests or duration as usual). Needs max_requests or max_duration; not on a search, a replay or replicates, and a sharded run refuses it.
	Until UntilRules `yaml:"until,omitempty" json:"until,omitempty"`
	// MinRequests is the fewest requests an until level sends before its rule may stop it: one number, or one per level. Default: what the percentiles its checks read need (a p50 5, a p95 20, a p99 100), and at least the level's concurrency (three waves of it with stop_at_saturation).
	MinRequests PerLevel `yaml:"min_requests,omitempty" json:"min_requests,omitempty"`
	// MaxRequests caps an until level's requests: one number, or one per level. A level that reaches it (or max_duration) undecided says so.
	MaxRequests PerLevel `yaml:"max_requests,omitempty" json:"max_requests,omitempty"`
	// MaxDuration caps an until level's measured time.
	MaxDuration Duration `yaml:"max_duration,omitempty" json:"max_duration,omitempty"`
	// Confidence is the two-sided confidence of the intervals until decides by and of the saturation test of stop_at_saturation. Default 0.95.
	Confidence float64 `yaml:"confidence,omitempty" json:"confidence,omitempty"`
	// Undecided is what a check reads when its until level reaches a cap with the check undecided: point (default: pass or fail on its value, as a fixed count would), undecided (status undecided, which fails nothing) or fail.
	Undecided Undecided `yaml:"undecided,omitempty" json:"undecided,omitempty"`
	// StopAtSaturation ends a concurrency or rate sweep at the server's saturation: at the first level whose output throughput (request throughput for an API without output) grew by less than 10% over the level before, within its interval, while TTFT p50 (E2E p50) or the server's waiting queue grew; an open loop also when its requests could not be sent at 90% of the offered rate. The levels left are reported as skipped, with the reason.
	StopAtSaturation bool `yaml:"stop_at_saturation,omitempty" json:"stop_at_saturation,omitempty"`
	// Ramp spreads worker starts over this time at the start of each closed-loop level.
	Ramp Duration `yaml:"ramp,omitempty" json:"ramp,omitempty"`
	// Slices cuts each level into time windows of this length (e.g. 10s, at least 1s), from its measured window's opening: per slice the request rate, output tok/s, TTFT, ITL and E2E p50 and p95 and requests in flight, in report.json (slices in each level's point) and drawn over time in report.html; a level that was not steady across them (a first slice far from the rest, or a real trend) is warned about, and the metric steady says so to a check. Off by default; --slices sets it for every stage.
	Slices Duration `yaml:"slices,omitempty" json:"slices,omitempty"`
	// Replicates runs each closed-loop level as this many independent replicates back to back, sharing its requests (and duration) evenly, each a fresh start of its streams. The level's metrics pool them; a comparison with a baseline also sees how much whole replicates differ (a batching rhythm a closed loop settles into), not only its requests. Default 1.
	Replicates int `yaml:"replicates,omitempty" json:"replicates,omitempty"`
	// Warmup is the number of unmeasured warm-up requests before each level. Default 1.
	Warmup *int `yaml:"warmup,omitempty" json:"warmup,omitempty"`
	// Temperature sent with each request. Default 0.
	Temperature *float64 `yaml:"temperature,omitempty" json:"temperature,omitempty"`
	// ExtraBody is merged into every request body.
	ExtraBody map[string]any `yaml:"extra_body,omitempty" json:"extra_body,omitempty"`
	// Tools are functions the model may call, in OpenAI's chat form ({type: function, function: {name, description, parameters}}), sent with every request in the stage's API's own form (an API whose requests can carry tools). A call the server returns is recorded (tool_calls, tool_call_rate), never executed; its argument deltas are output tokens.
	Tools []*ToolDef `yaml:"tools,omitempty" json:"tools,omitempty"`
	// ToolChoice is how the model is asked to use the tools: auto, none, required, or {type: function, function: {name: NAME}}. Default: the server's (auto).
	ToolChoice *ToolChoice `yaml:"tool_choice,omitempty" json:"tool_choice,omitempty"`
	// Seed makes prompts, lengths and arrival schedules reproducible. Default 1.
	Seed *int64 `yaml:"seed,omitempty" json:"seed,omitempty"`
	// SLO is the per-request objective that goodput counts against.
	SLO *SLO `yaml:"slo,omitempty" json:"slo,omitempty"`
	// Replay is how a stage over trace prompts replays the trace: its speed and window.
	Replay *Replay `yaml:"replay,omitempty" json:"replay,omitempty"`
	// CancelAfter gives up on a request this long after it was sent, as a user who stops waiting does: it is recorded as cancelled, with what arrived, neither ok nor failed (cancelled, cancel_rate).
	CancelAfter Duration `yaml:"cancel_after,omitempty" json:"cancel_after,omitempty"`
	// CancelAfterTokens gives up on a request once this many token chunks of its answer have arrived (a streamed API only).
	CancelAfterTokens int `yaml:"cancel_after_tokens,omitempty" json:"cancel_after_tokens,omitempty"`
	// CancelShare is the share (0 < s ≤ 1) of requests that give up, drawn with the seed (default 1 with cancel_after or cancel_after_tokens); alone, each of them gives up after a number of token chunks drawn uniformly below its max_tokens.
	CancelShare float64 `yaml:"cancel_share,omitempty" json:"cancel_share,omitempty"`
	// Checks are pass/fail expressions over the measured metrics.
	Checks []*Check `yaml:"checks,omitempty" json:"checks,omitempty"`
}

// Replay is how a stage replays its trace: one open-loop level whose
// requests arrive at the trace's times, divided by Speedup, over the
// trace's window [Start, End) (the stage's requests takes the first N).
type Replay struct {
	// Speedup divides the trace's arrival times: 2 replays it twice as fast, 0.5 at half speed. Default 1.
	Speedup float64 `yaml:"speedup,omitempty" json:"speedup,omitempty"`
	// Start is where in the trace the replay begins, on its own clock (Mooncake: its timestamps; Azure and runner traces: from the first request).
	Start Duration `yaml:"start,omitempty" json:"start,omitempty"`
	// End is where in the trace the replay stops (requests arriving before it are sent); default: the trace's end.
	End Duration `yaml:"end,omitempty" json:"end,omitempty"`
}

// SLO is a per-request service-level objective; a request meets it when every set bound holds.
type SLO struct {
	// TTFTMs bounds the time to first token, in milliseconds.
	TTFTMs float64 `yaml:"ttft_ms,omitempty" json:"ttft_ms,omitempty"`
	// TPOTMs bounds the mean time per output token after the first, in milliseconds.
	TPOTMs float64 `yaml:"tpot_ms,omitempty" json:"tpot_ms,omitempty"`
	// E2EMs bounds the whole request, in milliseconds.
	E2EMs float64 `yaml:"e2e_ms,omitempty" json:"e2e_ms,omitempty"`
}

// Check is a pass/fail expression over the measured metrics.
type Check struct {
	// Name shown in reports. Default: the expression.
	Name string `yaml:"name,omitempty" json:"name,omitempty"`
	// Expr is an expr-lang boolean expression over the metrics (level scope) or points (stage scope).
	Expr string `yaml:"expr" json:"expr"`
	// When limits a level-scope check to the levels where this expression is true.
	When string `yaml:"when,omitempty" json:"when,omitempty"`
	// Scope is level (default: evaluated on every level) or stage (sees points).
	Scope Scope `yaml:"scope,omitempty" json:"scope,omitempty"`
	// Severity is fail (default: a failure fails the run) or warn (reported only).
	Severity Severity `yaml:"severity,omitempty" json:"severity,omitempty"`

	// Program and WhenProgram are compiled by the loader.
	Program     *vm.Program `yaml:"-" json:"-"`
	WhenProgram *vm.Program `yaml:"-" json:"-"`
	// Metrics are the metric names Expr reads (to name a null one when it
	// fails), WhenMetrics those When reads.
	Metrics     []string `yaml:"-" json:"-"`
	WhenMetrics []string `yaml:"-" json:"-"`
	// Gates are the worse() calls of Expr and When.
	Gates []Gate `yaml:"-" json:"-"`
	// Line and Column locate Expr in the plan file.
	Line   int `yaml:"-" json:"-"`
	Column int `yaml:"-" json:"-"`
}
