package result

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"

	"github.com/runnerbench/runner/internal/stats"
)

// The metric catalogue: every metric of a level (a Point field with an expr
// tag) is described here once, with its unit, rounding, which way is better
// and what kind of thing it measures. Checks, compare, the statistical gate
// and every reporter read it instead of knowing metric names themselves; a
// test holds the catalogue and the Point struct to each other.

// Better says which way a metric improves.
type Better int

// Directions of improvement.
const (
	Neutral        Better = iota // informational: a change is neither better nor worse
	LowerIsBetter                // latencies, failures
	HigherIsBetter               // throughput, goodput, acceptance
)

// String names the direction as reports print it.
func (b Better) String() string {
	switch b {
	case LowerIsBetter:
		return "lower"
	case HigherIsBetter:
		return "higher"
	}
	return "neutral"
}

// Kind says what a metric describes, which decides how it may be judged.
type Kind int

// Kinds of metric.
const (
	// KindLoad describes the level itself (its concurrency, rate, requested
	// lengths): what was asked for, not what was measured. Never compared.
	KindLoad Kind = iota
	// KindServer is the endpoint's behaviour: latency, throughput, failures,
	// server counters. Regressions are judged on these.
	KindServer
	// KindClient is the runner's own diagnostics (dispatch lag, CPU share,
	// scheduling latency): they describe the measurement, not the server, and
	// are shown but never counted as a regression.
	KindClient
	// KindDiagnostic is a part of a server metric split out to explain it
	// (TTFT less the server's own prompt time): shown with its change, never
	// gated nor called a regression, since the whole it is part of is
	// judged, and a part can grow while the whole gets better.
	KindDiagnostic
)

// String names the kind as reports print it.
func (k Kind) String() string {
	switch k {
	case KindLoad:
		return "load"
	case KindClient:
		return "client"
	case KindDiagnostic:
		return "diagnostic"
	}
	return "server"
}

// Metric describes one metric of a level.
type Metric struct {
	// Name is the metric's JSON and check-expression name ("ttft_p95_ms").
	Name string
	// Title is a short human name for table headers and charts ("TTFT p95").
	Title string
	// Unit is what the value is counted in: "ms", "s", "tok/s", "req/s",
	// "tokens", "requests", "share" (0..1), "%", or "" (flags, text, maps).
	Unit string
	// Decimals is the rounding of the value in report.json (-1: not rounded).
	Decimals int
	// Better is which way the metric improves.
	Better Better
	// Kind is what the metric describes.
	Kind Kind
	// Reference is set on the metrics that keep the reference load
	// generator's name, meaning and rounding (a compatibility contract).
	Reference bool
	// Help says in one line what the metric means.
	Help string
	// Aliases are names people commonly write for this metric (other tools'
	// names, "median" for p50), offered by "did you mean".
	Aliases []string
	// Compare says how the metric is compared between two runs with a
	// confidence interval; its zero value (no Sample) means it has none.
	Compare CompareSpec
	// NeedsOutput is set on the metrics that need a streamed answer's first
	// token or output tokens (TTFT, TPOT, output throughput, tool calls,
	// energy per output token): an API without output (one that answers
	// whole) leaves them null or meaningless, so the plan loader refuses a
	// check of its stage that reads one.
	NeedsOutput bool

	field int // index of the Point field
}

// CompareSpec says how a metric is compared between two runs (runner
// compare, --baseline, worse() in checks): which statistic (internal/stats)
// of which per-request sample of the level. A metric without one is shown
// with its point change and never judged by an interval; Why says why.
type CompareSpec struct {
	Statistic stats.Statistic
	Sample    Sample
	// Why says why a metric with a better direction has no interval.
	Why string
}

// Comparable reports whether the metric is compared with an interval.
func (m *Metric) Comparable() bool { return m.Compare.Sample != SampleNone }

// Judged reports whether a comparison gives the metric a verdict when its
// gate's family holds it: a server metric with a better direction. Load
// metrics, the client's own and diagnostics are shown with their change,
// never judged. Every path that judges (compare, --baseline, worse(),
// history, the board) asks here.
func (m *Metric) Judged() bool { return m.Kind == KindServer && m.Better != Neutral }

// Gateable reports whether a gate can judge the metric: Judged, with an
// interval (what worse(), --metrics and a history judge).
func (m *Metric) Gateable() bool { return m.Judged() && m.Comparable() }

// NotGateable says why a gate cannot judge the metric, to follow its name
// ("ttft_overhead_p50_ms is a diagnostic ..."); "" when it can.
func (m *Metric) NotGateable() string {
	switch {
	case m.Kind == KindClient:
		return "is the runner's own diagnostic: it is shown, never gated"
	case m.Kind == KindDiagnostic:
		return "is a diagnostic (a part of a server metric, split out to explain it): it is shown, never gated"
	case m.Kind == KindLoad:
		return "is what the level asked for, not what it measured: it is never gated"
	case m.Better == Neutral:
		return "has no better direction, so it cannot get worse"
	case !m.Comparable():
		return "has no interval: " + m.Compare.Why
	}
	return ""
}

