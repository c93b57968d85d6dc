// Package servermetrics reads an engine's Prometheus /metrics endpoint around
// a measured window and turns the lifetime counters into deltas: speculative
// decoding drafts and acceptances, prefix-cache queries and hits, and the
// generic token and request totals.
//
// The counters are lifetime totals, so a level's numbers are the difference
// of two reads bracketing its measured window; reading one total would fold
// in warm-ups and every earlier level. A server without these counters gives
// nil fields, and a server without /metrics at all (Ollama, hosted APIs)
// gives no snapshot: both are ordinary outcomes, not errors.
package servermetrics

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/runnerbench/runner/internal/redact"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
	"github.com/runnerbench/runner/sim/simconfig"
)

// Names overrides the counter names for an engine Runner does not know: the
// plan's endpoint.counters block, as the plan declares it. An empty name
// means the known defaults. A name matches with or without `_total`.
type Names = scenario.Counters

// Known counter names, newest first; the first one the server exposes wins.
// Counters appear with or without `_total` depending on the engine and the
// Prometheus client version (llm-d-inference-sim's vLLM names have none), so
// each is looked up both ways.
//
// llama.cpp's speculative-decoding counters mean what vLLM's do: drafts
// proposed (one per verification step that had a draft), draft tokens
// proposed, and draft tokens accepted, so the rate and acceptance length
// below have one definition for both.
var (
	knownSpecDrafts = []string{
		"vllm:spec_decode_num_drafts",
		"llamacpp:spec_decode_num_drafts",
	}
	knownSpecDraftTokens = []string{
		"vllm:spec_decode_num_draft_tokens",
		"llamacpp:spec_decode_num_draft_tokens",
	}
	knownSpecAcceptedTokens = []string{
		"vllm:spec_decode_num_accepted_tokens",
		"llamacpp:spec_decode_num_accepted_tokens",
	}
	// vLLM counts prefix-cache queries and hits in tokens. SGLang counts the
	// prompt tokens it served from cache; with its prompt-token total that is
	// the same token hit rate.
	knownPrefixCacheQueries = []string{
		"vllm:prefix_cache_queries",
		"vllm:gpu_prefix_cache_queries",
		"sglang:prompt_tokens",
	}
	knownPrefixCacheHits = []string{
		"vllm:prefix_cache_hits",
		"vllm:gpu_prefix_cache_hits",
		"sglang:cached_tokens",
	}
	// Gauges some engines export instead of counters (SGLang; vLLM's V0
	// engine for its prefix cache); the value after the window is used when
	// no counter gives the number. They average over the engine's recent log
	// interval or its lifetime, not exactly the window: the closest on offer.
	knownAcceptLengthGauges = []string{"sglang:spec_accept_length"}
	knownAcceptRateGauges   = []string{"sglang:spec_accept_rate"}
	knownCacheHitRateGauges = []string{"sglang:cache_hit_rate", "vllm:gpu_prefix_cache_hit_rate"}

	// genericCounters are kept in Delta.Counters (by the name given here,
	// without `_total`) when the server exposes them.
	genericCounters = []string{
		"vllm:prompt_tokens",
		"vllm:generation_tokens",
		"vllm:request_success",
		"vllm:num_preemptions",
		"vllm:spec_decode_num_drafts",
		"vllm:spec_decode_num_draft_tokens",
		"vllm:spec_decode_num_accepted_tokens",
		"vllm:spec_decode_num_emitted_tokens",
		"vllm:prefix_cache_queries",
		"vllm:prefix_cache_hits",
		"vllm:gpu_prefix_cache_queries",
		"vllm:gpu_prefix_cache_hits",
		"sglang:prompt_tokens",
		"sglang:generation_tokens",
		"sglang:cached_tokens",
		"sglang:num_requests",
		"llamacpp:prompt_tokens",
		"llamacpp:prompt_seconds",
		"llamacpp:tokens_predicted",
		"llamacpp:tokens_predicted_seconds",
		"llamacpp:n_decode",
		"llamacpp:n_tokens_max",
		"llamacpp:spec_decode_num_drafts",
		"llamacpp:spec_decode_num_draft_tokens",
		"llamacpp:spec_decode_num_accepted_tokens",
		// The built-in simulator's account of how far it fell behind its
		// own timing model (aggregate flags such a level sim_behind).
		simconfig.MetricSteps,
		simconfig.MetricLateSteps,
		simconfig.MetricStepLateness,
		simconfig.MetricRequestLag,
	}

	// knownHistograms are kept in Delta.Histograms when the server exposes
	// them: few, since a histogram's buckets are many numbers.
	knownHistograms = append([]string{simconfig.MetricLagRatio, simconfig.MetricTTFTLagRatio, simconfig.MetricDecodeLagRatio, simconfig.MetricE2ELagRatio},
		LatencyHistograms...)
)

