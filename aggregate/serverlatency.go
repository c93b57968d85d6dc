package aggregate

import (
	"fmt"
	"math"

	"github.com/runnerbench/runner/internal/hist"
	"github.com/runnerbench/runner/result"
)

// serverLatencyFamilies are the server's latency histograms each family of
// server_* latency metrics is read from, first present wins (vLLM's names,
// which llm-d-inference-sim and the built-in simulator share, then
// SGLang's). vLLM's inter_token_latency_seconds replaced
// time_per_output_token_seconds, which older versions have alone.
var serverLatencyFamilies = []struct {
	fam                  string
	names                []string
	p50, p95, p99, meanv func(p *result.Point) **float64
}{
	{"server_ttft", []string{"vllm:time_to_first_token_seconds", "sglang:time_to_first_token_seconds"},
		func(p *result.Point) **float64 { return &p.ServerTTFTP50Ms }, func(p *result.Point) **float64 { return &p.ServerTTFTP95Ms },
		func(p *result.Point) **float64 { return &p.ServerTTFTP99Ms }, func(p *result.Point) **float64 { return &p.ServerTTFTMeanMs }},
	{"server_queue", []string{"vllm:request_queue_time_seconds", "sglang:queue_time_seconds"},
		func(p *result.Point) **float64 { return &p.ServerQueueP50Ms }, func(p *result.Point) **float64 { return &p.ServerQueueP95Ms },
		func(p *result.Point) **float64 { return &p.ServerQueueP99Ms }, func(p *result.Point) **float64 { return &p.ServerQueueMeanMs }},
	{"server_prefill", []string{"vllm:request_prefill_time_seconds"},
		func(p *result.Point) **float64 { return &p.ServerPrefillP50Ms }, func(p *result.Point) **float64 { return &p.ServerPrefillP95Ms },
		func(p *result.Point) **float64 { return &p.ServerPrefillP99Ms }, func(p *result.Point) **float64 { return &p.ServerPrefillMeanMs }},
	{"server_decode", []string{"vllm:request_decode_time_seconds"},
		func(p *result.Point) **float64 { return &p.ServerDecodeP50Ms }, func(p *result.Point) **float64 { return &p.ServerDecodeP95Ms },
		func(p *result.Point) **float64 { return &p.ServerDecodeP99Ms }, func(p *result.Point) **float64 { return &p.ServerDecodeMeanMs }},
	{"server_itl", []string{"vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds", "sglang:inter_token_latency_seconds"},
		func(p *result.Point) **float64 { return &p.ServerITLP50Ms }, func(p *result.Point) **float64 { return &p.ServerITLP95Ms },
		func(p *result.Point) **float64 { return &p.ServerITLP99Ms }, func(p *result.Point) **float64 { return &p.ServerITLMeanMs }},
	{"server_e2e", []string{"vllm:e2e_request_latency_seconds", "sglang:e2e_request_latency_seconds"},
		func(p *result.Point) **float64 { return &p.ServerE2EP50Ms }, func(p *result.Point) **float64 { return &p.ServerE2EP95Ms },
		func(p *result.Point) **float64 { return &p.ServerE2EP99Ms }, func(p *result.Point) **float64 { return &p.ServerE2EMeanMs }},
}