// Sample names a per-request sample of a level: one value per request (or a
// hit per request, for a share), by the populations the level's metrics are
// computed over (package aggregate draws them from the records).
type Sample int

// Samples of a level.
const (
	SampleNone Sample = iota
	// SampleTTFT .. SampleTTFTOverhead are one latency of each success (ms).
	SampleTTFT
	SampleTPOT
	SampleE2E
	SampleTTFAT
	SampleTTFTFromSchedule
	SampleE2EFromSchedule
	SampleTTFTOverhead
	// SampleStreamTPS is output tokens / E2E (s) of each success with tokens.
	SampleStreamTPS
	// SampleOutputTokens is each measured request's output tokens (0 for a
	// failure) over the level's window: a rate.
	SampleOutputTokens
	// SampleCompleted is 1 for each success, 0 for a failure, over the
	// level's window: a rate.
	SampleCompleted
	// SamplePrefill is each success's input tokens over its TTFT (s): a ratio.
	SamplePrefill
	// SampleGood is the measured requests that met every SLO bound: a share.
	SampleGood
	// SampleFailed is the measured requests that failed: a share.
	SampleFailed
)

// Numeric reports whether the metric is a number (and so can be charted,
// compared and tabulated).
func (m *Metric) Numeric() bool {
	switch pointType.Field(m.field).Type {
	case reflect.TypeFor[int](), reflect.TypeFor[float64](), reflect.TypeFor[*float64](), reflect.TypeFor[*int64](), reflect.TypeFor[*int]():
		return true
	}
	return false
}

// Percent reports whether the metric is a share (0..1) that people read as a
// percentage.
func (m *Metric) Percent() bool { return m.Unit == "share" }

// Header is the metric's column header: its title and display unit
// ("TTFT p95 (ms)", "Goodput (%)"), the unit left out where the title says it.
func (m *Metric) Header() string {
	switch {
	case m.Percent():
		return m.Title + " (%)"
	case m.Unit == "" || m.Unit == "requests" || m.Unit == "tokens" || strings.Contains(strings.ToLower(m.Title), m.Unit):
		return m.Title
	}
	return m.Title + " (" + m.Unit + ")"
}

// Value returns the metric's number on p, and false when p does not have
// one (a null metric) or the metric is not numeric.
func (m *Metric) Value(p *Point) (float64, bool) {
	f := reflect.ValueOf(p).Elem().Field(m.field)
	if f.Kind() == reflect.Pointer {
		if f.IsNil() {
			return 0, false
		}
		f = f.Elem()
	}
	switch f.Kind() {
	case reflect.Float64:
		return f.Float(), true
	case reflect.Int, reflect.Int64:
		return float64(f.Int()), true
	}
	return 0, false
}

// Integer reports whether the metric counts whole things (requests, tokens).
func (m *Metric) Integer() bool {
	switch pointType.Field(m.field).Type {
	case reflect.TypeFor[int](), reflect.TypeFor[*int64]():
		return true
	}
	return false
}

// SetValue sets a numeric metric on p to v (rounded to a whole number for
// an integer metric), or to null when v is nil and the metric can be null.
// It reports whether it could: a capacity search judges its targets on
// estimates put in place of a probe's own values.
func (m *Metric) SetValue(p *Point, v *float64) bool {
	f := reflect.ValueOf(p).Elem().Field(m.field)
	if f.Kind() == reflect.Pointer {
		if v == nil {
			f.SetZero()
			return true
		}
		f.Set(reflect.New(f.Type().Elem()))
		f = f.Elem()
	}
	if v == nil {
		return false
	}
	switch f.Kind() {
	case reflect.Float64:
		f.SetFloat(*v)
	case reflect.Int, reflect.Int64:
		f.SetInt(int64(math.Round(*v)))
	default:
		return false
	}
	return true
}

// Raw returns the metric's value on p as a check sees it (pointers
// dereferenced) and whether it is null: not produced by this run.
func (m *Metric) Raw(p *Point) (v any, null bool) {
	f := reflect.ValueOf(p).Elem().Field(m.field)
	switch f.Kind() {
	case reflect.Pointer:
		if f.IsNil() {
			return nil, true
		}
		return f.Elem().Interface(), false
	case reflect.Map:
		// No server counters means the engine exposes none: a null metric. An
		// empty errors_by_kind just means no errors, and indexing it gives 0.
		if f.IsNil() && m.Name == "server_counters" {
			return nil, true
		}
	}
	return f.Interface(), false
}

// Metrics returns the catalogue in the order of Point's fields. The slice is
// shared: do not modify it.
func Metrics() []Metric {
	catalogueOnce.Do(bindCatalogue)
	return catalogue
}

// MetricNamed returns the metric called name.
func MetricNamed(name string) (*Metric, bool) {
	catalogueOnce.Do(bindCatalogue)
	i, ok := byName[name]
	if !ok {
		return nil, false
	}
	return &catalogue[i], true
}

// MetricForAlias returns the metric a common synonym stands for
// ("tpot_median_ms" → tpot_p50_ms, "errors" → failed).
func MetricForAlias(alias string) (*Metric, bool) {
	ms := Metrics()
	for i := range ms {
		for _, a := range ms[i].Aliases {
			if a == alias {
				return &ms[i], true
			}
		}
	}
	return nil, false
}

