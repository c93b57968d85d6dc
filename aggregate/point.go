package aggregate

import (
	"fmt"
	"math"
	"math/big"
	"slices"
	"time"

	"github.com/runnerbench/runner/internal/hist"
	"github.com/runnerbench/runner/result"
)

// builder computes one Point from a population and the level's record, in
// steps: counts and rates, latencies, derived values, server counters and
// validity signals.
type builder struct {
	spec  *result.LevelSpec
	rec   *result.LevelRecord
	a     *acc
	limit int
	part  result.PartKey // which part of the level the point is (zero: the level)
	sl    *slicer        // the level's time slices (nil: not sliced)
	// reads are the level's telemetry reads; dropped counts those left out.
	reads   []*result.TelemetryScrape
	dropped int

	p   result.Point
	low []string // metrics drawn from too few samples
	sum [nLat]summary
}

// point builds the Point; whole is false for a per-turn point, which has no
// ITL, server counters or client diagnostics of its own.
func (b *builder) point(whole bool) result.Point {
	b.counts()
	b.latencies()
	b.derived()
	if whole {
		b.itl()
		b.server()
		b.serverLatency()
		b.telemetry(b.reads, b.dropped)
		b.ttftGap() // after telemetry: the waiting gauge says whether requests queued
		b.simLag()
		b.client()
		b.inFlight()
		b.shardWarnings()
		b.slicesOf()
	}
	b.validity(whole)
	b.p.LowConfidence = b.low
	return b.p
}

// counts sets the request counts, throughputs and first error.
func (b *builder) counts() {
	a, spec := b.a, b.spec
	n := a.completed + a.failed + a.cancelled
	wallS := b.rec.Wall().Seconds()
	p := &b.p
	*p = result.Point{
		Concurrency:   spec.Concurrency,
		Users:         spec.Users,
		Series:        spec.Series,
		InputTokens:   spec.InputTokens,
		OutputTokens:  spec.OutputTokens,
		NRequests:     n,
		Completed:     a.completed,
		Failed:        a.failed,
		Cancelled:     a.cancelled,
		Reconnects:    a.reconnects,
		DurationS:     result.Round(wallS, 3),
		NaturalStop:   !spec.Pinned,
		Turn:          b.part.Turn,
		Model:         b.part.Model,
		ProbeRequests: b.part.ProbeRequests,
		Probe:         spec.Probe,
		Replicates:    spec.Replicates,
		ErrorsByKind:  make(map[string]int, len(a.kinds)),
		Interrupted:   b.rec.Interrupted,
	}
	if st := b.rec.Stop; st != nil && b.part == (result.PartKey{}) {
		c := *st
		p.Stop = &c // what the run's until: rule decided, as it recorded it
	}
	if spec.Rate != nil {
		p.Rate = result.Ptr(*spec.Rate)
		// The rate requests actually left at: (n−1) gaps over the span from
		// the first send to the last. Not n over the window, which includes
		// the last requests' latency and would understate a short level.
		// Send times are compared on the wall clock, as a record read back
		// from requests.jsonl has them.
		span := time.Duration(a.lastSend.UnixNano() - a.firstSend.UnixNano()).Seconds()
		if a.sent >= 2 && span > 0 {
			p.AchievedRate = result.Ptr(result.Round(float64(a.sent-1)/span, 3))
		}
	}
	if wallS > 0 {
		p.OutputTPSTotal = result.Round(float64(a.outTotal)/wallS, 2)
		p.RequestTPS = result.Round(float64(a.completed)/wallS, 3)
	}
	if a.batchN > 0 {
		// A batch API (one that answers whole): its throughput is the input
		// it took, as the server counted it.
		p.MeanInputsPerRequest = result.Ptr(result.Round(float64(a.batchSum)/float64(a.batchN), 2))
		if wallS > 0 && a.inN > 0 {
			p.InputTPSTotal = result.Ptr(result.Round(float64(a.inSum)/wallS, 2))
		}
	}
	if a.firstErr != "" {
		p.Error = result.Ptr(a.firstErr)
	}
	if len(a.kinds) > 0 {
		p.ErrorSamples = make(map[string]string, len(a.kinds))
		for kind, k := range a.kinds {
			p.ErrorsByKind[kind] = k.count
			if k.sample != "" {
				p.ErrorSamples[kind] = k.sample
			}
		}
	}
	if a.perStream.n > 0 {
		p.OutputTPSPerStream = result.Round(a.perStream.sum.mean(a.perStream.n), 2)
	}
	if n > 0 {
		p.ErrorRate = result.Ptr(result.Round(float64(a.failed)/float64(n), 4))
	}
	if n > 0 && spec.Cancel != nil {
		p.CancelRate = result.Ptr(result.Round(float64(a.cancelled)/float64(n), 4))
	}
	if spec.SLO.Set() && n > 0 {
		p.Goodput = result.Ptr(result.Round(float64(a.good)/float64(n), 4))
	}
}

