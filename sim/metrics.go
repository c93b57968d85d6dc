package sim

import (
	"math"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/runnerbench/runner/sim/simconfig"
)

// ttftBuckets are vLLM's bucket bounds for vllm:time_to_first_token_seconds.
var ttftBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,
	0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}

// requestBuckets are vLLM's bounds for its request-latency histograms
// (e2e_request_latency_seconds, request_queue_time_seconds).
var requestBuckets = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0,
	30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}

// histogram is a Prometheus histogram; observations are per request, so a
// mutex is cheap enough.
type histogram struct {
	bounds []float64
	mu     sync.Mutex
	counts []uint64 // per bucket, not cumulative; the last is +Inf
	sum    float64
	count  uint64
}

func newHistogram(bounds []float64) *histogram {
	return &histogram{bounds: bounds, counts: make([]uint64, len(bounds)+1)}
}

func (h *histogram) observe(v float64) {
	if math.IsNaN(v) {
		return
	}
	i := 0
	for i < len(h.bounds) && v > h.bounds[i] {
		i++
	}
	h.mu.Lock()
	h.counts[i]++
	h.sum += v
	h.count++
	h.mu.Unlock()
}

func (h *histogram) appendText(b []byte, name, help, model string) []byte {
	ml := `model_name=` + quoteLabel(model)
	b = append(b, "# HELP "+name+" "+help+"\n# TYPE "+name+" histogram\n"...)
	h.mu.Lock()
	defer h.mu.Unlock()
	var cum uint64
	for i, le := range h.bounds {
		cum += h.counts[i]
		b = append(b, name+`_bucket{le="`...)
		b = strconv.AppendFloat(b, le, 'g', -1, 64)
		b = append(b, `",`+ml+`} `...)
		b = strconv.AppendUint(b, cum, 10)
		b = append(b, '\n')
	}
	cum += h.counts[len(h.bounds)]
	b = append(b, name+`_bucket{le="+Inf",`+ml+`} `...)
	b = strconv.AppendUint(b, cum, 10)
	b = append(b, "\n"+name+"_sum{"+ml+"} "...)
	b = strconv.AppendFloat(b, h.sum, 'g', -1, 64)
	b = append(b, "\n"+name+"_count{"+ml+"} "...)
	b = strconv.AppendUint(b, h.count, 10)
	return append(b, '\n')
}

// metrics are the engine's counters, exposed in vLLM's names so that a client
// scraping a real vLLM and the simulator reads the same series.
type metrics struct {
	running, waiting            atomic.Int64
	promptTokens, genTokens     atomic.Int64
	cacheQueries, cacheHits     atomic.Int64
	specDrafts, specDraftTokens atomic.Int64
	specAccepted                atomic.Int64
	droppedConns                atomic.Int64    // completion requests dropped unanswered (close_after_stream)
	success                     [4]atomic.Int64 // by finishReason index
	ttft, e2e, queue, prefill   *histogram
	// The KV cache (Config.KVCacheBlocks): blocks in use of kvBlocks (0:
	// unbounded, no usage gauge), and the preemptions it forced.
	kvUsed      atomic.Int64
	kvBlocks    int64
	preemptions atomic.Int64

	// How far the simulator fell behind its own timing model (it shares
	// the machine with the client and everything else): see LateStep and
	// BehindShare. Counters, so a client reads a window's figures as the
	// difference of two scrapes.
	steps, lateSteps, stepLatenessNs atomic.Int64
	reqLagNs                         atomic.Int64
	lagRatio                         *histogram // the larger of the TTFT's and the decode's
	lagTTFT, lagDecode, lagE2E       *histogram
}

const (
	finishStop = iota
	finishLength
	finishAbort
	finishError
)

var finishNames = [...]string{"stop", "length", "abort", "error"}

func newMetrics(kvBlocks int) *metrics {
	return &metrics{
		kvBlocks:  int64(kvBlocks),
		ttft:      newHistogram(ttftBuckets),
		e2e:       newHistogram(requestBuckets),
		queue:     newHistogram(requestBuckets),
		prefill:   newHistogram(requestBuckets),
		lagRatio:  newHistogram(simconfig.LagRatioBounds),
		lagTTFT:   newHistogram(simconfig.LagRatioBounds),
		lagDecode: newHistogram(simconfig.LagRatioBounds),
		lagE2E:    newHistogram(simconfig.LagRatioBounds),
	}
}

