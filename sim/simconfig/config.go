// Package simconfig is the built-in simulator's configuration: plain data that a
// plan's `simulator:` block and `runner sim --config` decode into. It is a leaf, so the
// plan loader can know the simulator's settings without importing the simulator.
package simconfig

import (
	"errors"
	"fmt"
	"math"
	"reflect"
)

// Config is the simulated engine. It is plain data: the plan's `simulator:`
// block and `runner sim --config` decode into it. Zero values mean the defaults
// documented on each field (applied by Defaults).
//
// The timing model, in one place: the engine runs scheduler steps back to back.
// A step that admits waiting sequences costs TTFTMs + PrefillMsPerToken × (their
// uncached prompt tokens) and gives each of them its first token; a step with
// sequences already decoding also costs ITLMs + ITLMsPerSeq × (decoding − 1) and
// gives each of them one token (1 + accepted draft tokens with speculative
// decoding). A step that does both pays both. So at concurrency 1 the time to
// first token is TTFTMs + PrefillMsPerToken × prompt tokens, and the gap between
// tokens is ITLMs.
type Config struct {
	// Model name served by /v1/models. Default "sim".
	Model string `yaml:"model,omitempty" json:"model,omitempty"`
	// LoRAModules are adapter names served beside Model, as vLLM's --lora-modules: listed by /v1/models with Model as their parent, and taken as a request's model (any other name is a 404). Default none.
	LoRAModules []string `yaml:"lora_modules,omitempty" json:"lora_modules,omitempty"`
	// Seed makes every random choice reproducible. Default 1.
	Seed int64 `yaml:"seed,omitempty" json:"seed,omitempty"`
	// TTFTMs is the fixed prefill cost per scheduling step in ms. Default 20.
	TTFTMs float64 `yaml:"ttft_ms,omitempty" json:"ttft_ms,omitempty"`
	// PrefillMsPerToken is the prefill cost per uncached input token. Default 0.02.
	PrefillMsPerToken float64 `yaml:"prefill_ms_per_token,omitempty" json:"prefill_ms_per_token,omitempty"`
	// ITLMs is the decode step time with one running sequence. Default 10.
	ITLMs float64 `yaml:"itl_ms,omitempty" json:"itl_ms,omitempty"`
	// ITLMsPerSeq is the extra decode step time per additional running sequence. Default 0.
	ITLMsPerSeq float64 `yaml:"itl_ms_per_seq,omitempty" json:"itl_ms_per_seq,omitempty"`
	// MaxNumSeqs is the continuous-batching limit; requests beyond it wait in a FIFO queue. Default 256.
	MaxNumSeqs int `yaml:"max_num_seqs,omitempty" json:"max_num_seqs,omitempty"`

	// ZeroLatency makes every step cost nothing, whatever the millisecond
	// fields say (they cannot express zero, since zero means "default"). The
	// engine then emits tokens as fast as the CPU allows; used by benchmarks.
	ZeroLatency bool `yaml:"zero_latency,omitempty" json:"zero_latency,omitempty"`
	// MaxModelLen is the context length: prompt tokens + max_tokens above it is
	// a 400, as on vLLM. Reported by /tokenize and /v1/models. Default 32768.
	MaxModelLen int `yaml:"max_model_len,omitempty" json:"max_model_len,omitempty"`
	// DefaultMaxTokens is the output limit when a request sets no max_tokens. Default 1024.
	DefaultMaxTokens int `yaml:"default_max_tokens,omitempty" json:"default_max_tokens,omitempty"`
	// BlockSize is the prefix-cache block size in tokens; only whole blocks of
	// the prompt are cached, as in vLLM's paged KV cache. Default 16.
	BlockSize int `yaml:"block_size,omitempty" json:"block_size,omitempty"`
	// PrefixCacheBlocks is the prefix-cache capacity in blocks (random eviction
	// when full). Default 65536.
	PrefixCacheBlocks int `yaml:"prefix_cache_blocks,omitempty" json:"prefix_cache_blocks,omitempty"`
	// NoPrefixCache turns the prefix cache off: every prompt token is prefilled.
	NoPrefixCache bool `yaml:"no_prefix_cache,omitempty" json:"no_prefix_cache,omitempty"`
	// KVCacheBlocks is the KV cache's capacity in blocks of BlockSize tokens
	// (0: unbounded, and no vllm:kv_cache_usage_perc). A running sequence
	// holds the blocks of its prompt and of the tokens generated so far; a
	// waiting one is admitted only when its blocks (and its next token's)
	// fit, first come first served; a decode step that needs a block none is
	// free for preempts the most recently admitted running sequences, as
	// vLLM's recompute mode does: back to the head of the queue, their blocks
	// freed, their prompt and tokens prefilled again when readmitted (counted
	// in vllm:num_preemptions_total). A request whose prompt and max_tokens
	// need more blocks than the cache holds is a 400. The prefix cache is
	// counted apart: its blocks take no room here.
	KVCacheBlocks int `yaml:"kv_cache_blocks,omitempty" json:"kv_cache_blocks,omitempty"`

	// OutputMean is the mean natural output length in tokens for requests
	// without ignore_eos (normal distribution, clamped to [1, max_tokens]). Default 128.
	OutputMean float64 `yaml:"output_mean,omitempty" json:"output_mean,omitempty"`
	// OutputStdev is the standard deviation of the natural output length. Default 32.
	OutputStdev float64 `yaml:"output_stdev,omitempty" json:"output_stdev,omitempty"`
	// ReasoningTokens is how many of each chat response's first output tokens
	// are reasoning (sent in ReasoningField, not content). Default 0.
	ReasoningTokens int `yaml:"reasoning_tokens,omitempty" json:"reasoning_tokens,omitempty"`
	// ReasoningField is the delta field reasoning text goes in:
	// "reasoning_content" (default, DeepSeek/SGLang/older vLLM) or "reasoning" (newer vLLM).
	ReasoningField string `yaml:"reasoning_field,omitempty" json:"reasoning_field,omitempty"`

	// ToolCallRate is the probability that a request with tools and
	// tool_choice auto (or none given) is answered with a tool call
	// (required and named choices always are, none never). A call is of the
	// named function or the first tool; its arguments ({"text": "..."}) are
	// the response's output tokens. Default 0.
	ToolCallRate float64 `yaml:"tool_call_rate,omitempty" json:"tool_call_rate,omitempty"`

	// RoleInEveryChunk repeats "role":"assistant" in every chat delta, as some engines do.
	RoleInEveryChunk bool `yaml:"role_in_every_chunk,omitempty" json:"role_in_every_chunk,omitempty"`
	// UsageInFinishChunk puts usage into the chunk carrying finish_reason
	// instead of a separate choices-less chunk (when include_usage is set).
	UsageInFinishChunk bool `yaml:"usage_in_finish_chunk,omitempty" json:"usage_in_finish_chunk,omitempty"`
	// TokensPerChunk groups at least this many tokens per chunk (fewer chunks
	// than tokens, as engines with stream intervals do). Default 1.
	TokensPerChunk int `yaml:"tokens_per_chunk,omitempty" json:"tokens_per_chunk,omitempty"`
	// CloseAfterStream closes every connection that carried a streamed
	// response, as llama-server does although its headers offer keep-alive.
	// llama-server closes it just after the stream, and a client that writes
	// its next request before the close arrives gets no response at all;
	// here that race is always lost, so it can be tested: the next request
	// on such a connection (of any kind) is read and then dropped with the
	// connection, unanswered and unrecorded. It needs the simulator's own
	// listener (Start, `runner sim`, a plan's simulator block).
	CloseAfterStream bool `yaml:"close_after_stream,omitempty" json:"close_after_stream,omitempty"`
	// MaxConnections is how many client connections the simulator serves at
	// once (0: no limit): a connection beyond them is taken only when one of
	// those closes, its requests waiting unread until then. llama-server with
	// fewer HTTP threads (--threads-http) than connections leaves some of
	// them waiting like this, though not a fixed number of them; this is the
	// plain form. It needs the simulator's own listener, like
	// close_after_stream, which frees a connection after each stream.
	MaxConnections int `yaml:"max_connections,omitempty" json:"max_connections,omitempty"`
	// LlamaTimings adds llama.cpp's per-request `timings` object to the last
	// chunk of each stream (the usage chunk, or the finish chunk when usage
	// is not sent on its own): prompt_n and cache_n (uncached and cached
	// prompt tokens), prompt_ms (from the start of the request's prefill step
	// to its first token), predicted_n, predicted_ms (first token to last),
	// and with speculative decoding draft_n and draft_n_accepted.
	LlamaTimings bool `yaml:"llama_timings,omitempty" json:"llama_timings,omitempty"`
	// MessagesDropIgnoreEOS makes /v1/messages read no ignore_eos, as
	// llama-server does (its conversion of a Messages request to a chat one
	// passes few fields on): a pinned Messages request stops where a natural
	// one would.
	MessagesDropIgnoreEOS bool `yaml:"messages_drop_ignore_eos,omitempty" json:"messages_drop_ignore_eos,omitempty"`

	// SpecK is the speculative-decoding draft length (0 = off). Each decode step
	// drafts SpecK tokens and emits 1 + accepted as one chunk.
	SpecK int `yaml:"spec_k,omitempty" json:"spec_k,omitempty"`
	// SpecAcceptance is the probability each draft token is accepted, tried in
	// order until the first rejection. Default 0.7 when SpecK > 0.
	SpecAcceptance float64 `yaml:"spec_acceptance,omitempty" json:"spec_acceptance,omitempty"`

	// NoMetrics makes /metrics a 404, like engines without Prometheus metrics (Ollama).
	NoMetrics bool `yaml:"no_metrics,omitempty" json:"no_metrics,omitempty"`
	// PromptTokensDetails adds usage.prompt_tokens_details.cached_tokens, as
	// vLLM does with --enable-prompt-tokens-details.
	PromptTokensDetails bool `yaml:"prompt_tokens_details,omitempty" json:"prompt_tokens_details,omitempty"`
	// TruthLimit is how many finished requests' ground truth records are kept
	// (the oldest are dropped beyond it), which bounds a long-running
	// simulator's memory. Default 10000.
	TruthLimit int `yaml:"truth_limit,omitempty" json:"truth_limit,omitempty"`

	// Faults injects failures into a share of requests.
	Faults Faults `yaml:"faults,omitempty" json:"faults,omitempty"`
}

