package result

// A sweep's diagnosis: where its knee and saturation are, and what limits
// the server at the knee and above it. It is computed from the stage's
// points (package diagnosis), so a recomputed report has the same one.

// The causes a diagnosis names (Diagnosis.Cause, Finding.Cause). Each is
// named only when its evidence clears the rule docs/diagnosis.md states.
const (
	// CauseNone: no level of the sweep left the knee's factor.
	CauseNone = "none"
	// CauseBatchFull: requests wait while the running count sits flat at
	// its ceiling (max_num_seqs or the engine's like).
	CauseBatchFull = "batch_full"
	// CauseKVCacheFull: the KV cache has less than one request's room left
	// and requests are preempted, wait or fail.
	CauseKVCacheFull = "kv_cache_full"
	// CausePrefillBound: TTFT grows with the load while ITL holds and the
	// batch is not at a ceiling.
	CausePrefillBound = "prefill_bound"
	// CauseDecodeBound: ITL grows as the batch grows.
	CauseDecodeBound = "decode_bound"
	// CauseClientBound: Runner's own validity signals say the client set
	// the pace (client_bottleneck).
	CauseClientBound = "client_bound"
	// CauseRateLimited: requests are turned away with HTTP 429.
	CauseRateLimited = "rate_limited"
	// CauseFailing: requests fail otherwise (503, other statuses, streams
	// cut short, errors inside the stream).
	CauseFailing = "failing"
	// CausePrefixCache: the server's prefix cache served prompts the nonce
	// should have made new: a finding about the measurement, never the
	// limit itself.
	CausePrefixCache = "prefix_cache"
	// CauseNoTelemetry: the rules that could tell need the engine's
	// running and waiting gauges, which no read gave.
	CauseNoTelemetry = "no_telemetry"
	// CauseNotDetermined: the evidence there cleared no rule.
	CauseNotDetermined = "not_determined"
)

// Diagnosis is a sweep's knee, its saturation level and what limits the
// server there, with the evidence for each, in report.json's stage as
// `diagnosis` (a stage of fewer than two loads has none).
type Diagnosis struct {
	// Factor is the knee's rule: a level is inside the knee while its
	// latencies are at most Factor times the lightest load's and its
	// per-user speed at least the lightest's over Factor.
	Factor float64 `json:"factor"`
	// Lightest is the lightest load's label, the reference of the factor.
	Lightest string `json:"lightest"`
	// Knee is the level before the first that leaves the factor and stays
	// out (the level above leaves it too, or there is none); null when the
	// lightest load had no successes to compare with.
	Knee *LevelMark `json:"knee"`
	// Saturation is the lowest level whose output throughput reached 90%
	// of the sweep's peak, when the sweep went on to 1.5 times its load;
	// null otherwise (throughput still growing, or not shown to stop).
	Saturation *LevelMark `json:"saturation"`
	// Cause is what limits the server: the first finding's cause, or none
	// when no level left the knee's factor and nothing failed throughout.
	Cause string `json:"cause"`
	// Findings are the causes the rules found, the limit first: at the
	// first level past the knee, then at the highest level when another
	// cause holds there, then what qualifies the measurement (a client
	// that set the pace at or below the knee, an undefeated prefix cache).
	Findings []Finding `json:"findings,omitempty"`
	// Text is the diagnosis in plain sentences, each with its numbers, as
	// every reporter prints it.
	Text []string `json:"text"`
}

// LevelMark is a level the diagnosis places: the knee or saturation.
type LevelMark struct {
	// Level is the level's label ("c=16", "rate=4").
	Level string `json:"level"`
	// Load is its concurrency or rate.
	Load float64 `json:"load"`
	// Beyond is set on a knee the sweep never left: Level is its highest
	// level, a lower bound.
	Beyond bool `json:"beyond,omitempty"`
	// Next is the first level past the knee, and By the metrics that broke
	// the factor there.
	Next string   `json:"next,omitempty"`
	By   []string `json:"by,omitempty"`
	// Once are the levels below a knee that left the factor alone, the
	// level above each back within it: one level's excursion (a busy
	// machine's hiccup), which does not place the knee.
	Once []string `json:"once,omitempty"`
	// Evidence are the figures that placed it.
	Evidence []Evidence `json:"evidence"`
}

// Finding is one cause the rules found, from the level it first holds at.
type Finding struct {
	Cause string `json:"cause"`
	// From is the first level the cause holds at.
	From string `json:"from"`
	// Evidence are the figures its rule read.
	Evidence []Evidence `json:"evidence"`
}

// Evidence is one figure a diagnosis read: a metric of the catalogue at a
// level (Key names the entry of a map metric, such as errors_by_kind's
// http_429).
type Evidence struct {
	Metric string  `json:"metric"`
	Key    string  `json:"key,omitempty"`
	Level  string  `json:"level"`
	Value  float64 `json:"value"`
}