// latencies sets every percentile, mean and max of the per-request
// latencies.
func (b *builder) latencies() {
	for i := range b.sum {
		b.sum[i] = b.a.lat[i].finish()
	}
	p := &b.p
	fams := []struct {
		name            string
		i               int
		p50, p90, p95   **float64
		p99, mean, maxv **float64
	}{
		{"ttft", latTTFT, &p.TTFTP50Ms, &p.TTFTP90Ms, &p.TTFTP95Ms, &p.TTFTP99Ms, &p.TTFTMeanMs, &p.TTFTMaxMs},
		{"tpot", latTPOT, &p.TPOTP50Ms, &p.TPOTP90Ms, &p.TPOTP95Ms, &p.TPOTP99Ms, &p.TPOTMeanMs, &p.TPOTMaxMs},
		{"e2e", latE2E, &p.E2EP50Ms, &p.E2EP90Ms, &p.E2EP95Ms, &p.E2EP99Ms, &p.E2EMeanMs, &p.E2EMaxMs},
		{"ttfat", latTTFAT, &p.TTFATP50Ms, &p.TTFATP90Ms, &p.TTFATP95Ms, &p.TTFATP99Ms, &p.TTFATMeanMs, &p.TTFATMaxMs},
		{"ttft_from_schedule", latTTFTSched, &p.TTFTSchedP50Ms, &p.TTFTSchedP90Ms, &p.TTFTSchedP95Ms, &p.TTFTSchedP99Ms, &p.TTFTSchedMeanMs, &p.TTFTSchedMaxMs},
		{"e2e_from_schedule", latE2ESched, &p.E2ESchedP50Ms, &p.E2ESchedP90Ms, &p.E2ESchedP95Ms, &p.E2ESchedP99Ms, &p.E2ESchedMeanMs, &p.E2ESchedMaxMs},
	}
	for _, f := range fams {
		s := &b.sum[f.i]
		*f.p50 = b.quant(f.name+"_p50_ms", s, 0.50)
		*f.p90 = b.quant(f.name+"_p90_ms", s, 0.90)
		*f.p95 = b.quant(f.name+"_p95_ms", s, 0.95)
		*f.p99 = b.quant(f.name+"_p99_ms", s, 0.99)
		*f.mean, *f.maxv = mean(s), maxOf(s)
	}
	lag := &b.sum[latLag]
	p.DispatchLagP99Ms = b.quant("dispatch_lag_p99_ms", lag, 0.99)
	p.DispatchLagMaxMs = maxOf(lag)
	overhead := &b.sum[latOverhead]
	p.TTFTOverheadP50Ms = b.quant("ttft_overhead_p50_ms", overhead, 0.50)
	p.TTFTOverheadP95Ms = b.quant("ttft_overhead_p95_ms", overhead, 0.95)
	p.TTFTHist = chart(b.sum[latTTFT].histogram())
}

// quant is the q-quantile of s, noting low confidence under name.
func (b *builder) quant(name string, s *summary, q float64) *float64 {
	v, ok := s.quantile(q)
	if !ok {
		return nil
	}
	if s.n < int64(hist.MinSamples(q)) {
		b.low = append(b.low, name)
	}
	return result.Ptr(v)
}

func mean(s *summary) *float64 {
	if s.n == 0 {
		return nil
	}
	return result.Ptr(result.Round(s.mean, 2))
}

func maxOf(s *summary) *float64 {
	if s.n == 0 {
		return nil
	}
	return result.Ptr(result.Round(s.max, 2))
}