// LatencyHistograms are the engines' own latency histograms (in seconds)
// kept in Delta.Histograms: vLLM's (and llm-d-inference-sim's, which has
// no queue-time histogram) and SGLang's. Package aggregate turns their
// deltas into the server's latency percentiles beside the client's.
var LatencyHistograms = []string{
	"vllm:time_to_first_token_seconds",
	"vllm:request_queue_time_seconds",
	"vllm:request_prefill_time_seconds",
	"vllm:request_decode_time_seconds",
	"vllm:inter_token_latency_seconds",
	"vllm:time_per_output_token_seconds",
	"vllm:e2e_request_latency_seconds",
	"sglang:time_to_first_token_seconds",
	"sglang:inter_token_latency_seconds",
	"sglang:e2e_request_latency_seconds",
	"sglang:queue_time_seconds",
}

// Scraper reads one metrics URL. It holds no mutable state, so one Scraper
// may be read from several goroutines.
type Scraper struct {
	client *http.Client
	url    string
	names  Names
	header http.Header
}

// WithHeader makes every scrape send h (for example the endpoint's
// Authorization header, when /metrics sits behind the same auth as the API).
// The caller decides whether the metrics URL may see those credentials.
func (s *Scraper) WithHeader(h http.Header) *Scraper {
	s.header = h
	return s
}

// New returns a scraper of url (the full /metrics URL) using client (nil
// means http.DefaultClient). names overrides the known counter names.
func New(client *http.Client, url string, names Names) *Scraper {
	if client == nil {
		client = http.DefaultClient
	}
	return &Scraper{client: client, url: url, names: names}
}

// Snapshot is one read of the server's counters: every sample summed over its
// label sets, by sample name.
type Snapshot struct {
	names  Names
	values map[string]float64
	hists  map[string]*result.HistogramDelta // knownHistograms, summed over label sets
}

// maxBody bounds what a scrape reads: a vLLM /metrics page is tens of KB, and
// a misconfigured URL must not make the runner buffer a large download.
const maxBody = 16 << 20

// Read scrapes the metrics URL once. A 404 (no /metrics, like Ollama) gives
// (nil, nil); a server that cannot be reached, another non-200 status, or a
// page that is not Prometheus text is an error.
func (s *Scraper) Read(ctx context.Context) (*Snapshot, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return nil, fmt.Errorf("server metrics: %w", err)
	}
	for k, vs := range s.header {
		req.Header[k] = vs
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("server metrics: %w", err)
	}
	defer resp.Body.Close()
	body := io.LimitReader(resp.Body, maxBody)
	if resp.StatusCode == http.StatusNotFound {
		_, _ = io.Copy(io.Discard, body) // let the connection be reused
		return nil, nil
	}
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, body)
		return nil, fmt.Errorf("server metrics: %s returned HTTP %d", redact.URL(s.url), resp.StatusCode)
	}
	snap, err := Parse(body)
	if err != nil {
		return nil, err
	}
	snap.names = s.names
	return snap, nil
}