// MetricNames returns every metric name, in catalogue order.
func MetricNames() []string {
	ms := Metrics()
	out := make([]string, len(ms))
	for i := range ms {
		out[i] = ms[i].Name
	}
	return out
}

var (
	pointType     = reflect.TypeFor[Point]()
	catalogueOnce sync.Once
	byName        map[string]int
)

// bindCatalogue puts the catalogue in Point's field order and binds each
// entry to its field. A metric without a field, or an expr-tagged field
// without a metric, is a programming error caught by the first use (and by
// the package's tests).
func bindCatalogue() {
	entries := map[string]Metric{}
	for _, m := range catalogueEntries() {
		if _, dup := entries[m.Name]; dup {
			panic("result: metric " + m.Name + " described twice")
		}
		entries[m.Name] = m
	}
	byName = map[string]int{}
	for i := range pointType.NumField() {
		name := pointType.Field(i).Tag.Get("expr")
		if name == "" || name == "-" {
			continue
		}
		m, ok := entries[name]
		if !ok {
			panic("result: Point field " + pointType.Field(i).Name + " (" + name + ") has no catalogue entry")
		}
		if js, _, _ := strings.Cut(pointType.Field(i).Tag.Get("json"), ","); js != name {
			panic(fmt.Sprintf("result: Point field %s: json name %q differs from expr name %q", pointType.Field(i).Name, js, name))
		}
		m.field = i
		byName[name] = len(catalogue)
		catalogue = append(catalogue, m)
		delete(entries, name)
	}
	for name := range entries {
		panic("result: catalogue metric " + name + " has no Point field")
	}
}

var catalogue []Metric

// latencyFamily describes the percentile, mean and max metrics of one latency
// family ("ttft", "TTFT", "time to first token"), for the stats given;
// reference lists the ones that keep the reference generator's names.
func latencyFamily(family, title, what string, kind Kind, better Better, sample Sample, stats []string, reference ...string) []Metric {
	var out []Metric
	for _, s := range stats {
		m := Metric{
			Name: family + "_" + s + "_ms", Title: title + " " + s, Unit: "ms", Decimals: 2,
			Better: better, Kind: kind,
		}
		switch s {
		case "p50":
			m.Aliases = []string{family + "_median_ms", family + "_p50"}
		case "mean":
			m.Aliases = []string{family + "_avg_ms", family + "_average_ms"}
		}
		switch s {
		case "mean":
			m.Help = "mean " + what + " (ms)"
		case "max":
			m.Help = "largest " + what + " (ms)"
		default:
			m.Help = s + " of " + what + " (ms), by the reference's percentile rule"
		}
		for _, r := range reference {
			m.Reference = m.Reference || r == m.Name
		}
		m.Compare = latencyCompare(family, s, sample)
		out = append(out, m)
	}
	return out
}

// latencyCompare is how a latency family's statistic s is compared: its
// percentiles and mean over the family's per-request sample. A maximum is
// one request and has no interval; ITL's samples are gaps, which are
// correlated within a request, so a bootstrap over them would be too narrow
// (TPOT is the per-request measure of the same thing).
func latencyCompare(family, s string, sample Sample) CompareSpec {
	if sample == SampleNone {
		return CompareSpec{Why: "its samples are the gaps between tokens, correlated within a request: compare " +
			strings.Replace(family+"_"+s+"_ms", "itl", "tpot", 1) + " (one value per request) instead"}
	}
	if s == "max" {
		return CompareSpec{Why: "a maximum is one request's value"}
	}
	if s == "mean" {
		return CompareSpec{Statistic: stats.Mean(), Sample: sample}
	}
	var p float64
	if _, err := fmt.Sscanf(s, "p%g", &p); err != nil {
		panic("result: latency statistic " + s)
	}
	return CompareSpec{Statistic: stats.Percentile(p / 100), Sample: sample}
}

// serverCounterWhy is why a metric from the server's counters has no interval.
const serverCounterWhy = "it comes from the server's counters over the window: one number per run, no requests to resample"

// noInterval is the CompareSpec of a metric judged by no interval.
func noInterval(why string) CompareSpec { return CompareSpec{Why: why} }

// allStats is the statistic set every latency family reports.
var allStats = []string{"p50", "p90", "p95", "p99", "mean", "max"}

