package sim

import (
	"math"
	"strconv"
	"sync"
	"sync/atomic"
)

// ttftBuckets are vLLM's bucket bounds for vllm:time_to_first_token_seconds.
var ttftBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,
	0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}

// metrics are the engine's counters, exposed in vLLM's names so that a client
// scraping a real vLLM and the simulator reads the same series.
type metrics struct {
	running, waiting            atomic.Int64
	promptTokens, genTokens     atomic.Int64
	cacheQueries, cacheHits     atomic.Int64
	specDrafts, specDraftTokens atomic.Int64
	specAccepted                atomic.Int64
	success                     [4]atomic.Int64 // by finishReason index
	ttftMu                      sync.Mutex
	ttftCounts                  []uint64 // per bucket, not cumulative; last is +Inf
	ttftSum                     float64
	ttftCount                   uint64
}

const (
	finishStop = iota
	finishLength
	finishAbort
	finishError
)

var finishNames = [...]string{"stop", "length", "abort", "error"}

func newMetrics() *metrics {
	return &metrics{ttftCounts: make([]uint64, len(ttftBuckets)+1)}
}

func (m *metrics) observeTTFT(v float64) {
	i := 0
	for i < len(ttftBuckets) && v > ttftBuckets[i] {
		i++
	}
	m.ttftMu.Lock()
	m.ttftCounts[i]++
	m.ttftSum += v
	m.ttftCount++
	m.ttftMu.Unlock()
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
	gauge("vllm:num_requests_running", "Number of requests in model execution batches.", m.running.Load())
	gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", m.waiting.Load())
	counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.", m.promptTokens.Load())
	counter("vllm:generation_tokens_total", "Number of generation tokens processed.", m.genTokens.Load())
	counter("vllm:prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens.", m.cacheQueries.Load())
	counter("vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.", m.cacheHits.Load())
	counter("vllm:spec_decode_num_drafts_total", "Number of spec decoding drafts.", m.specDrafts.Load())
	counter("vllm:spec_decode_num_draft_tokens_total", "Number of draft tokens.", m.specDraftTokens.Load())
	counter("vllm:spec_decode_num_accepted_tokens_total", "Number of accepted tokens.", m.specAccepted.Load())

	const succ = "vllm:request_success_total"
	b = append(b, "# HELP "+succ+" Count of successfully processed requests.\n# TYPE "+succ+" counter\n"...)
	for i, name := range finishNames[:2] {
		b = append(b, succ+`{finished_reason="`+name+`",model_name=`+quoteLabel(model)+`} `...)
		b = strconv.AppendInt(b, m.success[i].Load(), 10)
		b = append(b, '\n')
	}

	const h = "vllm:time_to_first_token_seconds"
	b = append(b, "# HELP "+h+" Histogram of time to first token in seconds.\n# TYPE "+h+" histogram\n"...)
	m.ttftMu.Lock()
	var cum uint64
	for i, le := range ttftBuckets {
		cum += m.ttftCounts[i]
		b = append(b, h+`_bucket{le="`...)
		b = strconv.AppendFloat(b, le, 'g', -1, 64)
		b = append(b, `",model_name=`+quoteLabel(model)+`} `...)
		b = strconv.AppendUint(b, cum, 10)
		b = append(b, '\n')
	}
	cum += m.ttftCounts[len(ttftBuckets)]
	b = append(b, h+`_bucket{le="+Inf",model_name=`+quoteLabel(model)+`} `...)
	b = strconv.AppendUint(b, cum, 10)
	b = append(b, "\n"+h+"_sum"+lbl+" "...)
	sum := m.ttftSum
	if math.IsNaN(sum) {
		sum = 0
	}
	b = strconv.AppendFloat(b, sum, 'g', -1, 64)
	b = append(b, "\n"+h+"_count"+lbl+" "...)
	b = strconv.AppendUint(b, m.ttftCount, 10)
	b = append(b, '\n')
	m.ttftMu.Unlock()
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