// Parse reads Prometheus text exposition and sums each sample name over its
// label sets. Names with `:` (vLLM's, SGLang's, llama.cpp's) are legal.
//
// expfmt's parser is strict: one family declared twice (two processes' pages
// concatenated), a TYPE line after its samples or an OpenMetrics-only type
// fails the whole page, and with it every server metric of the level. When it
// fails, the sample lines are read one by one instead and malformed ones are
// skipped; only a page with no valid sample line at all (an HTML error page)
// is an error.
func Parse(r io.Reader) (*Snapshot, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("server metrics: read: %w", err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, perr := p.TextToMetricFamilies(bytes.NewReader(data))
	if perr != nil {
		if values, ok := parseLenient(data); ok {
			return &Snapshot{values: values}, nil
		}
		return nil, fmt.Errorf("server metrics: parse: %w", perr)
	}
	values := make(map[string]float64, len(families))
	hists := histograms(families)
	for name, mf := range families {
		var sum float64
		n := 0
		for _, m := range mf.GetMetric() {
			v, ok := sampleValue(mf.GetType(), m)
			if !ok {
				continue
			}
			sum += v
			n++
		}
		if n > 0 {
			values[name] = sum
		}
	}
	return &Snapshot{values: values, hists: hists}, nil
}

// histograms reads the known histograms' buckets, summed over label sets by
// bound (nil when there are none).
func histograms(families map[string]*dto.MetricFamily) map[string]*result.HistogramDelta {
	var out map[string]*result.HistogramDelta
	for _, name := range knownHistograms {
		mf, ok := families[name]
		if !ok || mf.GetType() != dto.MetricType_HISTOGRAM {
			continue
		}
		byLE := map[float64]float64{}
		h := &result.HistogramDelta{}
		for _, m := range mf.GetMetric() {
			hm := m.GetHistogram()
			h.Count += float64(hm.GetSampleCount())
			h.Sum += hm.GetSampleSum()
			for _, b := range hm.GetBucket() {
				if le := b.GetUpperBound(); !math.IsInf(le, 1) && !math.IsNaN(le) {
					byLE[le] += float64(b.GetCumulativeCount())
				}
			}
		}
		for _, le := range slices.Sorted(maps.Keys(byLE)) {
			h.Buckets = append(h.Buckets, result.HistogramBucket{LE: le, Count: byLE[le]})
		}
		if out == nil {
			out = map[string]*result.HistogramDelta{}
		}
		out[name] = h
	}
	return out
}

// diffHistogram is after − before of one histogram; nil when after lacks
// it, their bounds differ, or a count went backwards (a restart). A
// histogram the before read lacked counts from zero: a labelled histogram
// appears at its first observation (Prometheus's client libraries create a
// label set's series then), so all it holds came after the before read.
// llm-d-inference-sim's queue-time histogram appears so, when a request
// first waits: the level where requests first queued was the one that lost
// it.
func diffHistogram(before, after *result.HistogramDelta) *result.HistogramDelta {
	if after == nil {
		return nil
	}
	if before == nil {
		before = &result.HistogramDelta{Buckets: make([]result.HistogramBucket, len(after.Buckets))}
		for i, a := range after.Buckets {
			before.Buckets[i].LE = a.LE
		}
	}
	if len(before.Buckets) != len(after.Buckets) || after.Count < before.Count {
		return nil
	}
	d := &result.HistogramDelta{Count: after.Count - before.Count, Sum: after.Sum - before.Sum, Buckets: make([]result.HistogramBucket, len(after.Buckets))}
	for i, a := range after.Buckets {
		b := before.Buckets[i]
		if a.LE != b.LE || a.Count < b.Count {
			return nil
		}
		d.Buckets[i] = result.HistogramBucket{LE: a.LE, Count: a.Count - b.Count}
	}
	return d
}

// parseLenient reads `name{labels} value [timestamp]` lines, skipping
// comments and lines that do not have that shape. ok is false when no line
// does.
func parseLenient(data []byte) (map[string]float64, bool) {
	values := make(map[string]float64)
	valid, invalid := 0, 0
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		name, v, ok := parseSampleLine(line)
		if !ok {
			invalid++
			continue
		}
		valid++
		if !math.IsNaN(v) {
			values[name] += v
		}
	}
	// A page most of whose lines are not samples is not Prometheus text.
	return values, valid > 0 && valid >= invalid
}

// parseSampleLine splits one sample line; labels are skipped (quoted values
// may hold braces, spaces and escaped quotes).
func parseSampleLine(line string) (name string, v float64, ok bool) {
	i := 0
	for i < len(line) && isNameChar(line[i], i == 0) {
		i++
	}
	if i == 0 {
		return "", 0, false
	}
	name, rest := line[:i], line[i:]
	if strings.HasPrefix(rest, "{") {
		end, inQuote := -1, false
		for j := 1; j < len(rest) && end < 0; j++ {
			switch c := rest[j]; {
			case inQuote && c == '\\':
				j++
			case c == '"':
				inQuote = !inQuote
			case !inQuote && c == '}':
				end = j
			}
		}
		if end < 0 {
			return "", 0, false
		}
		rest = rest[end+1:]
	}
	if rest == "" || (rest[0] != ' ' && rest[0] != '\t') {
		return "", 0, false
	}
	fields := strings.Fields(rest)
	if len(fields) < 1 || len(fields) > 2 {
		return "", 0, false
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return "", 0, false
	}
	return name, v, true
}

func isNameChar(c byte, first bool) bool {
	return c == '_' || c == ':' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || !first && '0' <= c && c <= '9'
}

