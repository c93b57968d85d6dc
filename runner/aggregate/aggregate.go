// Package aggregate turns one load level's request records into a
// result.Point: the reference load generator's metrics with its exact
// definitions and rounding, and the distributions, goodput and validity
// signals added beside them.
//
// Each worker goroutine records into its own Shard (no locks on the hot
// path); Level.Finish merges the shards once the level is over. Memory per
// level is bounded: inter-token latencies go into a histogram (an
// HdrHistogram of µs with 3 significant digits, one per metric per level,
// never per worker; see hist.go), and the
// per-request latencies are kept exactly only for the first ExactLimit
// requests, after which percentiles are estimated from a histogram (and a
// warning says so), so a level of a million requests keeps memory flat.
//
// Percentile rule (the reference's pct): sort the samples and take index
// min(n−1, round_half_even(p·(n−1))), rounded to 2 dp with result.Round.
//
// Low confidence: a percentile drawn from fewer samples than it needs to mean
// much is still reported, and its metric name is added to
// Point.LowConfidence. A p50 needs 5 samples, a p90 10, a p95 20 and a p99
// 100: below those counts the chosen sample is one of the few largest, so the
// number says little about the tail it names.
//
// Populations: TTFT, TPOT, TTFAT and E2E are over successful requests (as the
// reference's are); the TTFT overhead (TTFT minus the server's own
// timings.prompt_ms) over the successes whose stream carried server timings;
// dispatch lag is over every measured request; ITL is over every inter-token
// gap the shards were given. reconnects counts every measured request,
// failed or not, that was re-sent on a new connection. "error" is the first failure
// by dispatch order (the reference's failed[0]), then completion order.
// Goodput is the share of all measured requests, failures included, that
// succeeded within every set SLO bound (inclusive; a request without a TPOT,
// i.e. one output token, is not judged on TPOT).
//
// Rounding of the added metrics: latencies 2 dp (ms), request_tps and
// achieved_rate 3 dp, mean token counts 2 dp, goodput and the server's
// prefix-cache hit rate and acceptance length 4 dp. spec_acceptance_rate is
// passed through unrounded, as the reference does.
package aggregate

import (
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/runner/servermetrics"
)

// DefaultExactLimit is how many requests of a level keep exact per-request
// latencies when Spec.ExactLimit is zero: 100k requests × 5 latencies ≈ 4 MB.
const DefaultExactLimit = 100_000

// PrefixHitWarnRate is the server prefix-cache hit rate over a measured window
// above which a level is warned about: every prompt leads with a unique
// nonce, so a high hit rate means the nonce did not defeat caching and the
// prefill numbers are flattered.
const PrefixHitWarnRate = 0.2

// SLO is a per-request service-level objective in ms; a zero bound is unset.
type SLO struct{ TTFTMs, TPOTMs, E2EMs float64 }

func (s *SLO) set() bool { return s != nil && (s.TTFTMs > 0 || s.TPOTMs > 0 || s.E2EMs > 0) }

// met reports whether a successful request meets every set bound. A request
// without a TTFT fails a TTFT bound; one without a TPOT (a single output
// token, so no decode phase) is not judged on TPOT.
func (s *SLO) met(r *result.Request) bool {
	if s.TTFTMs > 0 && (r.TTFTMs == nil || *r.TTFTMs > s.TTFTMs) {
		return false
	}
	if s.TPOTMs > 0 && r.TPOTMs != nil && *r.TPOTMs > s.TPOTMs {
		return false
	}
	if s.E2EMs > 0 && r.E2EMs > s.E2EMs {
		return false
	}
	return true
}

// Spec describes the level being measured: what was requested (nominal).
type Spec struct {
	Concurrency  int
	Rate         *float64 // target req/s; nil for closed loop
	InputTokens  int      // requested
	OutputTokens int      // requested (max_tokens)
	// Pinned is ignore_eos mode: every request should emit OutputTokens.
	Pinned bool
	// SLO is the stage's per-request objective; nil (or all zero) = no goodput.
	SLO  *SLO
	Turn int
	// ExpectPrefixHits is set when the stage measures prefix caching on
	// purpose (shared prefixes), which silences the high-hit-rate warning.
	ExpectPrefixHits bool
	// ExactLimit caps the requests whose latencies are kept exactly; 0 means
	// DefaultExactLimit.
	ExactLimit int
}

// itlBatch is how many ITL samples a shard buffers before it folds them into
// the level's histogram under the level's lock: one lock per 256 tokens, and
// a shard's buffers stay a few KiB however many tokens there are.
const itlBatch = 256