// Faults are probabilities (0..1, summing to at most 1) that a request gets
// each failure. One draw per request (seeded, in arrival order) picks at most
// one fault.
type Faults struct {
	// HTTP429 answers 429 Too Many Requests with an OpenAI error body.
	HTTP429 float64 `yaml:"http_429,omitempty" json:"http_429,omitempty"`
	// HTTP500 answers 500 Internal Server Error with an OpenAI error body.
	HTTP500 float64 `yaml:"http_500,omitempty" json:"http_500,omitempty"`
	// HTTP503 answers 503 Service Unavailable with an OpenAI error body.
	HTTP503 float64 `yaml:"http_503,omitempty" json:"http_503,omitempty"`
	// Disconnect drops the connection mid-stream (hijack and close).
	Disconnect float64 `yaml:"disconnect,omitempty" json:"disconnect,omitempty"`
	// Malformed sends one data line of invalid JSON mid-stream, then carries on.
	Malformed float64 `yaml:"malformed,omitempty" json:"malformed,omitempty"`
	// Stall stops sending mid-stream for StallMs (forever, until the client
	// gives up, when StallMs is 0), then carries on.
	Stall float64 `yaml:"stall,omitempty" json:"stall,omitempty"`
	// Truncate ends the body cleanly mid-stream: no finish_reason, no [DONE].
	Truncate float64 `yaml:"truncate,omitempty" json:"truncate,omitempty"`
	// ErrorInStream sends an error object inside the 200 stream mid-way, then [DONE].
	ErrorInStream float64 `yaml:"error_in_stream,omitempty" json:"error_in_stream,omitempty"`
	// HTML answers 200 with an HTML page instead of SSE or JSON (a proxy's error page).
	HTML float64 `yaml:"html,omitempty" json:"html,omitempty"`
	// BadUsage streams the reply as usual but reports usage that cannot be
	// true: prompt_tokens -5, completion_tokens 2^62 (a server that lies).
	BadUsage float64 `yaml:"bad_usage,omitempty" json:"bad_usage,omitempty"`
	// StallMs is how long a stall lasts; 0 means until the client disconnects.
	StallMs float64 `yaml:"stall_ms,omitempty" json:"stall_ms,omitempty"`
	// AfterTokens is how many tokens are sent before a mid-stream fault strikes.
	// 0 means half of the request's output tokens (at least 1).
	AfterTokens int `yaml:"after_tokens,omitempty" json:"after_tokens,omitempty"`
}

