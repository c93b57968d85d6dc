package aggregate

import (
	"math"
	"math/bits"
	"slices"
	"time"

	"github.com/runnerbench/runner/internal/hist"
	"github.com/runnerbench/runner/result"
)

// Per-request latencies a population tracks, as indexes into acc.lat.
const (
	latTTFT = iota
	latTPOT
	latE2E
	latTTFAT
	latLag
	latTTFTSched // from the scheduled send time (open loop)
	latE2ESched
	latOverhead // TTFT minus the server's own prompt time (llama.cpp timings)
	nLat
)

// acc accumulates one population of measured requests (a level, or one turn
// of a multi-turn level). Everything it keeps is order-free: counts and
// exact sums, the exact samples (sorted when read), or, past the exact
// bound, histograms of every sample. So the Point it gives depends only on
// which requests it saw, never on the order they finished in, which is what
// lets a report be recomputed from requests.jsonl and merged across shards.
type acc struct {
	limit int

	lat       [nLat]series
	perStream series // tokens / E2E s; mean only

	completed, failed int
	cancelled         int // given up on by the client (cancel_*): neither of the two
	good, mismatch    int
	capped            int   // natural-mode successes cut at max_tokens
	toolCalled        int   // successes whose response called a tool
	reconnects        int   // requests re-sent on a new connection
	outTotal          int64 // Σ output tokens of successes
	outN, outSum      int64 // successes with tokens > 0: count, Σ
	outSqHi, outSqLo  uint64
	inN, inSum        int64 // successes with reported input tokens
	batchN, batchSum  int64 // measured requests of a batch API: count, Σ texts carried

	// sends: how many measured requests left the client, first and last
	// send time (for an open loop's achieved rate).
	sent                int
	firstSend, lastSend time.Time

	// spans are the measured requests' [start, end) times, kept up to limit
	// requests for the exact peak in flight; spilled once there were more.
	spans   []span
	spilled bool

	firstErr    string
	firstErrKey order
	kinds       map[string]*kindStat

	lagShard map[int]*series // a merged level's dispatch lags by shard (nil: not kept)

	// usageRejected counts successes whose usage was not believed; usageWhy
	// is the first one's reason (first as for firstErr: order-free).
	usageRejected int
	usageWhy      string
	usageWhyKey   order
}

type kindStat struct {
	count  int
	sample string
	key    order
}

// order ranks failures for "the first failure": by dispatch order (the
// request's Seq, as the reference's failed[0] is), then by send time, then by
// nonce, so the answer depends on the requests only, not on which finished
// first (and is defined across the shards of a merged run).
type order struct {
	seq   int
	start int64
	nonce string
}

func keyOf(r *result.Request) order { return order{r.Seq, r.Start.UnixNano(), r.Nonce} }

func (a order) less(b order) bool {
	if a.seq != b.seq {
		return a.seq < b.seq
	}
	if a.start != b.start {
		return a.start < b.start
	}
	return a.nonce < b.nonce
}

func newAcc(limit int) *acc {
	a := &acc{limit: limit}
	for i := range a.lat {
		a.lat[i].limit = limit
	}
	a.perStream.limit = -1 // mean only
	return a
}

// add records one measured request.
func (a *acc) add(r *result.Request, spec *result.LevelSpec) {
	a.lat[latLag].add(r.DispatchLagMs)
	if a.lagShard != nil {
		a.addShardLag(r)
	}
	if r.Reconnected {
		a.reconnects++
	}
	if r.Inputs > 0 {
		a.batchN++
		a.batchSum += int64(r.Inputs)
	}
	if !r.Start.IsZero() {
		if a.sent == 0 || r.Start.Before(a.firstSend) {
			a.firstSend = r.Start
		}
		if a.sent == 0 || r.Start.After(a.lastSend) {
			a.lastSend = r.Start
		}
		a.sent++
		a.addSpan(r)
	}
	switch {
	case r.Cancelled:
		a.addCancelled(r)
	case r.OK:
		a.addOK(r, spec)
	default:
		a.addFailed(r)
	}
}

// addCancelled counts a request the client gave up on: its first token,
// when it had one, is a TTFT a user saw; its end is the client's, so it has
// no E2E, TPOT or throughput of the server's.
func (a *acc) addCancelled(r *result.Request) {
	a.cancelled++
	for i, v := range cancelledLatencies(r) {
		if !math.IsNaN(v) {
			a.lat[i].add(v)
		}
	}
}