// Level collects one load level. Create it with NewLevel, give each worker a
// Shard, and call Finish once every worker has stopped.
type Level struct {
	spec  Spec
	limit int64
	seq   atomic.Int64 // completion order of Add calls across shards

	mu     sync.Mutex
	shards []*Shard
	itl    *hist
	itlSum float64 // Neumaier-compensated sum of ITL samples
	itlCmp float64
	itlMax float64
	// spilled holds, per latency, the samples past the exact bound; a
	// histogram is allocated only when a level gets that far.
	spilled [nLat]*hist
}

// Per-request latencies a level tracks, as indexes into Shard.lat.
const (
	latTTFT = iota
	latTPOT
	latE2E
	latTTFAT
	latLag
	latOverhead // TTFT minus the server's own prompt time
	nLat
)

// spillBatch is how many past-the-bound requests a shard buffers before it
// folds them into the level's histograms under the lock.
const spillBatch = 32

// NewLevel starts a level.
func NewLevel(spec Spec) *Level {
	limit := int64(spec.ExactLimit)
	if limit <= 0 {
		limit = DefaultExactLimit
	}
	return &Level{spec: spec, limit: limit, itl: newHist(), itlMax: math.Inf(-1)}
}

// Shard records one worker's requests. A Shard is not safe for concurrent
// use; each worker goroutine gets its own from NewShard.
type Shard struct {
	l    *Level
	itlN int
	itl  [itlBatch]float64

	lat       [nLat]series
	perStream series // tokens / E2E s, mean only
	spill     [spillBatch][nLat]float64
	spillN    int

	completed, failed int
	good, mismatch    int
	reconnects        int
	outTotal          int64 // Σ output tokens of successes
	outN, outSum      int64 // successes with tokens > 0: count, Σ
	outSqHi, outSqLo  uint64
	inN, inSum        int64 // successes with reported input tokens

	firstErr    string
	firstErrKey order
	kinds       map[string]*kindStat
}

type kindStat struct {
	count  int
	sample string
	key    order
}

// order ranks failures for "the first failure": by dispatch order (the
// request's Seq, as the reference's failed[0] is), then by completion order,
// so the answer does not depend on which worker finished first.
type order struct{ dispatch, done int64 }

func (a order) less(b order) bool {
	return a.dispatch < b.dispatch || a.dispatch == b.dispatch && a.done < b.done
}

// NewShard returns a new shard of the level for one worker goroutine.
func (l *Level) NewShard() *Shard {
	s := &Shard{l: l}
	l.mu.Lock()
	l.shards = append(l.shards, s)
	l.mu.Unlock()
	return s
}

// AddITL records one inter-token latency in ms. It does not allocate and takes
// the level's lock once per itlBatch samples.
func (s *Shard) AddITL(ms float64) {
	s.itl[s.itlN] = ms
	s.itlN++
	if s.itlN == itlBatch {
		s.flushITL()
	}
}

func (s *Shard) flushITL() {
	if s.itlN == 0 {
		return
	}
	l := s.l
	l.mu.Lock()
	for _, v := range s.itl[:s.itlN] {
		if !valid(v) {
			continue
		}
		v = max(v, 0)
		l.itl.record(v)
		l.itlSum, l.itlCmp = neumaier(l.itlSum, l.itlCmp, v)
		l.itlMax = max(l.itlMax, v)
	}
	l.mu.Unlock()
	s.itlN = 0
}

// Add records one finished measured request (not warm-ups).
func (s *Shard) Add(r *result.Request) {
	if r == nil {
		return
	}
	seq := s.l.seq.Add(1)
	keep := seq <= s.l.limit
	var rec [nLat]float64
	for i := range rec {
		rec[i] = math.NaN()
	}
	if s.lat[latLag].add(r.DispatchLagMs, keep) {
		rec[latLag] = r.DispatchLagMs
	}
	if r.Reconnected {
		s.reconnects++
	}
	if r.OK {
		s.addOK(r, keep, &rec)
	} else {
		s.addFailed(r, seq)
	}
	if !keep {
		s.spill[s.spillN] = rec
		s.spillN++
		if s.spillN == spillBatch {
			s.flushSpill()
		}
	}
}

