package export

import (
	"sort"
	"sync"
	"time"

	"github.com/runnerbench/runner/internal/hist"
	"github.com/runnerbench/runner/result"
)

// delta is what the level's workers added since the exporter last took it:
// the hot path (Request, Gaps) writes here under a short lock, and the
// exporter swaps it for an empty one (a pointer swap), so computing
// quantiles never holds a lock a worker waits on.
type delta struct {
	completed, outTok int64
	failed            map[string]int64
	ttft, e2e, lag    *hist.Histogram
	itl               *hist.Histogram
	ttftSum, e2eSum   float64
	lagSum, itlSum    float64
	tokens            []uint64 // output tokens per success, in tokenBounds' buckets
	tokSum            float64
}

func newDelta() *delta {
	return &delta{
		failed: map[string]int64{}, ttft: hist.New(), e2e: hist.New(), lag: hist.New(), itl: hist.New(),
		tokens: make([]uint64, len(tokenBounds)+1),
	}
}

// reset empties d for reuse (the histograms are 184 KiB each).
func (d *delta) reset() {
	d.completed, d.outTok = 0, 0
	clear(d.failed)
	for _, h := range []*hist.Histogram{d.ttft, d.e2e, d.lag, d.itl} {
		h.Reset()
	}
	d.ttftSum, d.e2eSum, d.lagSum, d.itlSum, d.tokSum = 0, 0, 0, 0, 0
	clear(d.tokens)
}

// add folds o into d.
func (d *delta) add(o *delta) {
	d.completed += o.completed
	d.outTok += o.outTok
	for k, v := range o.failed {
		d.failed[k] += v
	}
	d.ttft.Merge(o.ttft)
	d.e2e.Merge(o.e2e)
	d.lag.Merge(o.lag)
	d.itl.Merge(o.itl)
	d.ttftSum += o.ttftSum
	d.e2eSum += o.e2eSum
	d.lagSum += o.lagSum
	d.itlSum += o.itlSum
	d.tokSum += o.tokSum
	for i, c := range o.tokens {
		d.tokens[i] += c
	}
}

// request records one finished measured request.
func (d *delta) request(r *result.Request) {
	d.lag.RecordMs(r.DispatchLagMs)
	d.lagSum += r.DispatchLagMs
	if !r.OK {
		d.failed[r.ErrorKind]++
		return
	}
	d.completed++
	d.outTok += int64(r.OutputTokens)
	d.e2e.RecordMs(r.E2EMs)
	d.e2eSum += r.E2EMs
	if r.TTFTMs != nil {
		d.ttft.RecordMs(*r.TTFTMs)
		d.ttftSum += *r.TTFTMs
	}
	d.tokens[sort.SearchFloat64s(tokenBounds, float64(r.OutputTokens))]++
	d.tokSum += float64(r.OutputTokens)
}

// gaps records inter-token gaps.
func (d *delta) gaps(g []time.Duration) {
	for _, x := range g {
		d.itl.RecordNs(int64(x))
		d.itlSum += float64(x) / 1e6
	}
}

// level is the level in progress, as the exporter's goroutine sees it.
type level struct {
	stage, label, endpoint string
	index                  int
	start                  time.Time
	labels                 []label
	sum                    *delta // everything so far
	started, inFlight      int64  // from the engine's last progress snapshot
}

// liveSeries are the level's running figures.
func (l *level) liveSeries() []series {
	d, lb := l.sum, l.labels
	out := []series{
		{name: liveStarted, labels: lb, value: float64(l.started)},
		{name: liveCompleted, labels: lb, value: float64(d.completed)},
		{name: liveOutTok, labels: lb, value: float64(d.outTok)},
		{name: liveInFlight, labels: lb, value: float64(l.inFlight)},
	}
	kinds := make([]string, 0, len(d.failed))
	for k := range d.failed {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		out = append(out, series{name: liveFailed, labels: with(lb, "kind", k), value: float64(d.failed[k])})
	}
	out = append(out,
		summaryOf(liveTTFT, lb, d.ttft, d.ttftSum),
		summaryOf(liveITL, lb, d.itl, d.itlSum),
		summaryOf(liveE2E, lb, d.e2e, d.e2eSum),
		summaryOf(liveLag, lb, d.lag, d.lagSum),
	)
	return append(out, l.histograms()...)
}

// histograms are the semantic conventions' histograms of the level so far.
func (l *level) histograms() []series {
	d, lb := l.sum, l.labels
	tok := series{name: semTokens, labels: with(lb, "gen_ai.token.type", "output"), bounds: tokenBounds,
		counts: append([]uint64(nil), d.tokens...), sum: d.tokSum}
	for _, c := range d.tokens {
		tok.count += c
	}
	return []series{
		histoOf(semTTFT, lb, d.ttft, d.ttftSum, durationBounds, 0.001),
		histoOf(semITL, lb, d.itl, d.itlSum, durationBounds, 0.001),
		histoOf(semE2E, lb, d.e2e, d.e2eSum, durationBounds, 0.001),
		tok,
	}
}

// hot is the part of the exporter the engine's workers write to.
type hot struct {
	mu  sync.Mutex
	cur *delta // nil between levels
	key levelKey
}

type levelKey struct {
	stage string
	level int
}

// swap puts next (nil: none) in place of the current delta and returns
// that, with the key of the level it belongs to. The lock is held for a
// pointer swap only.
func (h *hot) swap(next *delta) (*delta, levelKey) {
	h.mu.Lock()
	d, k := h.cur, h.key
	h.cur = next
	h.mu.Unlock()
	return d, k
}
