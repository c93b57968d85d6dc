package result

import (
	"math"
	"time"

	"github.com/runnerbench/runner/internal/hist"
)

// The records of a run: besides one Request per request, the load stage
// writes one LevelRecord per measured level, which holds what the requests
// alone cannot say (the measured window, the inter-token gaps, the server's
// counters, the client's own load). A level's Point is a pure function of its
// LevelRecord and its Requests (package aggregate), so a report can be
// recomputed from a result directory, and shards run on several machines can
// be merged into the numbers one machine would have computed.

// LevelSpec is what a level was asked to be: the values that name it and the
// plan's settings its metrics are judged against.
type LevelSpec struct {
	// Label names the level ("c=32", "rate=4"); it matches levels across
	// shards and against a baseline.
	Label string `json:"label"`
	// Concurrency is the closed-loop streams (the whole level's, not a
	// shard's), or an open-loop level's in-flight cap (0: none).
	Concurrency int `json:"concurrency"`
	// Rate is an open-loop level's target arrival rate (the whole level's).
	Rate *float64 `json:"rate,omitempty"`
	// Series is the rate or concurrency a series level follows over its
	// window (nil: a steady load); Rate is then its mean rate, Concurrency
	// its most streams.
	Series *Series `json:"series,omitempty"`
	// Users is a users level's people, each holding one conversation at a
	// time and thinking between requests (0: not a users level); ThinkMs
	// their nominal think time (the plan's fixed value or mean).
	Users   int     `json:"users,omitempty"`
	ThinkMs float64 `json:"think_ms,omitempty"`
	// InputTokens and OutputTokens are the nominal requested lengths.
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	// Pinned is ignore_eos mode: each success should emit its max_tokens.
	Pinned bool `json:"pinned"`
	// SLO is the stage's per-request objective (nil: no goodput).
	SLO *SLO `json:"slo,omitempty"`
	// Turns is the conversation length of a multi-turn stage (0 or 1: single requests).
	Turns int `json:"turns,omitempty"`
	// Probe numbers a capacity search's probes in the order they ran, from 1
	// (0: a listed level).
	Probe int `json:"probe,omitempty"`
	// Replicates is how many independent replicates the level ran as, back
	// to back (0 or 1: one), each its own start of the load.
	Replicates int `json:"replicates,omitempty"`
	// ExpectPrefixHits is set when the stage caches on purpose (shared
	// prefixes, conversations), which silences the cache-hit warning.
	ExpectPrefixHits bool `json:"expect_prefix_hits,omitempty"`
	// SliceNs is the width of the time slices the level is cut into (the
	// stage's slices:, or --slices); 0: none.
	SliceNs int64 `json:"slice_ns,omitempty"`
	// Tools is set when the stage's requests carry tools, so the level
	// reports the share of responses that called one.
	Tools bool `json:"tools,omitempty"`
	// Until is the level's until: rule as the plan gave it ("decided",
	// "ttft_p95_ms within 5%", "fixed"); empty on a stage without until:.
	// The level's requests then go out until the rule is met or a cap is
	// reached, and the engine asks the sink after each batch.
	Until string `json:"until,omitempty"`
	// Cancel is when the stage's users give up on requests (nil: never),
	// so the level reports the share that did.
	Cancel *CancelSpec `json:"cancel,omitempty"`
	// Models are the models the stage's requests spread over (models:),
	// in the plan's order: one point per model follows the level's.
	Models []string `json:"models,omitempty"`
	// Probes are the probe requests sent beside the level's load (nil:
	// none): their point follows the level's.
	Probes *ProbeSpec `json:"probes,omitempty"`
}

// ProbeSpec is a stage's probe requests: RatePerS of them a second, each
// of InputTokens and OutputTokens (pinned).
type ProbeSpec struct {
	RatePerS     float64 `json:"rate"`
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
}