func (s *Shard) addFailed(r *result.Request, seq int64) {
	s.failed++
	kind := r.ErrorKind
	if kind == "" {
		kind = "unknown"
	}
	key := order{int64(r.Seq), seq}
	if s.firstErr == "" || key.less(s.firstErrKey) {
		s.firstErr, s.firstErrKey = errMessage(r), key
	}
	if s.kinds == nil {
		s.kinds = make(map[string]*kindStat)
	}
	k := s.kinds[kind]
	if k == nil {
		k = &kindStat{sample: r.Error, key: key}
		s.kinds[kind] = k
	} else if key.less(k.key) {
		k.sample, k.key = r.Error, key
	}
	k.count++
}

func (s *Shard) addOK(r *result.Request, keep bool, rec *[nLat]float64) {
	s.completed++
	opt := func(i int, v *float64) {
		if v != nil && s.lat[i].add(*v, keep) {
			rec[i] = *v
		}
	}
	opt(latTTFT, r.TTFTMs)
	opt(latTPOT, r.TPOTMs)
	opt(latTTFAT, r.TTFATMs)
	opt(latE2E, &r.E2EMs)
	if r.TTFTMs != nil && r.ServerTimings != nil {
		v := *r.TTFTMs - r.ServerTimings.PromptMs
		opt(latOverhead, &v)
	}
	tok := int64(r.OutputTokens)
	s.outTotal += tok
	if tok > 0 {
		s.outN++
		s.outSum += tok
		hi, lo := bits.Mul64(uint64(tok), uint64(tok))
		var c uint64
		s.outSqLo, c = bits.Add64(s.outSqLo, lo, 0)
		s.outSqHi += hi + c
		if r.E2EMs > 0 {
			s.perStream.add(float64(tok)/(r.E2EMs/1000), keep)
		}
	}
	if r.InputTokens > 0 {
		s.inN++
		s.inSum += int64(r.InputTokens)
	}
	if s.l.spec.Pinned && r.OutputTokens != s.l.spec.OutputTokens {
		s.mismatch++
	}
	if s.l.spec.SLO.set() && s.l.spec.SLO.met(r) {
		s.good++
	}
}