// serverLatency sets the server's own latency percentiles and means from
// its histograms' deltas over the window, and the gap between the client's
// mean TTFT and the server's.
func (b *builder) serverLatency() {
	d, p := b.rec.Server, &b.p
	if d == nil || len(d.Histograms) == 0 {
		return
	}
	var above []string
	for _, f := range serverLatencyFamilies {
		h, _ := firstHistogram(d, f.names)
		if h == nil || h.Count <= 0 {
			continue
		}
		for _, q := range []struct {
			q   float64
			s   string
			set func(p *result.Point) **float64
		}{{0.50, "p50", f.p50}, {0.95, "p95", f.p95}, {0.99, "p99", f.p99}} {
			v, past := HistogramQuantile(h, q.q)
			if math.IsNaN(v) {
				continue
			}
			*q.set(p) = result.Ptr(result.Round(1000*v, 2))
			metric := f.fam + "_" + q.s + "_ms"
			if h.Count < float64(hist.MinSamples(q.q)) {
				b.low = append(b.low, metric)
			}
			if past {
				above = append(above, metric)
			}
		}
		if h.Sum > 0 {
			*f.meanv(p) = result.Ptr(result.Round(1000*h.Sum/h.Count, 2))
		}
	}
	p.Notes = append(p.Notes, "server_* latencies come from the server's own histograms over the window: percentiles interpolated linearly within a bucket (as Prometheus's histogram_quantile does), so they are as fine as the bucket bounds; means are exact (the histogram's sum over its count)")
	if len(above) > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("%v fell past the histogram's last bucket bound: the value is that bound, a lower bound of the true one", above))
	}
	b.ttftGap()
}

// ttftGap sets ttft_gap_mean_ms: the client's mean TTFT minus the server's,
// with a note saying where the client's time went.
func (b *builder) ttftGap() {
	p := &b.p
	if p.TTFTMeanMs == nil || p.ServerTTFTMeanMs == nil {
		return
	}
	gap := result.Round(*p.TTFTMeanMs-*p.ServerTTFTMeanMs, 2)
	p.TTFTGapMeanMs = &gap
	h, _ := firstHistogram(b.rec.Server, serverLatencyFamilies[0].names)
	parts := fmt.Sprintf("of the client's mean TTFT %.2f ms, the server's own TTFT is %.2f ms", *p.TTFTMeanMs, *p.ServerTTFTMeanMs)
	if p.ServerQueueMeanMs != nil {
		parts += fmt.Sprintf(" (queue %.2f ms", *p.ServerQueueMeanMs)
		if p.ServerPrefillMeanMs != nil {
			parts += fmt.Sprintf(", prefill %.2f ms", *p.ServerPrefillMeanMs)
		}
		parts += ")"
	} else if p.ServerPrefillMeanMs != nil {
		parts += fmt.Sprintf(" (prefill %.2f ms; the server has no queue-time histogram)", *p.ServerPrefillMeanMs)
	}
	parts += fmt.Sprintf(", and %.2f ms is network, the HTTP front end and the client", gap)
	if h != nil && int(h.Count) != p.Completed {
		parts += fmt.Sprintf("; the server's histogram counted %.0f requests over the window where the client completed %d, so the two means are of different populations", h.Count, p.Completed)
	}
	p.Notes = append(p.Notes, parts)
}

func firstHistogram(d *result.ServerDelta, names []string) (*result.HistogramDelta, string) {
	if d == nil {
		return nil, ""
	}
	for _, n := range names {
		if h, ok := d.Histograms[n]; ok {
			return &h, n
		}
	}
	return nil, ""
}

// HistogramQuantile is the q-quantile of a histogram's observations,
// interpolated linearly within the bucket it falls in, as Prometheus's
// histogram_quantile does: the rank q·count is found among the cumulative
// counts, and the value is placed between the bucket's lower bound (the
// previous bound, or 0 for the first bucket when its bound is positive) and
// its upper bound in proportion to the rank's place among the bucket's
// observations. A rank past the last finite bound gives that bound, and
// past = true (the true value is larger). NaN without observations.
func HistogramQuantile(h *result.HistogramDelta, q float64) (v float64, past bool) {
	if h == nil || h.Count <= 0 || len(h.Buckets) == 0 {
		return math.NaN(), false
	}
	rank := q * h.Count
	lower, prev := 0.0, 0.0
	if h.Buckets[0].LE <= 0 {
		lower = h.Buckets[0].LE
	}
	for i, bk := range h.Buckets {
		if bk.Count >= rank && bk.Count > prev {
			if i == 0 && bk.LE <= 0 {
				return bk.LE, false
			}
			return lower + (bk.LE-lower)*(rank-prev)/(bk.Count-prev), false
		}
		lower, prev = bk.LE, bk.Count
	}
	return h.Buckets[len(h.Buckets)-1].LE, true
}