// Spec is the spec the probe requests' point is judged against: level's,
// with the probes' own lengths (pinned), and no cancellation, models or
// parts of its own.
func (ps *ProbeSpec) Spec(level LevelSpec) LevelSpec {
	s := level
	s.InputTokens, s.OutputTokens, s.Pinned = ps.InputTokens, ps.OutputTokens, true
	s.Cancel, s.Models, s.Probes, s.Turns, s.SliceNs = nil, nil, nil, 0, 0
	return s
}

// CancelSpec is when a stage's requests are given up on: AfterMs from
// their send (0: not by time), after Tokens token chunks (0: not by
// tokens), for a Share of them; with neither, each of the Share after a
// count of chunks drawn below its max_tokens.
type CancelSpec struct {
	AfterMs float64 `json:"after_ms,omitempty"`
	Tokens  int     `json:"tokens,omitempty"`
	Share   float64 `json:"share"`
}

// SLO is a per-request service-level objective in ms; a zero bound is unset.
type SLO struct {
	TTFTMs float64 `json:"ttft_ms,omitempty"`
	TPOTMs float64 `json:"tpot_ms,omitempty"`
	E2EMs  float64 `json:"e2e_ms,omitempty"`
}

// Set reports whether any bound is set.
func (s *SLO) Set() bool { return s != nil && (s.TTFTMs > 0 || s.TPOTMs > 0 || s.E2EMs > 0) }

// Met reports whether a successful request meets every set bound. A request
// without a TTFT fails a TTFT bound; one without a TPOT (a single output
// token, so no decode phase) is not judged on TPOT. Bounds are inclusive.
func (s *SLO) Met(r *Request) bool {
	if s.TTFTMs > 0 && (r.TTFTMs == nil || *r.TTFTMs > s.TTFTMs) {
		return false
	}
	if s.TPOTMs > 0 && r.TPOTMs != nil && *r.TPOTMs > s.TPOTMs {
		return false
	}
	if s.E2EMs > 0 && r.E2EMs > s.E2EMs {
		return false
	}
	return true
}

// Shard says which part of a sharded run a record belongs to.
type Shard struct {
	// Index is this shard's number, 0-based.
	Index int `json:"index"`
	// Count is how many shards the run has.
	Count int `json:"count"`
}

// LevelRecord is what the load stage knows of one level beyond its requests.
type LevelRecord struct {
	Stage string `json:"stage"`
	// Level is the level's index within the stage, in the order it ran.
	Level int       `json:"level"`
	Spec  LevelSpec `json:"spec"`
	// Shard is set in a sharded run; ShardConcurrency and ShardRate are this
	// shard's part of the level (its streams or arrival rate).
	Shard            *Shard   `json:"shard,omitempty"`
	ShardConcurrency int      `json:"shard_concurrency,omitempty"`
	ShardRate        *float64 `json:"shard_rate,omitempty"`
	// Skipped is set when this shard's part of the level was empty.
	Skipped bool `json:"skipped,omitempty"`
	// Start and End bracket the measured window, from its opening (just
	// before the first measured send) to the last completion, on the wall
	// clock (to line up shards' windows); WallNs is its length on the
	// monotonic clock, which no clock adjustment moves.
	Start  time.Time `json:"start"`
	End    time.Time `json:"end"`
	WallNs int64     `json:"wall_ns"`
	// LateStartMs is how late the window opened against a scheduled start
	// (a sharded run's --start-at); 0 when unscheduled.
	LateStartMs float64 `json:"late_start_ms,omitempty"`
	// ITL holds every inter-token gap of the level's measured requests.
	ITL ITL `json:"itl"`
	// ITLSlices holds the same gaps by time slice of Spec.SliceNs (by when
	// the gap's token arrived, from Start), when the level was sliced; a
	// gap past MaxITLSlices slices is in ITL only.
	ITLSlices []ITL `json:"itl_slices,omitempty"`
	// Server is the change of the server's counters over the window (nil:
	// the server exposes none).
	Server *ServerDelta `json:"server,omitempty"`
	// Client is the runner's own load over the window.
	Client ClientLoad `json:"client"`
	// CapWaits counts open-loop arrivals that waited for a max_concurrency slot.
	CapWaits int64 `json:"cap_waits,omitempty"`
	// Unsent counts open-loop arrivals the schedule held before the level's
	// duration ended that were never sent: the duration ran out while the
	// dispatcher was behind its schedule.
	Unsent int64 `json:"unsent,omitempty"`
	// MaxInFlight is the most measured requests this process had in flight
	// at once, counted live. The point takes its max_in_flight from the
	// requests' own start and end times while the level keeps them exactly
	// (aggregate.DefaultExactLimit), and from this past that; 0 when not
	// counted.
	MaxInFlight int `json:"max_in_flight,omitempty"`
	// Interrupted is set when the run was stopped inside the level.
	Interrupted bool `json:"interrupted,omitempty"`
	// Stop is what the until: rule decided, when a look stopped the level
	// before its cap (nil: it ran to its cap or, without until:, its
	// count); the report says the rest (capped, undecided).
	Stop *LevelStop `json:"stop,omitempty"`
	// Windows are the measured windows of the level's replicates, in order,
	// when it ran as several (nil for one); Start, End and WallNs then span
	// them, WallNs being the sum of their lengths: the time under load.
	Windows []Window `json:"windows,omitempty"`
	// Parts are the shards' own accounts of a level merged from several
	// (runner merge), by shard index: each one's window, lateness and client
	// load, which the merged window and client diagnostics are judged by.
	Parts []LevelPart `json:"parts,omitempty"`
}