func (a *acc) addFailed(r *result.Request) {
	a.failed++
	kind := r.ErrorKind
	if kind == "" {
		kind = "unknown"
	}
	key := keyOf(r)
	if a.firstErr == "" || key.less(a.firstErrKey) {
		a.firstErr, a.firstErrKey = errMessage(r), key
	}
	if a.kinds == nil {
		a.kinds = make(map[string]*kindStat)
	}
	k := a.kinds[kind]
	if k == nil {
		k = &kindStat{sample: r.Error, key: key}
		a.kinds[kind] = k
	} else if key.less(k.key) {
		k.sample, k.key = r.Error, key
	}
	k.count++
}

func (a *acc) addOK(r *result.Request, spec *result.LevelSpec) {
	a.completed++
	if r.UsageRejected != "" {
		a.usageRejected++
		if key := keyOf(r); a.usageWhy == "" || key.less(a.usageWhyKey) {
			a.usageWhy, a.usageWhyKey = r.UsageRejected, key
		}
	}
	for i, v := range okLatencies(r) {
		if !math.IsNaN(v) {
			a.lat[i].add(v)
		}
	}
	tok := int64(r.OutputTokens)
	a.outTotal += tok
	if tok > 0 {
		a.outN++
		a.outSum += tok
		hi, lo := bits.Mul64(uint64(tok), uint64(tok))
		var c uint64
		a.outSqLo, c = bits.Add64(a.outSqLo, lo, 0)
		a.outSqHi += hi + c
	}
	if v, ok := streamTPS(r); ok {
		a.perStream.add(v)
	}
	if r.InputTokens > 0 {
		a.inN++
		a.inSum += int64(r.InputTokens)
	}
	// ignore_eos is judged per request, against the max_tokens it asked for
	// (lengths may vary per request); a record without one is judged
	// against the level's nominal length.
	if spec.Pinned {
		want := r.MaxTokens
		if want <= 0 {
			want = spec.OutputTokens
		}
		if r.OutputTokens != want {
			a.mismatch++
		}
	}
	if !spec.Pinned && cutAtMaxTokens(r) {
		a.capped++
	}
	if r.ToolCalls > 0 {
		a.toolCalled++
	}
	if spec.SLO.Set() && spec.SLO.Met(r) {
		a.good++
	}
}

// ttfat is a success's time to its first answer token. The record carries
// one only when reasoning came first; a request whose first token was
// already an answer (a model that does not reason, or did not here) waited
// exactly its TTFT for it, so that is its TTFAT. One that reasoned and never
// answered (cut at max_tokens mid-thought) has none.
func ttfat(r *result.Request) *float64 {
	if r.TTFATMs != nil || r.ReasoningChunks > 0 {
		return r.TTFATMs
	}
	return r.TTFTMs
}

// cutAtMaxTokens reports whether the server stopped a success at its
// max_tokens: finish_reason "length", or, from a server that sends no finish
// reason, output that reached the max_tokens asked for.
func cutAtMaxTokens(r *result.Request) bool {
	if r.FinishReason != "" {
		return r.FinishReason == "length"
	}
	return r.MaxTokens > 0 && r.OutputTokens >= r.MaxTokens
}

// okLatencies is a successful request's value of each per-request latency,
// NaN where it has none (or an invalid one): the populations of the level's
// latency metrics, which its point (acc) and its samples (Samples) share.
// Dispatch lag is every measured request's, not only the successes'.
func okLatencies(r *result.Request) [nLat]float64 {
	var v [nLat]float64
	set := func(i int, p *float64) {
		v[i] = math.NaN()
		if p != nil && valid(*p) {
			v[i] = *p
		}
	}
	set(latTTFT, r.TTFTMs)
	set(latTPOT, r.TPOTMs)
	set(latTTFAT, ttfat(r))
	set(latE2E, &r.E2EMs)
	set(latTTFTSched, r.TTFTFromScheduleMs)
	set(latE2ESched, r.E2EFromScheduleMs)
	set(latLag, nil)
	set(latOverhead, nil)
	if r.TTFTMs != nil && r.ServerTimings != nil {
		set(latOverhead, result.Ptr(*r.TTFTMs-r.ServerTimings.PromptMs))
	}
	return v
}