// sampleValue is the number a counter, gauge or untyped sample carries.
// Histograms and summaries are skipped: their parts are not counters we use.
// (Exposition that declares `# TYPE x counter` but names its samples
// `x_total` parses as an untyped `x_total` family, which lands here too.)
func sampleValue(t dto.MetricType, m *dto.Metric) (float64, bool) {
	var v float64
	switch t {
	case dto.MetricType_COUNTER:
		v = m.GetCounter().GetValue()
	case dto.MetricType_GAUGE:
		v = m.GetGauge().GetValue()
	case dto.MetricType_UNTYPED:
		v = m.GetUntyped().GetValue()
	default:
		return 0, false
	}
	if math.IsNaN(v) {
		return 0, false
	}
	return v, true
}

// Value returns the named sample summed over its label sets, trying the name
// as given, with `_total` added, and with `_total` removed.
func (s *Snapshot) Value(name string) (float64, bool) {
	if s == nil || name == "" {
		return 0, false
	}
	if v, ok := s.values[name]; ok {
		return v, true
	}
	if base, ok := strings.CutSuffix(name, "_total"); ok {
		v, ok := s.values[base]
		return v, ok
	}
	v, ok := s.values[name+"_total"]
	return v, ok
}

// SampleNames returns the sample names the snapshot holds, sorted.
func (s *Snapshot) SampleNames() []string {
	if s == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(s.values))
}

// Delta is the change of the server's counters over a measured window (see
// result.ServerDelta, where it lives so that records can carry it).
type Delta = result.ServerDelta

// Diff returns after − before for every known counter; nil when either is nil.
func Diff(before, after *Snapshot) *Delta {
	if before == nil || after == nil {
		return nil
	}
	names := after.names
	d := &Delta{
		SpecDrafts:         diffOf(before, after, names.SpecDrafts, knownSpecDrafts),
		SpecDraftTokens:    diffOf(before, after, names.SpecDraftTokens, knownSpecDraftTokens),
		SpecAcceptedTokens: diffOf(before, after, names.SpecAcceptedTokens, knownSpecAcceptedTokens),
		PrefixCacheQueries: diffOf(before, after, names.PrefixCacheQueries, knownPrefixCacheQueries),
		PrefixCacheHits:    diffOf(before, after, names.PrefixCacheHits, knownPrefixCacheHits),
	}
	// Queries and hits must come from the same engine's pair: a vLLM hits
	// counter over SGLang's prompt tokens would be nonsense. The known lists
	// are index-aligned, so resolve both from the first matching pair.
	if names.PrefixCacheQueries == "" && names.PrefixCacheHits == "" {
		d.PrefixCacheQueries, d.PrefixCacheHits = nil, nil
		for i := range knownPrefixCacheQueries {
			q := diffOf(before, after, "", knownPrefixCacheQueries[i:i+1])
			h := diffOf(before, after, "", knownPrefixCacheHits[i:i+1])
			if q != nil && h != nil {
				d.PrefixCacheQueries, d.PrefixCacheHits = q, h
				break
			}
		}
	}
	for _, name := range genericCounters {
		if v := diffOf(before, after, "", []string{name}); v != nil {
			if d.Counters == nil {
				d.Counters = make(map[string]float64)
			}
			d.Counters[name] = *v
		}
	}
	for _, n := range []string{names.SpecDrafts, names.SpecDraftTokens, names.SpecAcceptedTokens, names.PrefixCacheQueries, names.PrefixCacheHits} {
		if v := diffOf(before, after, n, nil); v != nil {
			if d.Counters == nil {
				d.Counters = make(map[string]float64)
			}
			d.Counters[strings.TrimSuffix(n, "_total")] = *v
		}
	}
	for _, name := range knownHistograms {
		if h := diffHistogram(before.hists[name], after.hists[name]); h != nil {
			if d.Histograms == nil {
				d.Histograms = make(map[string]result.HistogramDelta)
			}
			d.Histograms[name] = *h
		}
	}
	d.SpecAcceptLengthGauge = firstValue(after, knownAcceptLengthGauges)
	d.SpecAcceptRateGauge = firstValue(after, knownAcceptRateGauges)
	d.PrefixCacheHitRateGauge = firstValue(after, knownCacheHitRateGauges)
	return d
}

// diffOf is the delta of the override name, or else of the first known name
// present in both snapshots. A counter that went backwards (a server restart)
// gives nil rather than a negative or partial count.
func diffOf(before, after *Snapshot, override string, known []string) *float64 {
	cands := known
	if override != "" {
		cands = []string{override}
	}
	for _, name := range cands {
		a, okA := after.Value(name)
		b, okB := before.Value(name)
		if !okA || !okB {
			continue
		}
		if a < b {
			return nil
		}
		v := a - b
		return &v
	}
	return nil
}

func firstValue(s *Snapshot, names []string) *float64 {
	for _, n := range names {
		if v, ok := s.Value(n); ok {
			return &v
		}
	}
	return nil
}