// flushSpill folds the buffered past-the-bound samples into the level's
// histograms.
func (s *Shard) flushSpill() {
	if s.spillN == 0 {
		return
	}
	l := s.l
	l.mu.Lock()
	for _, rec := range s.spill[:s.spillN] {
		for i, v := range rec {
			if math.IsNaN(v) {
				continue
			}
			if l.spilled[i] == nil {
				l.spilled[i] = newHist()
			}
			l.spilled[i].record(v)
		}
	}
	l.mu.Unlock()
	s.spillN = 0
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

// Finish merges the shards into the level's Point. wall is the measured
// window (first dispatch to last completion); server is the delta of the
// server's counters over that window, or nil. Call it after every worker has
// stopped using its Shard; it may be called again and gives the same Point.
func (l *Level) Finish(wall time.Duration, server *servermetrics.Delta) result.Point {
	l.mu.Lock()
	shards := append([]*Shard(nil), l.shards...)
	l.mu.Unlock()
	for _, s := range shards {
		s.flushITL()
		s.flushSpill()
	}

	var (
		m                  Shard
		kinds              = map[string]*kindStat{}
		outSqHi, outSqLo   uint64
		firstErr, firstKey = "", order{math.MaxInt64, math.MaxInt64}
	)
	for _, s := range shards {
		for i := range m.lat {
			m.lat[i].merge(&s.lat[i])
		}
		m.perStream.merge(&s.perStream)
		m.completed += s.completed
		m.failed += s.failed
		m.good += s.good
		m.mismatch += s.mismatch
		m.reconnects += s.reconnects
		m.outTotal += s.outTotal
		m.outN += s.outN
		m.outSum += s.outSum
		var c uint64
		outSqLo, c = bits.Add64(outSqLo, s.outSqLo, 0)
		outSqHi += s.outSqHi + c
		m.inN += s.inN
		m.inSum += s.inSum
		if s.firstErr != "" && s.firstErrKey.less(firstKey) {
			firstErr, firstKey = s.firstErr, s.firstErrKey
		}
		for kind, k := range s.kinds {
			if t := kinds[kind]; t == nil {
				kinds[kind] = &kindStat{count: k.count, sample: k.sample, key: k.key}
			} else {
				t.count += k.count
				if k.key.less(t.key) {
					t.sample, t.key = k.sample, k.key
				}
			}
		}
	}

	spec := l.spec
	n := m.completed + m.failed
	wallS := wall.Seconds()
	p := result.Point{
		Concurrency:  spec.Concurrency,
		InputTokens:  spec.InputTokens,
		OutputTokens: spec.OutputTokens,
		NRequests:    n,
		Completed:    m.completed,
		Failed:       m.failed,
		Reconnects:   m.reconnects,
		DurationS:    result.Round(wallS, 3),
		NaturalStop:  !spec.Pinned,
		Turn:         spec.Turn,
		ErrorsByKind: make(map[string]int, len(kinds)),
	}
	if spec.Rate != nil {
		p.Rate = result.Ptr(*spec.Rate)
	}
	if wallS > 0 {
		p.OutputTPSTotal = result.Round(float64(m.outTotal)/wallS, 2)
		p.RequestTPS = result.Round(float64(m.completed)/wallS, 3)
		if spec.Rate != nil {
			p.AchievedRate = result.Ptr(result.Round(float64(n)/wallS, 3))
		}
	}
	if firstErr != "" {
		p.Error = result.Ptr(firstErr)
	}
	if len(kinds) > 0 {
		p.ErrorSamples = make(map[string]string, len(kinds))
		for kind, k := range kinds {
			p.ErrorsByKind[kind] = k.count
			if k.sample != "" {
				p.ErrorSamples[kind] = k.sample
			}
		}
	}

	ps := m.perStream.finish(false, true, nil)
	if ps.n > 0 {
		p.OutputTPSPerStream = result.Round(ps.mean, 2)
	}

	l.mu.Lock()
	spilled := l.spilled
	l.mu.Unlock()
	ttft := m.lat[latTTFT].finish(true, false, spilled[latTTFT])
	tpot := m.lat[latTPOT].finish(false, false, spilled[latTPOT])
	e2e := m.lat[latE2E].finish(false, false, spilled[latE2E])
	ttfat := m.lat[latTTFAT].finish(false, false, spilled[latTTFAT])
	lag := m.lat[latLag].finish(false, false, spilled[latLag])
	overhead := m.lat[latOverhead].finish(false, false, spilled[latOverhead])

	var low []string
	quant := func(name string, s *summary, q float64) *float64 {
		v, ok := s.quantile(q)
		if !ok {
			return nil
		}
		if s.n < minSamples(q) {
			low = append(low, name)
		}
		return result.Ptr(v)
	}
	mean := func(s *summary) *float64 {
		if s.n == 0 {
			return nil
		}
		return result.Ptr(result.Round(s.mean, 2))
	}
	maxOf := func(s *summary) *float64 {
		if s.n == 0 {
			return nil
		}
		return result.Ptr(result.Round(s.max, 2))
	}

	p.TTFTP50Ms = quant("ttft_p50_ms", &ttft, 0.50)
	p.TTFTP90Ms = quant("ttft_p90_ms", &ttft, 0.90)
	p.TTFTP95Ms = quant("ttft_p95_ms", &ttft, 0.95)
	p.TTFTP99Ms = quant("ttft_p99_ms", &ttft, 0.99)
	p.TTFTMeanMs, p.TTFTMaxMs = mean(&ttft), maxOf(&ttft)
	p.TTFTHist = ttft.h.chart()

	p.TPOTP50Ms = quant("tpot_p50_ms", &tpot, 0.50)
	p.TPOTP90Ms = quant("tpot_p90_ms", &tpot, 0.90)
	p.TPOTP99Ms = quant("tpot_p99_ms", &tpot, 0.99)
	p.TPOTMeanMs, p.TPOTMaxMs = mean(&tpot), maxOf(&tpot)

	p.E2EP50Ms = quant("e2e_p50_ms", &e2e, 0.50)
	p.E2EP90Ms = quant("e2e_p90_ms", &e2e, 0.90)
	p.E2EP95Ms = quant("e2e_p95_ms", &e2e, 0.95)
	p.E2EP99Ms = quant("e2e_p99_ms", &e2e, 0.99)
	p.E2EMeanMs, p.E2EMaxMs = mean(&e2e), maxOf(&e2e)

	p.TTFATP50Ms = quant("ttfat_p50_ms", &ttfat, 0.50)
	p.TTFATP90Ms = quant("ttfat_p90_ms", &ttfat, 0.90)
	p.TTFATP99Ms = quant("ttfat_p99_ms", &ttfat, 0.99)
	p.TTFATMeanMs, p.TTFATMaxMs = mean(&ttfat), maxOf(&ttfat)

	p.DispatchLagP99Ms = quant("dispatch_lag_p99_ms", &lag, 0.99)
	p.DispatchLagMaxMs = maxOf(&lag)

	p.TTFTOverheadP50Ms = quant("ttft_overhead_p50_ms", &overhead, 0.50)
	p.TTFTOverheadP95Ms = quant("ttft_overhead_p95_ms", &overhead, 0.95)

	// ITL always comes from the histogram (3 significant digits): there are
	// output-tokens-many samples per request, too many to keep.
	l.mu.Lock()
	itl := summary{n: l.itl.total(), h: l.itl, max: l.itlMax}
	if itl.n > 0 {
		itl.mean = (l.itlSum + l.itlCmp) / float64(itl.n)
	}
	p.ITLP50Ms = quant("itl_p50_ms", &itl, 0.50)
	p.ITLP90Ms = quant("itl_p90_ms", &itl, 0.90)
	p.ITLP99Ms = quant("itl_p99_ms", &itl, 0.99)
	p.ITLMeanMs, p.ITLMaxMs = mean(&itl), maxOf(&itl)
	p.ITLHist = l.itl.chart()
	l.mu.Unlock()

	// prefill_tps: mean reported input tokens (the requested count when the
	// server reports none) over mean TTFT in seconds, as the reference does.
	if ttft.n > 0 {
		meanIn := float64(spec.InputTokens)
		if m.inN > 0 {
			meanIn = float64(m.inSum) / float64(m.inN) // both exact: one correctly rounded division
		}
		if meanTTFTs := ttft.mean / 1000; meanTTFTs > 0 {
			if v := meanIn / meanTTFTs; !math.IsInf(v, 0) {
				p.PrefillTPS = result.Ptr(result.Round(v, 1))
			}
		}
	}
	if m.inN > 0 {
		p.MeanInputTokens = result.Ptr(result.Round(float64(m.inSum)/float64(m.inN), 2))
	}
	if m.completed > 0 {
		p.MeanOutputTokens = result.Ptr(result.Round(float64(m.outTotal)/float64(m.completed), 2))
	}
	if !spec.Pinned && m.outN > 1 {
		sq := new(big.Int).SetUint64(outSqHi)
		sq.Lsh(sq, 64).Or(sq, new(big.Int).SetUint64(outSqLo))
		if sd, ok := sampleStdev(m.outN, m.outSum, sq); ok {
			p.OutputTokenStdev = result.Ptr(result.Round(sd, 2))
		}
	}
	if spec.SLO.set() && n > 0 {
		p.Goodput = result.Ptr(result.Round(float64(m.good)/float64(n), 4))
	}

	p.OutputLenMismatch = m.mismatch
	if spec.Pinned && m.mismatch > 0 {
		p.Warnings = append(p.Warnings, fmt.Sprintf(
			"%d of %d successful requests returned a number of output tokens other than the %d requested: the engine did not honour ignore_eos, so tokens/s is not comparable across levels or runs",
			m.mismatch, m.completed, spec.OutputTokens))
	}
	if !ttft.exact || !tpot.exact || !e2e.exact || !ttfat.exact || !lag.exact || !overhead.exact {
		p.Warnings = append(p.Warnings, fmt.Sprintf(
			"latency percentiles of this level's %d requests are estimated from a histogram (within 0.05%%): exact values are kept for the first %d requests only",
			n, l.limit))
	}

	if server != nil {
		p.SpecAcceptanceRate = server.AcceptanceRate()
		if d := server.SpecDraftTokens; d != nil && *d > 0 {
			p.SpecDraftTokens = result.Ptr(int64(*d))
		}
		if v := server.AcceptanceLength(); v != nil {
			p.SpecAcceptanceLength = result.Ptr(result.Round(*v, 4))
		}
		if v := server.PrefixCacheHitRate(); v != nil {
			p.PrefixCacheHitRate = result.Ptr(result.Round(*v, 4))
			if *v > PrefixHitWarnRate && !spec.ExpectPrefixHits {
				p.Warnings = append(p.Warnings, fmt.Sprintf(
					"the server's prefix cache hit rate over this level was %.0f%%: the per-request nonce did not defeat prefix caching, so TTFT and prefill_tps are flattered",
					*v*100))
			}
		}
		if len(server.Counters) > 0 {
			p.ServerCounters = make(map[string]float64, len(server.Counters))
			for k, v := range server.Counters {
				p.ServerCounters[k] = v
			}
		}
	}
	p.LowConfidence = low
	return p
}

// minSamples is the low-confidence rule documented on the package.
func minSamples(q float64) int64 {
	switch {
	case q <= 0.5:
		return 5
	case q <= 0.9:
		return 10
	case q <= 0.95:
		return 20
	}
	return 100
}
