package result

import "time"

// Slices is a level cut into time windows (a stage's `slices:`, or
// --slices): what each window of the measured window held, and whether the
// level was steady across them. Every figure comes from the level's records
// (requests.jsonl; the level record's inter-token gaps by slice), so `runner
// report` and `runner merge` recompute it (package aggregate, slices.go).
type Slices struct {
	// WidthS is the slices' length in seconds; the last one ends with the
	// window, so it may be shorter.
	WidthS float64 `json:"width_s"`
	// Start is the measured window's opening (warm-ups excluded): slice 0
	// starts here, slice k at Start + k·WidthS.
	Start time.Time `json:"start"`
	// Windows are the slices, in time order.
	Windows []Slice `json:"windows"`
	// Steadiness is the judgement of whether the level was steady across its
	// slices (docs/statistics.md, "Steadiness").
	Steadiness Steadiness `json:"steadiness"`
	// Notes say how a figure was obtained without making it wrong (no ITL
	// per slice in records that did not keep it).
	Notes []string `json:"notes,omitempty"`
}

// Slice is one time window of a level. Requests are placed by their send
// time for their latencies (TTFT and E2E are of the requests sent in the
// slice) and by their end for completions; output tokens are spread over
// each success's decode (its first token at its TTFT, the rest evenly up to
// its end), so the slices' tokens add up to the level's. A percentile from
// too few samples is null and named in TooFew: a p50 needs 5, a p95 20.
type Slice struct {
	// StartS and EndS bound the slice, in seconds from the window's opening.
	StartS float64 `json:"start_s"`
	EndS   float64 `json:"end_s"`
	// Load is what a series level asked for over the slice (its mean rate,
	// requests/s, or its mean concurrency, streams; 4 dp): the load beside
	// the latencies it gave. Absent on a steady level.
	Load *float64 `json:"load,omitempty"`
	// Sent is the measured requests sent in the slice; Completed and Failed
	// those that ended in it.
	Sent      int `json:"sent"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	// Cancelled is the measured requests the client gave up on in the
	// slice (cancel_*): their TTFT counts among the slice's.
	Cancelled int `json:"cancelled,omitempty"`
	// RequestTPS is completions per second of the slice (3 dp); OutputTPS
	// the output tokens of successes in it per second (2 dp).
	RequestTPS float64 `json:"request_tps"`
	OutputTPS  float64 `json:"output_tps"`
	// InFlightMean is the time-weighted mean of measured requests in flight
	// over the slice (2 dp); InFlightMax the most at once.
	InFlightMean float64 `json:"in_flight_mean"`
	InFlightMax  int     `json:"in_flight_max"`
	// Latency percentiles (ms, 2 dp): TTFT and E2E of the successes sent in
	// the slice; ITL of the gaps whose token arrived in it (from the level
	// record's histogram of the slice; null when the records kept none).
	TTFTP50Ms *float64 `json:"ttft_p50_ms"`
	TTFTP95Ms *float64 `json:"ttft_p95_ms"`
	ITLP50Ms  *float64 `json:"itl_p50_ms"`
	ITLP95Ms  *float64 `json:"itl_p95_ms"`
	E2EP50Ms  *float64 `json:"e2e_p50_ms"`
	E2EP95Ms  *float64 `json:"e2e_p95_ms"`
	// TooFew names the percentiles left null because the slice had too few
	// samples for them.
	TooFew []string `json:"too_few,omitempty"`
	// Partial is set on a last slice cut short by the window's end.
	Partial bool `json:"partial,omitempty"`
	// Series are per-slice means of named time series sampled during the
	// level (telemetry: a server gauge, a GPU's power), by series name;
	// absent without samples (aggregate.SliceMeans fills it).
	Series map[string]float64 `json:"series,omitempty"`
}

// Steadiness says whether a level was steady across its slices: its first
// slice not far from the rest, and no trend across them that their
// intervals show to be real. Judged over the slices during which the load
// was offered throughout (full slices up to the last send: not the drain).
type Steadiness struct {
	// Judged is false when the level has too few such slices to judge
	// (Why says why); Steady is then unset.
	Judged bool `json:"judged"`
	// Steady is the verdict when judged.
	Steady *bool `json:"steady,omitempty"`
	// FromS and ToS bound the slices judged, and SteadyFromS the steady
	// window: from the end of a first slice found far from the rest, else
	// FromS, to ToS (seconds from the window's opening).
	FromS       float64 `json:"from_s"`
	ToS         float64 `json:"to_s"`
	SteadyFromS float64 `json:"steady_from_s"`
	// Confidence is the two-sided confidence of each test's interval: 95%
	// shared by the tests of a level (Bonferroni).
	Confidence float64 `json:"confidence"`
	// Tests are the judgements made, flagged or not.
	Tests []SteadyTest `json:"tests,omitempty"`
	// Why says why the level was not judged.
	Why string `json:"why,omitempty"`
}

// SteadyTest is one steadiness test of a level's slices: the first slice
// against the rest ("first"), or a trend across slices ("trend"), of one
// metric.
type SteadyTest struct {
	Test   string `json:"test"`   // first | trend
	Metric string `json:"metric"` // ttft_p50_ms | output_tps
	// First: the first slice's value and the rest's; trend: the fitted
	// value at the judged span's start and at its end.
	From float64 `json:"from"`
	To   float64 `json:"to"`
	// Rel is To/From − 1, and RelLo..RelHi its interval at the steadiness
	// confidence.
	Rel   float64 `json:"rel"`
	RelLo float64 `json:"rel_lo"`
	RelHi float64 `json:"rel_hi"`
	// SlopePerS is a trend's fitted change per second (trend only).
	SlopePerS *float64 `json:"slope_per_s,omitempty"`
	// Flagged is set when the interval excludes no change and the change
	// is larger than the practical threshold (10%).
	Flagged bool `json:"flagged"`
	// Text says it in one line, with the figures.
	Text string `json:"text"`
}