// appendText appends the Prometheus text exposition (format 0.0.4).
func (m *metrics) appendText(b []byte, model string) []byte {
	lbl := `{model_name=` + quoteLabel(model) + `}`
	gauge := func(name, help string, v int64) {
		b = append(b, "# HELP "+name+" "+help+"\n# TYPE "+name+" gauge\n"+name+lbl+" "...)
		b = strconv.AppendInt(b, v, 10)
		b = append(b, '\n')
	}
	counter := func(name, help string, v int64) {
		b = append(b, "# HELP "+name+" "+help+"\n# TYPE "+name+" counter\n"+name+lbl+" "...)
		b = strconv.AppendInt(b, v, 10)
		b = append(b, '\n')
	}
	seconds := func(name, help string, ns int64) {
		b = append(b, "# HELP "+name+" "+help+"\n# TYPE "+name+" counter\n"+name+lbl+" "...)
		b = strconv.AppendFloat(b, float64(ns)/1e9, 'g', -1, 64)
		b = append(b, '\n')
	}
	gauge("vllm:num_requests_running", "Number of requests in model execution batches.", m.running.Load())
	gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", m.waiting.Load())
	if m.kvBlocks > 0 {
		const kv = "vllm:kv_cache_usage_perc"
		b = append(b, "# HELP "+kv+" KV-cache usage. 1 means 100 percent usage.\n# TYPE "+kv+" gauge\n"+kv+lbl+" "...)
		b = strconv.AppendFloat(b, float64(m.kvUsed.Load())/float64(m.kvBlocks), 'g', -1, 64)
		b = append(b, '\n')
	}
	counter("vllm:num_preemptions_total", "Cumulative number of preemption from the engine.", m.preemptions.Load())
	counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.", m.promptTokens.Load())
	counter("vllm:generation_tokens_total", "Number of generation tokens processed.", m.genTokens.Load())
	counter("vllm:prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens.", m.cacheQueries.Load())
	counter("vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.", m.cacheHits.Load())
	counter("vllm:spec_decode_num_drafts_total", "Number of spec decoding drafts.", m.specDrafts.Load())
	counter("vllm:spec_decode_num_draft_tokens_total", "Number of draft tokens.", m.specDraftTokens.Load())
	counter("vllm:spec_decode_num_accepted_tokens_total", "Number of accepted tokens.", m.specAccepted.Load())

	counter(simconfig.MetricSteps+"_total", "Engine steps the simulator ran.", m.steps.Load())
	counter(simconfig.MetricLateSteps+"_total", "Engine steps that ended more than 1 ms after the model planned.", m.lateSteps.Load())
	seconds(simconfig.MetricStepLateness+"_total", "Seconds the late steps ended after the model planned, in all.", m.stepLatenessNs.Load())
	seconds(simconfig.MetricRequestLag+"_total", "Seconds the timed requests' last tokens were written after the model's time, in all.", m.reqLagNs.Load())

	const succ = "vllm:request_success_total"
	b = append(b, "# HELP "+succ+" Count of successfully processed requests.\n# TYPE "+succ+" counter\n"...)
	for i, name := range finishNames[:2] {
		b = append(b, succ+`{finished_reason="`+name+`",model_name=`+quoteLabel(model)+`} `...)
		b = strconv.AppendInt(b, m.success[i].Load(), 10)
		b = append(b, '\n')
	}

	b = m.ttft.appendText(b, "vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", model)
	b = m.e2e.appendText(b, "vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", model)
	b = m.queue.appendText(b, "vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", model)
	b = m.prefill.appendText(b, "vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.", model)
	b = m.lagRatio.appendText(b, simconfig.MetricLagRatio, "Completed requests by how much the simulator's lateness stretched their time to first token or decode against its model.", model)
	b = m.lagTTFT.appendText(b, simconfig.MetricTTFTLagRatio, "Completed requests by how much the simulator's lateness stretched their time to first token against its model.", model)
	b = m.lagDecode.appendText(b, simconfig.MetricDecodeLagRatio, "Completed requests by how much the simulator's lateness stretched their decode (first to last token) against its model.", model)
	b = m.lagE2E.appendText(b, simconfig.MetricE2ELagRatio, "Completed requests by how much the simulator's lateness stretched them (arrival to last token) against its model.", model)
	return b
}

// quoteLabel quotes a label value the way the text format wants: only
// backslash, double quote and newline are escaped.
func quoteLabel(v string) string {
	b := make([]byte, 0, len(v)+2)
	b = append(b, '"')
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '\\':
			b = append(b, '\\', '\\')
		case '"':
			b = append(b, '\\', '"')
		case '\n':
			b = append(b, '\\', 'n')
		default:
			b = append(b, c)
		}
	}
	return string(append(b, '"'))
}
