package aggregate

import (
	"fmt"
	"math"
	"strings"

	"github.com/runnerbench/runner/internal/hist"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/sim/simconfig"
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
// its histograms' deltas over the window.
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
}

// ttftGap sets ttft_gap_mean_ms, the client's mean TTFT minus the
// server's, with a note saying where the client's time went, as far as the
// server's own figures show it.
func (b *builder) ttftGap() {
	p := &b.p
	if p.TTFTMeanMs == nil || p.ServerTTFTMeanMs == nil {
		return
	}
	gap := result.Round(*p.TTFTMeanMs-*p.ServerTTFTMeanMs, 2)
	p.TTFTGapMeanMs = &gap
	sp := ttftSplit{ttft: *p.ServerTTFTMeanMs, gap: gap, prefill: p.ServerPrefillMeanMs, waitingMax: p.ServerWaitingMax}
	if _, ok := b.rec.Server.Histograms[simconfig.MetricLagRatio]; ok && b.rec.Server != nil {
		sp.simulator = true // only the built-in simulator exposes its lag
	}
	if qh, _ := firstHistogram(b.rec.Server, serverLatencyFamilies[1].names); qh != nil && qh.Count > 0 {
		// Over the client's requests: a server that times only the
		// requests that waited (llm-d-inference-sim) spreads its sum over
		// those that did not too, as vLLM's zeros do.
		sp.queued, sp.over = qh.Count, max(qh.Count, float64(p.Completed))
		sp.queue = result.Ptr(result.Round(1000*qh.Sum/sp.over, 2))
		sp.queueMean = 1000 * qh.Sum / qh.Count
	}
	h, _ := firstHistogram(b.rec.Server, serverLatencyFamilies[0].names)
	note := fmt.Sprintf("of the client's mean TTFT %.2f ms, the server's own TTFT is %.2f ms", *p.TTFTMeanMs, *p.ServerTTFTMeanMs) + sp.parts()
	if h != nil && int(h.Count) != p.Completed {
		note += fmt.Sprintf("; the server's histogram counted %.0f requests over the window where the client completed %d, so the two means are of different populations", h.Count, p.Completed)
	}
	p.Notes = append(p.Notes, note)
}

// ttftSplit is what the server's figures say of the client's mean TTFT.
type ttftSplit struct {
	ttft, gap float64 // the server's mean TTFT; the client's less it
	// queue is the server's queue time a client request on average: its
	// queue-time histogram's sum over the requests (nil: no histogram);
	// queued is how many that histogram counted, over how many requests
	// the sum is spread, queueMean its own mean.
	queue        *float64
	queued, over float64
	queueMean    float64
	prefill      *float64 // the server's mean prefill time
	waitingMax   *float64 // the most requests its waiting gauge showed
	simulator    bool     // the server is the built-in simulator
}

// queueInTTFT is whether the server's TTFT histogram counts the time a
// request waited in its queue, as far as its own histograms say, and which
// says it: vLLM's does (its TTFT runs from arrival), llm-d-inference-sim's
// does not (its TTFT is the prefill alone). why is "" when they do not say.
func (sp *ttftSplit) queueInTTFT() (in bool, why string) {
	switch {
	case sp.queue == nil:
		return false, ""
	case sp.simulator:
		return true, "the built-in simulator's runs from arrival"
	case *sp.queue > sp.ttft:
		// A TTFT that held the queue would be at least the queue, on
		// average over the same requests.
		return false, "its mean is below the queue's"
	case sp.prefill != nil:
		// The TTFT is the prefill alone, or the queue and the prefill:
		// whichever it is nearer.
		if math.Abs(sp.ttft-(*sp.queue+*sp.prefill)) < math.Abs(sp.ttft-*sp.prefill) {
			return true, "it matches the queue and the prefill together"
		}
		return false, "it matches the prefill alone"
	}
	return false, ""
}

// parts is the rest of the TTFT note: the server's queue and prefill, and
// what the gap holds. The gap is called network, the HTTP front end and the
// client only where the server's figures rule its queue out: its TTFT
// histogram counts the queue, or nothing waited (its waiting gauge read 0
// at every read in the window). Where its TTFT starts after the queue, the
// queue is taken out of the gap; where that cannot be told, or requests
// waited and no histogram times the wait, the gap is said to hold the queue
// too.
func (sp *ttftSplit) parts() string {
	s := sp.detail()
	q, gap := sp.queue, sp.gap
	in, why := sp.queueInTTFT()
	const outside = "network, the HTTP front end and the client"
	switch {
	case q != nil && *q <= max(0.5, 0.05*math.Abs(gap)):
		// Too short a queue to change the split, whichever side it is on.
		return s + fmt.Sprintf(", and %.2f ms is %s", gap, outside)
	case q != nil && why != "" && !in:
		s += fmt.Sprintf(", which starts after the queue (%s); of the %.2f ms outside it, ", why, gap)
		if rest := result.Round(gap-*q, 2); rest >= 0 {
			return s + fmt.Sprintf("the queue is %.2f ms and %.2f ms is %s", *q, rest, outside)
		}
		return s + "the queue accounts for all (its histogram and the client's count other requests at the window's edges)"
	case q != nil && why == "":
		return s + fmt.Sprintf(", and %.2f ms is outside it: %s, and the %.2f ms of queue too if this server's TTFT starts after its queue (its histograms do not say)", gap, outside, *q)
	case q != nil:
		return s + fmt.Sprintf(", and %.2f ms is %s", gap, outside)
	case sp.waitingMax != nil && *sp.waitingMax > 0:
		return s + fmt.Sprintf(", and %.2f ms is outside it: the server's queue (up to %.0f requests waited, and no histogram times the wait), %s", gap, *sp.waitingMax, outside)
	case sp.waitingMax != nil:
		return s + fmt.Sprintf(", and %.2f ms is %s (the server's waiting gauge read 0 at every read in the window)", gap, outside)
	}
	return s + fmt.Sprintf(", and %.2f ms is outside it: %s, or a queue the server does not report", gap, outside)
}

// detail is the note's parenthesis: the server's queue a request, and its
// prefill.
func (sp *ttftSplit) detail() string {
	var parts []string
	switch {
	case sp.queue != nil && sp.queued < sp.over:
		parts = append(parts, fmt.Sprintf("queue %.2f ms a request: %.0f of %.0f waited, %.2f ms each on average", *sp.queue, sp.queued, sp.over, sp.queueMean))
	case sp.queue != nil:
		parts = append(parts, fmt.Sprintf("queue %.2f ms", *sp.queue))
	}
	if sp.prefill != nil {
		parts = append(parts, fmt.Sprintf("prefill %.2f ms", *sp.prefill))
		if sp.queue == nil {
			parts[len(parts)-1] += "; the server has no queue-time histogram"
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
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