// catalogueEntries is the catalogue's data: a table, longer than a function
// usually is here because each row says one metric once.
func catalogueEntries() []Metric {
	ms := []Metric{
		// --- the reference generator's metrics ---
		{Name: "concurrency", Title: "Concurrency", Unit: "requests", Decimals: 0, Kind: KindLoad, Reference: true,
			Help: "requests kept in flight (closed loop), or the in-flight cap of an open-loop level (0: none)"},
		{Name: "input_tokens", Title: "Input tokens", Unit: "tokens", Decimals: 0, Kind: KindLoad, Reference: true,
			Help: "requested prompt length (synthetic prompts; 0 for prompt files)"},
		{Name: "output_tokens", NeedsOutput: true, Title: "Output tokens", Unit: "tokens", Decimals: 0, Kind: KindLoad, Reference: true,
			Help: "requested max_tokens (the nominal value when lengths vary)"},
		{Name: "n_requests", Title: "Requests", Unit: "requests", Decimals: 0, Kind: KindLoad, Reference: true,
			Aliases: []string{"requests", "num_requests", "total_requests"},
			Help:    "measured requests sent (warm-ups excluded): completed, failed and cancelled"},
		{Name: "completed", Title: "Completed", Unit: "requests", Decimals: 0, Better: HigherIsBetter, Kind: KindServer, Reference: true,
			Aliases: []string{"successes", "succeeded", "ok", "n_completed"},
			Help:    "requests that succeeded: HTTP 200 and a completed stream", Compare: noInterval("judged as the failed share (failed)")},
		{Name: "failed", Title: "Failed", Unit: "requests", Decimals: 0, Better: LowerIsBetter, Kind: KindServer, Reference: true,
			Aliases: []string{"errors", "error_count", "failures", "n_failed"},
			Help:    "requests that failed, each with one error kind", Compare: CompareSpec{Statistic: stats.Share(), Sample: SampleFailed}},
		{Name: "duration_s", Title: "Duration", Unit: "s", Decimals: 3, Kind: KindServer, Reference: true,
			Help: "measured window: first measured send to last completion"},
		{Name: "output_tps_total", NeedsOutput: true, Title: "Out tok/s", Unit: "tok/s", Decimals: 2, Better: HigherIsBetter, Kind: KindServer, Reference: true,
			Aliases: []string{"throughput", "tokens_per_second", "output_throughput", "tps", "tok_s"},
			Help:    "output tokens of successes over the measured window", Compare: CompareSpec{Statistic: stats.Rate(), Sample: SampleOutputTokens}},
		{Name: "output_tps_per_stream", NeedsOutput: true, Title: "Tok/s/stream", Unit: "tok/s", Decimals: 2, Better: HigherIsBetter, Kind: KindServer, Reference: true,
			Help: "mean over successes of output tokens / E2E", Compare: CompareSpec{Statistic: stats.Mean(), Sample: SampleStreamTPS}},
		{Name: "prefill_tps", NeedsOutput: true, Title: "Prefill tok/s", Unit: "tok/s", Decimals: 1, Better: HigherIsBetter, Kind: KindServer, Reference: true,
			Help: "mean reported input tokens / mean TTFT", Compare: CompareSpec{Statistic: stats.Ratio(), Sample: SamplePrefill}},
		{Name: "spec_acceptance_rate", NeedsOutput: true, Title: "Spec accept", Unit: "share", Decimals: -1, Better: HigherIsBetter, Kind: KindServer, Reference: true,
			Help: "accepted / drafted speculative tokens over the window (server counters; null without them)", Compare: noInterval(serverCounterWhy)},
		{Name: "spec_draft_tokens", NeedsOutput: true, Title: "Draft tokens", Unit: "tokens", Decimals: 0, Kind: KindServer, Reference: true,
			Help: "speculative tokens drafted over the window (server counters)"},
		{Name: "natural_stop", NeedsOutput: true, Title: "Natural stop", Kind: KindLoad, Reference: true,
			Help: "true in natural mode (the model stops), false in pinned mode (ignore_eos)"},
		{Name: "output_token_stdev", NeedsOutput: true, Title: "Out tokens stdev", Unit: "tokens", Decimals: 2, Kind: KindServer, Reference: true,
			Help: "sample stdev of output tokens of successes (natural mode only)"},
		{Name: "error", Title: "First error", Kind: KindServer, Reference: true,
			Help: "the first failure by dispatch order: \"kind: message\""},

		// --- load ---
		{Name: "rate", Title: "Rate", Unit: "req/s", Decimals: -1, Kind: KindLoad,
			Help: "target arrival rate of an open-loop level"},
		{Name: "achieved_rate", Title: "Achieved rate", Unit: "req/s", Decimals: 3, Better: HigherIsBetter, Kind: KindClient,
			Help: "rate the requests actually left at (open loop): (n−1) over first-to-last send; the level's label (rate=5) is the rate asked for, and a level of a few seconds departs from it by chance (Poisson: about ±1/√n)"},
		{Name: "request_tps", Title: "Req/s", Unit: "req/s", Decimals: 3, Better: HigherIsBetter, Kind: KindServer,
			Aliases: []string{"rps", "qps", "request_throughput", "requests_per_second"},
			Help:    "completed requests over the measured window", Compare: CompareSpec{Statistic: stats.Rate(), Sample: SampleCompleted}},
		{Name: "mean_input_tokens", Title: "Mean in tokens", Unit: "tokens", Decimals: 2, Kind: KindServer,
			Help: "mean server-reported prompt tokens of successes"},
		{Name: "mean_output_tokens", NeedsOutput: true, Title: "Mean out tokens", Unit: "tokens", Decimals: 2, Kind: KindServer,
			Help: "mean output tokens of successes"},
		{Name: "input_tps_total", Title: "In tok/s", Unit: "tok/s", Decimals: 2, Better: HigherIsBetter, Kind: KindServer,
			Aliases: []string{"input_throughput", "embedding_tps", "prompt_tps"},
			Help:    "server-reported input tokens of successes over the measured window, for APIs without output tokens (embeddings, rerank, score; null otherwise)"},
		{Name: "mean_inputs_per_request", Title: "Inputs/req", Unit: "texts", Decimals: 2, Kind: KindLoad,
			Aliases: []string{"batch_size", "documents_per_request", "inputs_per_request"},
			Help:    "mean texts a batch API's measured request carried: embeddings' inputs, the documents of rerank and score (null otherwise)"},
		{Name: "users", Title: "Users", Unit: "users", Decimals: 0, Kind: KindLoad,
			Aliases: []string{"num_users", "virtual_users", "vus", "sessions"},
			Help:    "people of a users level, each holding one conversation at a time and thinking between requests (0 on other levels; what they kept in flight is max_in_flight)"},
		{Name: "model", Title: "Model", Kind: KindLoad,
			Help: "the model a per-model point covers (a stage whose requests spread over several: models:); empty on a level's own point"},
		{Name: "turn", Title: "Turn", Decimals: 0, Kind: KindLoad,
			Help: "turn of a multi-turn conversation a per-turn point covers (0: the whole level)"},
		{Name: "max_in_flight", Title: "Peak in flight", Unit: "requests", Decimals: 0, Kind: KindClient,
			Aliases: []string{"peak_concurrency", "max_concurrency_reached", "in_flight", "peak_in_flight"},
			Help:    "most measured requests in flight at once, from their start and end times: a closed-loop level below its concurrency ran a lighter load than its label"},
		{Name: "max_tokens_hit_rate", NeedsOutput: true, Title: "Cut at max_tokens", Unit: "share", Decimals: 4, Kind: KindServer,
			Aliases: []string{"truncation_rate", "length_stop_rate", "finish_length_rate", "capped_share"},
			Help:    "share of a natural-mode level's successes the server cut at max_tokens (finish_reason \"length\"); null in pinned mode"},
		{Name: "tool_call_rate", NeedsOutput: true, Title: "Called a tool", Unit: "share", Decimals: 4, Kind: KindServer,
			Aliases: []string{"tool_use_rate", "function_call_rate", "tool_calls"},
			Help:    "share of successes whose response called a tool (a stage with tools; null without them); the calls are recorded, never executed"},

		// --- failures and goodput ---
		{Name: "errors_by_kind", Title: "Errors by kind", Kind: KindServer,
			Help: "failed requests by error kind (connect, http_<status>, timeout, truncated, malformed, server_error, interrupted)"},
		{Name: "cancelled", Title: "Cancelled", Unit: "requests", Decimals: 0, Kind: KindServer,
			Aliases: []string{"cancellations", "aborted", "gave_up", "n_cancelled"},
			Help:    "requests the client gave up on (cancel_after, cancel_after_tokens, cancel_share): neither completed nor failed; TTFT counts those that had their first token, E2E, TPOT and throughput leave them out",
			Compare: noInterval("how many give up is set by the plan's cancel_* settings as much as by the server")},
		{Name: "cancel_rate", Title: "Cancel rate", Unit: "share", Decimals: 4, Kind: KindServer,
			Aliases: []string{"cancellation_rate", "abort_rate", "give_up_rate"},
			Help:    "cancelled / n_requests: the share of measured requests the client gave up on (null on a stage that gives up on none)",
			Compare: noInterval("how many give up is set by the plan's cancel_* settings as much as by the server")},
		{Name: "goodput", Title: "Goodput", Unit: "share", Decimals: 4, Better: HigherIsBetter, Kind: KindServer,
			Aliases: []string{"slo_attainment", "good_share"},
			Help:    "share of measured requests that succeeded within every per-request SLO bound (null without slo)", Compare: CompareSpec{Statistic: stats.Share(), Sample: SampleGood}},

		// --- server counters ---
		{Name: "spec_acceptance_length", NeedsOutput: true, Title: "Accept length", Unit: "tokens", Decimals: 4, Better: HigherIsBetter, Kind: KindServer,
			Help: "mean tokens per draft round: 1 + accepted / drafts (server counters)", Compare: noInterval(serverCounterWhy)},
		{Name: "prefix_cache_hit_rate", Title: "Prefix hit", Unit: "share", Decimals: 4, Kind: KindServer,
			Help: "prefix-cache hits / queries over the window (server counters)"},
		{Name: "server_counters", Title: "Server counters", Kind: KindServer,
			Help: "every server counter's delta over the window, by name"},

		// --- validity ---
		{Name: "output_len_mismatch", NeedsOutput: true, Title: "Length mismatch", Unit: "requests", Decimals: 0, Better: LowerIsBetter, Kind: KindServer,
			Help:    "pinned-mode successes whose output tokens differ from their max_tokens (ignore_eos not honoured)",
			Compare: noInterval("a validity signal (the engine ignored ignore_eos), which the level's warning names")},
		{Name: "dispatch_lag_p99_ms", Title: "Lag p99", Unit: "ms", Decimals: 2, Better: LowerIsBetter, Kind: KindClient,
			Help: "p99 of how late requests left the client against when they were due (a closed loop's: how long a free worker took to send its next request, which never flags the client)"},
		{Name: "dispatch_lag_max_ms", Title: "Lag max", Unit: "ms", Decimals: 2, Better: LowerIsBetter, Kind: KindClient,
			Help: "largest dispatch lag"},
		{Name: "client_cpu_percent", Title: "Client CPU", Unit: "%", Decimals: 1, Better: LowerIsBetter, Kind: KindClient,
			Help: "the runner's CPU over the window, in percent of one core"},
		{Name: "client_sched_p90_ms", Title: "Client sched p90", Unit: "ms", Decimals: 3, Better: LowerIsBetter, Kind: KindClient,
			Help: "p90 of the Go runtime's scheduling latency: how long the runner's goroutines waited for a core"},
		{Name: "ttft_overhead_p50_ms", NeedsOutput: true, Title: "TTFT overhead p50", Unit: "ms", Decimals: 2, Better: LowerIsBetter, Kind: KindDiagnostic,
			Help:    "p50 of client TTFT minus the server's own prompt time (llama.cpp timings.prompt_ms): queueing, transport and client delay no server dashboard shows",
			Compare: CompareSpec{Statistic: stats.Percentile(0.5), Sample: SampleTTFTOverhead}},
		{Name: "ttft_overhead_p95_ms", NeedsOutput: true, Title: "TTFT overhead p95", Unit: "ms", Decimals: 2, Better: LowerIsBetter, Kind: KindDiagnostic,
			Help: "p95 of client TTFT minus the server's own prompt time", Compare: CompareSpec{Statistic: stats.Percentile(0.95), Sample: SampleTTFTOverhead}},
		{Name: "error_rate", Title: "Error rate", Unit: "share", Decimals: 4, Better: LowerIsBetter, Kind: KindServer,
			Aliases: []string{"failure_rate", "fail_rate", "failed_rate", "errors_rate", "err_rate", "error_ratio"},
			Help:    "failed / n_requests: the share of measured requests that failed",
			// The same share failed is compared by: judged once, there, so a
			// gate does not count one change twice.
			Compare: noInterval("judged as the failed share (failed)")},
		{Name: "usage_rejected", Title: "Usage rejected", Unit: "requests", Decimals: 0, Better: LowerIsBetter, Kind: KindServer,
			Help:    "successes whose stream reported impossible usage (a count negative, no integer, far above max_tokens or the bytes sent), counted as reporting none",
			Compare: noInterval("a validity signal (the server lied about usage), which the level's warning names")},
		{Name: "reconnects", Title: "Reconnects", Unit: "requests", Decimals: 0, Kind: KindServer,
			Help: "requests sent again once on a new connection: the server had closed their kept-alive connection without a response"},
		{Name: "timestamp_source", Title: "Token times", Kind: KindClient,
			Help: "how the token chunks were timed: kernel (the kernel's receive time of the read that brought each), user (the runner's clock after its read: no kernel time on this OS, HTTP/2, an option refused) or mixed"},
		{Name: "timestamp_kernel_share", Title: "Kernel-timed", Unit: "share", Decimals: 4, Better: HigherIsBetter, Kind: KindClient,
			Help: "share of the token chunks timed by the kernel's receive time"},
		{Name: "client_read_lag_p50_ms", Title: "Read lag p50", Unit: "ms", Decimals: 3, Better: LowerIsBetter, Kind: KindClient,
			Aliases: []string{"read_lag_p50_ms", "client_lag_p50_ms"},
			Help:    "p50 of the client's read lag: how long after the kernel received a token chunk the runner had read and decoded it (kernel-timed chunks; this delay is not in the token times)"},
		{Name: "client_read_lag_p99_ms", Title: "Read lag p99", Unit: "ms", Decimals: 3, Better: LowerIsBetter, Kind: KindClient,
			Aliases: []string{"read_lag_p99_ms", "client_lag_p99_ms"},
			Help:    "p99 of the client's read lag; a read that late takes in every token that arrived meanwhile, and each but the last carries the last one's time"},
		{Name: "client_read_lag_max_ms", Title: "Read lag max", Unit: "ms", Decimals: 3, Better: LowerIsBetter, Kind: KindClient,
			Aliases: []string{"read_lag_max_ms", "client_lag_max_ms"},
			Help:    "largest client read lag of a kernel-timed token chunk"},
		{Name: "client_bottleneck", Title: "Client bottleneck", Kind: KindClient,
			Help: "true when the runner itself may have set the pace (its numbers include its own delays)"},
		{Name: "sim_late_steps", Title: "Sim late steps", Unit: "steps", Decimals: 0, Better: LowerIsBetter, Kind: KindClient,
			Help: "built-in simulator: engine steps that ended more than 1 ms after its model planned (null for another server)"},
		{Name: "sim_lateness_ms", Title: "Sim lateness", Unit: "ms", Decimals: 2, Better: LowerIsBetter, Kind: KindClient,
			Help: "built-in simulator: how late its late steps ended against its model, in all"},
		{Name: "sim_behind_requests", Title: "Sim behind", Unit: "requests", Decimals: 0, Better: LowerIsBetter, Kind: KindClient,
			Help: "built-in simulator: completed requests whose time to first token or decode its lateness stretched by more than 2.5% of the model's and 1 ms"},
		{Name: "sim_lag_mean_ms", Title: "Sim lag mean", Unit: "ms", Decimals: 3, Better: LowerIsBetter, Kind: KindClient,
			Help: "built-in simulator: mean over completed requests of how much later than its model their last token was written"},
		{Name: "sim_ttft_stretch_max", Title: "Sim TTFT stretch", Unit: "share", Decimals: -1, Better: LowerIsBetter, Kind: KindClient,
			Help: "built-in simulator: at most how much its lateness stretched any request's time to first token against the model (a bucket bound, 0.01 to 100; null past it)"},
		{Name: "sim_decode_stretch_max", Title: "Sim decode stretch", Unit: "share", Decimals: -1, Better: LowerIsBetter, Kind: KindClient,
			Help: "built-in simulator: the same for the decode, first to last token"},
		{Name: "sim_e2e_stretch_max", Title: "Sim E2E stretch", Unit: "share", Decimals: -1, Better: LowerIsBetter, Kind: KindClient,
			Help: "built-in simulator: the same for the whole request, arrival to last token"},
		{Name: "sim_behind", Title: "Sim behind", Kind: KindClient,
			Help: "true when the built-in simulator's lateness stretched some request's time to first token or decode by more than 2.5%: a comparison then judges only changes larger than the stretch of the part a metric measures"},
		{Name: "steady", Title: "Steady", Kind: KindServer,
			Help: "true when the level was steady across its time slices (slices:, --slices): its first slice not far from the rest, no real trend; null without slices or with too few to judge"},
	}
	ms = append(ms, telemetryMetrics()...)
	ms = append(ms, needsOutput(latencyFamily("ttft", "TTFT", "time to first token (successes, and cancelled requests that had their first token)", KindServer, LowerIsBetter, SampleTTFT, allStats, "ttft_p50_ms", "ttft_p95_ms"))...)
	ms = append(ms, needsOutput(latencyFamily("tpot", "TPOT", "time per output token after the first (successes; not cancelled requests)", KindServer, LowerIsBetter, SampleTPOT, allStats, "tpot_p50_ms"))...)
	ms = append(ms, needsOutput(latencyFamily("itl", "ITL", "gaps between content-bearing chunks (a cancelled request's too, up to its cancellation)", KindServer, LowerIsBetter, SampleNone, allStats))...)
	ms = append(ms, latencyFamily("e2e", "E2E", "request latency, send to end of stream (successes; not cancelled requests, whose end is the client's)", KindServer, LowerIsBetter, SampleE2E, allStats)...)
	ms = append(ms, needsOutput(latencyFamily("ttfat", "TTFAT", "time to the first answer (content) token; the TTFT when no reasoning came first", KindServer, LowerIsBetter, SampleTTFAT, allStats))...)
	ms = append(ms, needsOutput(latencyFamily("ttft_from_schedule", "TTFT from schedule", "time to first token from the scheduled send time (open loop; cancelled requests with a first token too)", KindServer, LowerIsBetter, SampleTTFTFromSchedule, allStats))...)
	ms = append(ms, latencyFamily("e2e_from_schedule", "E2E from schedule", "request latency from the scheduled send time (open loop)", KindServer, LowerIsBetter, SampleE2EFromSchedule, allStats)...)
	return ms
}