// cancelledLatencies is a cancelled request's value of each per-request
// latency: its time to first token (from its send, and from the schedule)
// when it had one, NaN elsewhere. The latency populations (docs/metrics.md)
// say so: TTFT is over successes and the cancelled requests that had their
// first token, E2E and TPOT over successes only.
func cancelledLatencies(r *result.Request) [nLat]float64 {
	var v [nLat]float64
	for i := range v {
		v[i] = math.NaN()
	}
	if r.TTFTMs != nil && valid(*r.TTFTMs) {
		v[latTTFT] = *r.TTFTMs
	}
	if t := ttfat(r); t != nil && valid(*t) {
		v[latTTFAT] = *t
	}
	if r.TTFTFromScheduleMs != nil && valid(*r.TTFTFromScheduleMs) {
		v[latTTFTSched] = *r.TTFTFromScheduleMs
	}
	return v
}

// streamTPS is a successful request's output tokens per second of E2E, the
// sample of output_tps_per_stream; false for a request without tokens or
// time.
func streamTPS(r *result.Request) (float64, bool) {
	if r.OutputTokens <= 0 || r.E2EMs <= 0 {
		return 0, false
	}
	return float64(r.OutputTokens) / (r.E2EMs / 1000), true
}

// errMessage is the reference's error field: "kind: message".
func errMessage(r *result.Request) string {
	switch {
	case r.ErrorKind == "":
		if r.Error == "" {
			return "unknown"
		}
		return r.Error
	case r.Error == "":
		return r.ErrorKind
	}
	return r.ErrorKind + ": " + r.Error
}

// maxSample bounds a believable sample (1e12 ms is 31 years; 1e12 tokens/s
// is no stream). Beyond it a value is a bug upstream, and a few of them
// would overflow a sum into +Inf, which JSON cannot encode.
const maxSample = 1e12

// valid reports whether v is a sample worth counting.
func valid(v float64) bool { return v >= -maxSample && v <= maxSample } // false for NaN

// series is one per-request metric of a population: an exact sum and the
// largest value of every sample, and the samples themselves up to limit, past
// which every sample (the kept ones too) goes into a histogram instead. limit
// < 0 keeps no samples at all (a mean-only series).
type series struct {
	limit int
	vals  []float64
	spill *hist.Histogram // every sample, once there were more than limit
	n     int64
	sum   exactSum
	max   float64
}

// add counts v. Invalid values (which no clock produces) are dropped so they
// cannot poison a mean or a sort.
func (s *series) add(v float64) {
	if !valid(v) {
		return
	}
	if s.n == 0 || v > s.max {
		s.max = v
	}
	s.n++
	s.sum.add(v)
	switch {
	case s.limit < 0:
	case s.spill != nil:
		s.spill.RecordMs(v)
	case len(s.vals) < s.limit:
		s.vals = append(s.vals, v)
	default:
		// Past the bound: the histogram takes every sample from here on, the
		// kept ones included, so which samples were kept does not matter.
		s.spill = hist.New()
		for _, k := range s.vals {
			s.spill.RecordMs(k)
		}
		s.spill.RecordMs(v)
		s.vals = nil
	}
}

// summary is what a finished series reports.
type summary struct {
	n      int64
	exact  bool // percentiles come from exact samples
	sorted []float64
	h      *hist.Histogram // nil while exact
	mean   float64
	max    float64
}

// finish sorts a copy of the exact samples (the series stays usable).
func (s *series) finish() summary {
	out := summary{n: s.n, exact: s.spill == nil, h: s.spill, max: s.max}
	if s.n == 0 {
		return out
	}
	out.mean = s.sum.mean(s.n)
	if out.exact {
		out.sorted = slices.Clone(s.vals)
		slices.Sort(out.sorted)
	}
	return out
}

// quantile applies the percentile rule, exactly when it can.
func (s *summary) quantile(p float64) (float64, bool) {
	if s.n == 0 {
		return 0, false
	}
	if s.exact {
		return pct(s.sorted, p)
	}
	v, ok := s.h.Quantile(p)
	return result.Round(v, 2), ok
}

// histogram is every sample of the summary as a histogram (for charts).
func (s *summary) histogram() *hist.Histogram {
	if s.h != nil {
		return s.h
	}
	h := hist.New()
	for _, v := range s.sorted {
		h.RecordMs(v)
	}
	return h
}