// LevelPart is one shard's part of a merged level: what its own level record
// said of its window and of the client that ran it.
type LevelPart struct {
	Shard       int        `json:"shard"`
	Skipped     bool       `json:"skipped,omitempty"`
	Start       time.Time  `json:"start"`
	End         time.Time  `json:"end"`
	WallNs      int64      `json:"wall_ns"`
	LateStartMs float64    `json:"late_start_ms,omitempty"`
	Client      ClientLoad `json:"client"`
	CapWaits    int64      `json:"cap_waits,omitempty"`
}

// Window is one replicate's measured window: from just before its first
// measured send to its last completion.
type Window struct {
	Start  time.Time `json:"start"`
	End    time.Time `json:"end"`
	WallNs int64     `json:"wall_ns"`
}

// MaxITLSlices bounds the slices a level record keeps inter-token gaps for
// (a slice's histogram is up to about 190 KB): two hours of 10 s slices.
const MaxITLSlices = 720

// Wall is the measured window's length.
func (r *LevelRecord) Wall() time.Duration { return time.Duration(r.WallNs) }

// ITL summarises inter-token gaps exactly enough to merge: the count, the sum
// and the largest gap in whole nanoseconds (integer sums are exact in any
// order), and a histogram of µs for percentiles (±0.05%).
type ITL struct {
	Count int64           `json:"count"`
	SumNs int64           `json:"sum_ns"`
	MaxNs int64           `json:"max_ns"`
	Hist  *hist.Histogram `json:"hist,omitempty"`
}

// Add records one gap.
func (t *ITL) Add(gap time.Duration) {
	if gap < 0 {
		gap = 0
	}
	if t.Hist == nil {
		t.Hist = hist.New()
	}
	t.Count++
	t.SumNs += int64(gap)
	t.MaxNs = max(t.MaxNs, int64(gap))
	t.Hist.RecordNs(int64(gap))
}

// Merge adds o's gaps into t.
func (t *ITL) Merge(o *ITL) {
	if o.Count == 0 {
		return
	}
	if t.Hist == nil {
		t.Hist = hist.New()
	}
	t.Count += o.Count
	t.SumNs += o.SumNs
	t.MaxNs = max(t.MaxNs, o.MaxNs)
	t.Hist.Merge(o.Hist)
}