// derived sets the values computed from others: prefill rate, mean token
// counts and the natural-mode length spread.
func (b *builder) derived() {
	a, p := b.a, &b.p
	// prefill_tps: mean reported input tokens (the requested count when the
	// server reports none) over mean TTFT in seconds, as the reference does.
	if ttft := &b.sum[latTTFT]; ttft.n > 0 {
		meanIn := float64(b.spec.InputTokens)
		if a.inN > 0 {
			meanIn = float64(a.inSum) / float64(a.inN) // both exact: one correctly rounded division
		}
		if meanTTFTs := ttft.mean / 1000; meanTTFTs > 0 {
			if v := meanIn / meanTTFTs; !math.IsInf(v, 0) {
				p.PrefillTPS = result.Ptr(result.Round(v, 1))
			}
		}
	}
	if a.inN > 0 {
		p.MeanInputTokens = result.Ptr(result.Round(float64(a.inSum)/float64(a.inN), 2))
	}
	if a.completed > 0 {
		p.MeanOutputTokens = result.Ptr(result.Round(float64(a.outTotal)/float64(a.completed), 2))
	}
	if !b.spec.Pinned && a.completed > 0 {
		p.MaxTokensHitRate = result.Ptr(result.Round(float64(a.capped)/float64(a.completed), 4))
	}
	if b.spec.Tools && a.completed > 0 {
		p.ToolCallRate = result.Ptr(result.Round(float64(a.toolCalled)/float64(a.completed), 4))
	}
	if !b.spec.Pinned && a.outN > 1 {
		sq := new(big.Int).SetUint64(a.outSqHi)
		sq.Lsh(sq, 64).Or(sq, new(big.Int).SetUint64(a.outSqLo))
		if sd, ok := sampleStdev(a.outN, a.outSum, sq); ok {
			p.OutputTokenStdev = result.Ptr(result.Round(sd, 2))
		}
	}
}

// itl sets the inter-token latencies, always from the level's histogram (3
// significant digits): there are output-tokens-many samples per request, too
// many to keep. The count, mean and max are exact.
func (b *builder) itl() {
	t, p := &b.rec.ITL, &b.p
	if t.Count == 0 {
		return
	}
	s := summary{n: t.Count, h: t.Hist, mean: float64(t.SumNs) / float64(t.Count) / 1e6, max: float64(t.MaxNs) / 1e6}
	p.ITLP50Ms = b.quant("itl_p50_ms", &s, 0.50)
	p.ITLP90Ms = b.quant("itl_p90_ms", &s, 0.90)
	p.ITLP95Ms = b.quant("itl_p95_ms", &s, 0.95)
	p.ITLP99Ms = b.quant("itl_p99_ms", &s, 0.99)
	p.ITLMeanMs, p.ITLMaxMs = mean(&s), maxOf(&s)
	p.ITLHist = chart(t.Hist)
}

// server sets the metrics read from the server's counters over the window.
func (b *builder) server() {
	d, p := b.rec.Server, &b.p
	if d == nil {
		return
	}
	p.SpecAcceptanceRate = d.AcceptanceRate()
	if n := d.SpecDraftTokens; n != nil && *n > 0 {
		p.SpecDraftTokens = result.Ptr(int64(*n))
	}
	if v := d.AcceptanceLength(); v != nil {
		p.SpecAcceptanceLength = result.Ptr(result.Round(*v, 4))
	}
	if v := d.PrefixCacheHitRate(); v != nil {
		p.PrefixCacheHitRate = result.Ptr(result.Round(*v, 4))
		if *v > PrefixHitWarnRate && !b.spec.ExpectPrefixHits {
			p.Warnings = append(p.Warnings, fmt.Sprintf(
				"the server's prefix cache hit rate over this level was %.0f%%: the per-request nonce did not defeat prefix caching, so TTFT and prefill_tps are flattered",
				*v*100))
		}
	}
	if len(d.Counters) > 0 {
		p.ServerCounters = make(map[string]float64, len(d.Counters))
		for k, v := range d.Counters {
			p.ServerCounters[k] = v
		}
	}
}

// validity sets the signals that say whether the numbers can be trusted:
// ignore_eos not honoured and usage that cannot be true (warnings: token
// counts are then wrong or estimated), percentiles
// estimated from histograms (a note: within 0.05%, not wrong).
func (b *builder) validity(whole bool) {
	a, p := b.a, &b.p
	if whole {
		p.OutputLenMismatch = a.mismatch
		p.UsageRejected = a.usageRejected
	}
	if whole && a.usageRejected > 0 {
		p.Warnings = append(p.Warnings, fmt.Sprintf(
			"%d of %d successful requests reported usage that cannot be true (first: %s): their usage was ignored, and their token counts are the stream's chunks",
			a.usageRejected, a.completed, a.usageWhy))
	}
	if whole && b.spec.Pinned && a.mismatch > 0 {
		p.Warnings = append(p.Warnings, fmt.Sprintf(
			"%d of %d successful requests returned a number of output tokens other than their max_tokens: the engine did not honour ignore_eos, so tokens/s is not comparable across levels or runs",
			a.mismatch, a.completed))
	}
	if slices.ContainsFunc(b.sum[:], func(s summary) bool { return !s.exact }) {
		p.Notes = append(p.Notes, fmt.Sprintf(
			"latency percentiles of this level's %d requests are estimated from a histogram (within 0.05%%): exact values are kept for the first %d requests only",
			p.NRequests, b.limit))
	}
}