// needsOutput marks ms (a latency family of a first token or of output
// tokens) as needing output (Metric.NeedsOutput).
func needsOutput(ms []Metric) []Metric {
	for i := range ms {
		ms[i].NeedsOutput = true
	}
	return ms
}

// telemetryWhy is why a metric read from the server's or the GPUs'
// telemetry has no interval.
const telemetryWhy = "it comes from the server's or the GPUs' telemetry over the window: one series per run, no requests to resample"

// telemetryMetrics describes the metrics of telemetry.jsonl and of the
// server's latency histograms.
func telemetryMetrics() []Metric {
	none := noInterval(telemetryWhy)
	ms := []Metric{}
	gauge := func(name, title, unit string, dec int, what string) {
		for _, s := range []string{"mean", "p95", "max"} {
			help := map[string]string{"mean": "mean", "p95": "p95 (the reference's percentile rule)", "max": "largest"}[s] +
				" over the window's telemetry reads of " + what
			ms = append(ms, Metric{Name: name + "_" + s, Title: title + " " + s, Unit: unit, Decimals: dec, Better: Neutral, Kind: KindServer, Help: help, Compare: none})
		}
	}
	gauge("server_running", "Running", "requests", 2, "the requests the engine was running (vllm:num_requests_running, sglang:num_running_reqs, llamacpp:requests_processing)")
	gauge("server_waiting", "Waiting", "requests", 2, "the requests waiting in the engine's queue (vllm:num_requests_waiting, sglang:num_queue_reqs, llamacpp:requests_deferred)")
	gauge("kv_cache_usage", "KV cache", "share", 4, "the engine's KV-cache usage (vllm:kv_cache_usage_perc, sglang:token_usage, llamacpp:kv_cache_usage_ratio)")
	for i := range ms {
		if strings.HasPrefix(ms[i].Name, "server_waiting") {
			ms[i].Better = LowerIsBetter
		}
	}
	ms = append(ms, Metric{Name: "server_preemptions", Title: "Preemptions", Unit: "requests", Decimals: 0, Better: LowerIsBetter, Kind: KindServer,
		Help: "requests the engine preempted over the window (vllm:num_preemptions counter delta)", Compare: noInterval(serverCounterWhy)})
	for _, f := range []struct {
		fam, title, what string
		output           bool // a first token's or the output's (NeedsOutput)
	}{
		{"server_ttft", "Server TTFT", "the server's own time to first token (vllm:time_to_first_token_seconds)", false}, // a pooling request's prefill counts
		{"server_queue", "Server queue", "the server's queue time (vllm:request_queue_time_seconds)", false},
		{"server_prefill", "Server prefill", "the server's prefill time (vllm:request_prefill_time_seconds)", false},
		{"server_decode", "Server decode", "the server's decode time (vllm:request_decode_time_seconds)", true},
		{"server_itl", "Server ITL", "the server's inter-token latency (vllm:inter_token_latency_seconds)", true},
		{"server_e2e", "Server E2E", "the server's request latency (vllm:e2e_request_latency_seconds)", false},
	} {
		for _, s := range []string{"p50", "p95", "p99", "mean"} {
			help := s + " of " + f.what + " over the window, interpolated within the histogram's buckets (ms)"
			if s == "mean" {
				help = "mean of " + f.what + " over the window: the histogram's sum over its count (ms)"
			}
			ms = append(ms, Metric{Name: f.fam + "_" + s + "_ms", Title: f.title + " " + s, Unit: "ms", Decimals: 2, Better: LowerIsBetter, Kind: KindServer, NeedsOutput: f.output,
				Help: help, Compare: noInterval("it comes from the server's histograms over the window: one number per run, no requests to resample")})
		}
	}
	ms = append(ms,
		Metric{Name: "ttft_gap_mean_ms", NeedsOutput: true, Title: "TTFT gap", Unit: "ms", Decimals: 2, Better: LowerIsBetter, Kind: KindDiagnostic,
			Help: "client mean TTFT minus the server's own mean TTFT (its histogram): the time outside the server's TTFT histogram, which the level's note splits as far as the server's figures allow (its queue, where its TTFT starts after it; network, HTTP front end and client)", Compare: none},
		Metric{Name: "gpu_count", Title: "GPUs", Unit: "gpus", Decimals: 0, Kind: KindLoad,
			Help: "GPUs the telemetry targets reported (DCGM exporter, AMD device metrics exporter)"},
		Metric{Name: "gpu_power_mean_w", Title: "GPU power mean", Unit: "W", Decimals: 1, Kind: KindServer,
			Help: "mean power of every GPU together over the window: energy_j over the window's length", Compare: none},
		Metric{Name: "gpu_power_max_w", Title: "GPU power max", Unit: "W", Decimals: 1, Kind: KindServer,
			Help: "largest summed power of every GPU in one telemetry read inside the window (DCGM_FI_DEV_POWER_USAGE, gpu_package_power)", Compare: none},
		Metric{Name: "gpu_util_mean_percent", Title: "GPU util", Unit: "%", Decimals: 1, Kind: KindServer,
			Help: "mean GPU utilisation over the window's reads and the GPUs (DCGM_FI_DEV_GPU_UTIL, gpu_gfx_activity)", Compare: none},
		Metric{Name: "gpu_memory_used_max_mib", Title: "GPU memory", Unit: "MiB", Decimals: 0, Kind: KindServer,
			Help: "most GPU memory in use, summed over the GPUs, in one read inside the window (DCGM_FI_DEV_FB_USED, gpu_used_vram)", Compare: none},
		Metric{Name: "energy_j", Title: "Energy", Unit: "J", Decimals: 1, Better: LowerIsBetter, Kind: KindServer,
			Help: "energy every GPU used over the window (the energy counters' deltas, else power integrated over the reads; energy_source says which)", Compare: none},
		Metric{Name: "energy_per_output_token_mj", NeedsOutput: true, Title: "Energy/token", Unit: "mJ", Decimals: 3, Better: LowerIsBetter, Kind: KindServer,
			Aliases: []string{"joules_per_token", "energy_per_token"},
			Help:    "energy_j over the output tokens of successes in the window: mean GPU power over output_tps_total", Compare: none},
		Metric{Name: "output_tokens_per_joule", NeedsOutput: true, Title: "Tokens/J", Unit: "tok/J", Decimals: 4, Better: HigherIsBetter, Kind: KindServer,
			Aliases: []string{"tokens_per_joule"},
			Help:    "output tokens of successes in the window per joule of GPU energy", Compare: none},
		Metric{Name: "energy_source", Title: "Energy source", Kind: KindServer,
			Help: "how energy_j was obtained: the counter (DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, gpu_energy_consumed) or power integrated over the reads, and over how many GPUs"},
	)
	return ms
}