// ClientLoad is the runner's own load over a level: what tells whether the
// client, not the server, set the pace.
type ClientLoad struct {
	// CPUNs is the process's CPU time (user + system) over the window.
	CPUNs int64 `json:"cpu_ns"`
	// Procs is GOMAXPROCS: the cores the process could use.
	Procs int `json:"procs"`
	// SchedP90Ms is the Go runtime's scheduling-latency p90 over the window
	// (nil when the runtime did not report it).
	SchedP90Ms *float64 `json:"sched_p90_ms,omitempty"`
	// Stamps says how the window's token chunks were timed (nil in a record
	// from before Runner read the kernel's receive times).
	Stamps *Stamps `json:"stamps,omitempty"`
}

// Stamps is how a level's measured token chunks were timed: by the kernel's
// receive time of the read that brought them (on Linux, through
// internal/rxtime), or by the runner's clock after the read where the kernel
// gave none (another OS, HTTP/2, an option refused).
type Stamps struct {
	// Kernel and User count the token chunks stamped each way.
	Kernel int64 `json:"kernel"`
	User   int64 `json:"user"`
	// Shared counts the kernel-stamped token chunks that came in one read
	// with a later token chunk. The kernel keeps one time per read, the
	// arrival of its last byte, so these carry the later chunk's time: late
	// by at most their read lag.
	Shared int64 `json:"shared,omitempty"`
	// Lag holds the client's read lag of every kernel-stamped token chunk:
	// the runner's clock once the chunk was decoded minus the kernel's
	// receive time.
	Lag ITL `json:"lag"`
	// ClockStepMs is how far the wall clock moved against the monotonic
	// clock over the window, beyond what slewing explains (0: not at all).
	// Kernel times are on the wall clock; each is mapped to the monotonic
	// clock at the moment it is read, so a step matters only to the chunks
	// in flight across it, which the runner stamps with its own clock.
	ClockStepMs float64 `json:"clock_step_ms,omitempty"`
}

// Merge adds o's chunks into s.
func (s *Stamps) Merge(o *Stamps) {
	s.Kernel += o.Kernel
	s.User += o.User
	s.Shared += o.Shared
	s.Lag.Merge(&o.Lag)
}

// ServerDelta is the change of the server's counters over a measured window.
// A nil field means the server does not expose that counter (or it went
// backwards, as after a restart, which makes the window's number unknowable).
type ServerDelta struct {
	SpecDrafts         *float64 `json:"spec_drafts,omitempty"`
	SpecDraftTokens    *float64 `json:"spec_draft_tokens,omitempty"`
	SpecAcceptedTokens *float64 `json:"spec_accepted_tokens,omitempty"`
	PrefixCacheQueries *float64 `json:"prefix_cache_queries,omitempty"`
	PrefixCacheHits    *float64 `json:"prefix_cache_hits,omitempty"`
	// Counters are the generic totals' deltas (prompt and generation tokens,
	// requests, ...), by name without `_total`.
	Counters map[string]float64 `json:"counters,omitempty"`
	// Histograms are the deltas of the few histograms Runner reads (the
	// built-in simulator's lag ratio), by name.
	Histograms map[string]HistogramDelta `json:"histograms,omitempty"`
	// SpecAcceptLengthGauge, SpecAcceptRateGauge and PrefixCacheHitRateGauge
	// are the engine's own gauges read after the window, for engines that
	// export no counters (SGLang); nil when absent.
	SpecAcceptLengthGauge   *float64 `json:"spec_accept_length_gauge,omitempty"`
	SpecAcceptRateGauge     *float64 `json:"spec_accept_rate_gauge,omitempty"`
	PrefixCacheHitRateGauge *float64 `json:"prefix_cache_hit_rate_gauge,omitempty"`
}