// FastConfig is the configuration for tests: 5 ms prefill, 1 ms per decode
// step, no per-token prefill cost that matters, short natural outputs.
func FastConfig() Config {
	return Config{
		TTFTMs:            5,
		PrefillMsPerToken: 0.001,
		ITLMs:             1,
		OutputMean:        16,
		OutputStdev:       4,
	}.Defaults()
}

// Defaults returns c with every zero field set to its documented default.
func (c Config) Defaults() Config {
	if c.Model == "" {
		c.Model = "sim"
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.TTFTMs == 0 {
		c.TTFTMs = 20
	}
	if c.PrefillMsPerToken == 0 {
		c.PrefillMsPerToken = 0.02
	}
	if c.ITLMs == 0 {
		c.ITLMs = 10
	}
	if c.MaxNumSeqs == 0 {
		c.MaxNumSeqs = 256
	}
	if c.MaxModelLen == 0 {
		c.MaxModelLen = 32768
	}
	if c.DefaultMaxTokens == 0 {
		c.DefaultMaxTokens = 1024
	}
	if c.BlockSize == 0 {
		c.BlockSize = 16
	}
	if c.PrefixCacheBlocks == 0 {
		c.PrefixCacheBlocks = 65536
	}
	if c.OutputMean == 0 {
		c.OutputMean = 128
	}
	if c.OutputStdev == 0 {
		c.OutputStdev = 32
	}
	if c.ReasoningField == "" {
		c.ReasoningField = "reasoning_content"
	}
	if c.TokensPerChunk == 0 {
		c.TokensPerChunk = 1
	}
	if c.TruthLimit == 0 {
		c.TruthLimit = 10000
	}
	if c.SpecK > 0 && c.SpecAcceptance == 0 {
		c.SpecAcceptance = 0.7
	}
	return c
}

// Problem is one invalid field of a Config: Field is its YAML path inside the
// simulator block ("faults.stall_ms"), so a plan loader can put the message at
// the field's own line and column.
type Problem struct {
	Field string
	Msg   string
}

// Error formats the problem as "field: message".
func (p Problem) Error() string { return p.Field + ": " + p.Msg }

// Validate reports every invalid field of c (after Defaults), joined.
func (c Config) Validate() error {
	var errs []error
	for _, p := range c.Problems() {
		errs = append(errs, p)
	}
	return errors.Join(errs...)
}

// Problems lists every invalid field of c (after Defaults).
func (c Config) Problems() []Problem {
	var out []Problem
	bad := func(field, format string, args ...any) {
		out = append(out, Problem{Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	nonNeg := func(name string, v float64) {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			bad(name, "must be a finite number >= 0, got %v", v)
		}
	}
	nonNeg("ttft_ms", c.TTFTMs)
	nonNeg("prefill_ms_per_token", c.PrefillMsPerToken)
	nonNeg("itl_ms", c.ITLMs)
	nonNeg("itl_ms_per_seq", c.ITLMsPerSeq)
	nonNeg("output_mean", c.OutputMean)
	nonNeg("output_stdev", c.OutputStdev)
	nonNeg("faults.stall_ms", c.Faults.StallMs)
	atLeast1 := func(name string, v int) {
		if v < 1 {
			bad(name, "must be >= 1, got %d", v)
		}
	}
	atLeast1("max_num_seqs", c.MaxNumSeqs)
	atLeast1("max_model_len", c.MaxModelLen)
	atLeast1("default_max_tokens", c.DefaultMaxTokens)
	atLeast1("block_size", c.BlockSize)
	atLeast1("prefix_cache_blocks", c.PrefixCacheBlocks)
	atLeast1("truth_limit", c.TruthLimit)
	atLeast1("tokens_per_chunk", c.TokensPerChunk)
	for i, m := range c.LoRAModules {
		if m == "" || m == c.Model || len(m) > 256 {
			bad(fmt.Sprintf("lora_modules[%d]", i), "must be a name other than the model's, at most 256 bytes, got %q", m)
		}
	}
	if c.KVCacheBlocks < 0 {
		bad("kv_cache_blocks", "must be >= 0, got %d", c.KVCacheBlocks)
	}
	if c.MaxConnections < 0 {
		bad("max_connections", "must be >= 0, got %d", c.MaxConnections)
	}
	if c.ReasoningTokens < 0 {
		bad("reasoning_tokens", "must be >= 0, got %d", c.ReasoningTokens)
	}
	if c.ReasoningField != "reasoning_content" && c.ReasoningField != "reasoning" {
		bad("reasoning_field", "must be \"reasoning_content\" or \"reasoning\", got %q", c.ReasoningField)
	}
	if c.SpecK < 0 || c.SpecK > 64 {
		bad("spec_k", "must be in [0, 64], got %d", c.SpecK)
	}
	if c.SpecAcceptance < 0 || c.SpecAcceptance > 1 || math.IsNaN(c.SpecAcceptance) {
		bad("spec_acceptance", "must be in [0, 1], got %v", c.SpecAcceptance)
	}
	if c.ToolCallRate < 0 || c.ToolCallRate > 1 || math.IsNaN(c.ToolCallRate) {
		bad("tool_call_rate", "must be a probability in [0, 1], got %v", c.ToolCallRate)
	}
	if c.Faults.AfterTokens < 0 {
		bad("faults.after_tokens", "must be >= 0, got %d", c.Faults.AfterTokens)
	}
	f := c.Faults
	sum := 0.0
	for _, p := range []struct {
		name string
		v    float64
	}{
		{"http_429", f.HTTP429}, {"http_500", f.HTTP500}, {"http_503", f.HTTP503},
		{"disconnect", f.Disconnect}, {"malformed", f.Malformed}, {"stall", f.Stall},
		{"truncate", f.Truncate}, {"error_in_stream", f.ErrorInStream}, {"html", f.HTML},
		{"bad_usage", f.BadUsage},
	} {
		if p.v < 0 || p.v > 1 || math.IsNaN(p.v) {
			bad("faults."+p.name, "must be a probability in [0, 1], got %v", p.v)
		}
		sum += p.v
	}
	if sum > 1+1e-9 {
		bad("faults", "fault probabilities sum to %v, more than 1", sum)
	}
	return out
}

// Overlay returns base with every field that top sets (non-zero) copied over
// it, at any depth: a config file's settings on top of --fast's.
func Overlay(base, top Config) Config {
	overlayValue(reflect.ValueOf(&base).Elem(), reflect.ValueOf(top))
	return base
}

func overlayValue(dst, src reflect.Value) {
	for i := range src.NumField() {
		f := src.Field(i)
		if f.Kind() == reflect.Struct {
			overlayValue(dst.Field(i), f)
			continue
		}
		if !f.IsZero() {
			dst.Field(i).Set(f)
		}
	}
}
