package result

// TraceSummary is what a replayed trace asked of the server, from the trace
// alone (the part of it the stage replayed, on the replay's clock): how many
// requests, over how long, their lengths, and how much of their prompts a
// prefix cache could serve. It is written with the stage's record, so a report
// recomputed from the records shows it too.
type TraceSummary struct {
	// File is the trace file as the plan names it; Format its format
	// (mooncake, azure or runner).
	File   string `json:"file"`
	Format string `json:"format"`
	// BlockTokens is the tokens each hash id stands for (Mooncake traces).
	BlockTokens int `json:"block_tokens,omitempty"`
	// Speedup divides the trace's arrival times (2: twice as fast).
	Speedup float64 `json:"speedup"`
	// StartS and EndS are the window of the trace replayed, in seconds of the
	// trace's own clock (EndS 0: to its end).
	StartS float64 `json:"start_s,omitempty"`
	EndS   float64 `json:"end_s,omitempty"`
	// TraceRequests is how many requests the whole trace holds.
	TraceRequests int `json:"trace_requests"`
	// Requests is how many of them the stage replayed.
	Requests int `json:"requests"`
	// SpanS is the time from the first replayed arrival to the last, on the
	// replay's clock (3 dp).
	SpanS float64 `json:"span_s"`
	// MeanRate is (requests − 1) / span: the level's target rate (4
	// significant digits).
	MeanRate float64 `json:"mean_rate"`
	// PeakRate1s is the most requests arriving within any one second of the
	// replay: how bursty the trace is beside its mean rate.
	PeakRate1s int `json:"peak_rate_1s"`
	// InputTokens and OutputTokens are the distributions of the requests'
	// prompt and output lengths as the trace gives them.
	InputTokens  LengthStats `json:"input_tokens"`
	OutputTokens LengthStats `json:"output_tokens"`
	// ImpliedPrefixHitRate is the share of the replayed prompt tokens an
	// unbounded prefix cache would serve, going by the trace's hash ids in
	// arrival order (4 dp); null when the trace has no hash ids, and every
	// prompt is then unique. Compare the level's prefix_cache_hit_rate.
	ImpliedPrefixHitRate *float64 `json:"implied_prefix_hit_rate"`
}

// LengthStats is a distribution of token counts: percentiles by the
// reference's rule, the mean to 2 dp.
type LengthStats struct {
	Min  int     `json:"min"`
	P50  int     `json:"p50"`
	P90  int     `json:"p90"`
	P99  int     `json:"p99"`
	Max  int     `json:"max"`
	Mean float64 `json:"mean"`
}

// Facts is the summary as the reports show it, in reading order: a label
// and its value for each line (the terminal, Markdown and HTML reports
// print the same facts).
func (t *TraceSummary) Facts() [][2]string {
	blocks := ""
	if t.BlockTokens > 0 {
		blocks = ", " + itoa(t.BlockTokens) + "-token blocks"
	}
	window := ""
	if t.StartS > 0 || t.EndS > 0 {
		window = " (the trace from " + trimFloat(t.StartS) + " s"
		if t.EndS > 0 {
			window += " to " + trimFloat(t.EndS) + " s"
		}
		window += ")"
	}
	implied := "none: the trace has no hash ids, so every prompt is unique"
	if t.ImpliedPrefixHitRate != nil {
		implied = trimFloat(Round(*t.ImpliedPrefixHitRate*100, 1)) + "% of prompt tokens, by its hash ids (the level's prefix_cache_hit_rate is the server's)"
	}
	return [][2]string{
		{"trace", t.File + " (" + t.Format + blocks + ")"},
		{"replayed", itoa(t.Requests) + " of its " + itoa(t.TraceRequests) + " requests" + window + " at " + trimFloat(t.Speedup) + "× speed"},
		{"arrivals", "over " + trimFloat(t.SpanS) + " s: " + trimFloat(t.MeanRate) + " requests/s on average, " + itoa(t.PeakRate1s) + " in the busiest second"},
		{"input tokens", t.InputTokens.text()},
		{"output tokens", t.OutputTokens.text()},
		{"implied prefix-cache hits", implied},
	}
}

// text is the distribution in one line.
func (l LengthStats) text() string {
	return "p50 " + itoa(l.P50) + ", p90 " + itoa(l.P90) + ", p99 " + itoa(l.P99) + ", max " + itoa(l.Max) +
		" (min " + itoa(l.Min) + ", mean " + trimFloat(l.Mean) + ")"
}