// HistogramDelta is a Prometheus histogram's change over a window: how many
// observations there were, and how many were at most each finite bound
// (cumulative, in bound order); the rest were above the last.
type HistogramDelta struct {
	Count float64 `json:"count"`
	// Sum is the change of the observations' sum (0, omitted, when the
	// record predates it).
	Sum     float64           `json:"sum,omitempty"`
	Buckets []HistogramBucket `json:"buckets"`
}

// HistogramBucket is the observations at most LE.
type HistogramBucket struct {
	LE    float64 `json:"le"`
	Count float64 `json:"count"`
}

// Above is how many observations were above bound (which should be one of
// the bucket bounds; otherwise the next bound above it is used).
func (h *HistogramDelta) Above(bound float64) float64 {
	for _, b := range h.Buckets {
		if b.LE >= bound {
			return h.Count - b.Count
		}
	}
	return h.Count
}

// Max is the smallest bucket bound no observation was above (+Inf when
// some were above the last one; 0 without observations).
func (h *HistogramDelta) Max() float64 {
	if h.Count == 0 {
		return 0
	}
	for _, b := range h.Buckets {
		if b.Count >= h.Count {
			return b.LE
		}
	}
	return math.Inf(1)
}

// AcceptanceRate is accepted / proposed draft tokens over the window.
// Without those counters it is the engine's own gauge of the same ratio
// (SGLang's spec_accept_rate, over its latest batches), when it has one; nil
// otherwise, and when nothing was drafted.
func (d *ServerDelta) AcceptanceRate() *float64 {
	if d == nil {
		return nil
	}
	if d.SpecDraftTokens != nil && d.SpecAcceptedTokens != nil {
		if *d.SpecDraftTokens <= 0 {
			return nil
		}
		v := *d.SpecAcceptedTokens / *d.SpecDraftTokens
		return &v
	}
	if g := d.SpecAcceptRateGauge; g != nil && *g > 0 {
		v := *g
		return &v
	}
	return nil
}

// AcceptanceLength is vLLM's mean acceptance length: 1 + accepted tokens per
// draft (each verification step also emits one token of its own). Without
// those counters it is the engine's own gauge (SGLang's spec_accept_length),
// when it has one; nil otherwise.
func (d *ServerDelta) AcceptanceLength() *float64 {
	if d == nil {
		return nil
	}
	if d.SpecDrafts != nil && d.SpecAcceptedTokens != nil && *d.SpecDrafts > 0 {
		v := 1 + *d.SpecAcceptedTokens / *d.SpecDrafts
		return &v
	}
	if d.SpecAcceptLengthGauge != nil && *d.SpecAcceptLengthGauge > 0 {
		v := *d.SpecAcceptLengthGauge
		return &v
	}
	return nil
}

// PrefixCacheHitRate is hits / queries (tokens) over the window; without the
// counters it is the engine's own hit-rate gauge, when it has one; nil when
// neither exists or nothing was queried.
func (d *ServerDelta) PrefixCacheHitRate() *float64 {
	if d == nil {
		return nil
	}
	if d.PrefixCacheQueries != nil && d.PrefixCacheHits != nil {
		if *d.PrefixCacheQueries <= 0 {
			return nil
		}
		v := *d.PrefixCacheHits / *d.PrefixCacheQueries
		return &v
	}
	if d.PrefixCacheHitRateGauge != nil {
		v := *d.PrefixCacheHitRateGauge
		return &v
	}
	return nil
}

// StageRecord is what the load stage knows of a stage beyond its levels:
// what it measured and how, and what went wrong with it as a whole.
type StageRecord struct {
	Name     string   `json:"name"`
	Endpoint Endpoint `json:"endpoint"`
	API      string   `json:"api"`
	Mode     string   `json:"mode"`
	Load     LoadKind `json:"load"`
	Warnings []string `json:"warnings,omitempty"`
	// Trace summarises the trace a replay stage sent (nil for other stages).
	Trace *TraceSummary `json:"trace,omitempty"`
	// Error is set when the stage could not run at all (or stopped early).
	Error string `json:"error,omitempty"`
}
