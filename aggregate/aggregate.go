// Package aggregate turns one load level's records into a result.Point: the
// reference load generator's metrics with its exact definitions and
// rounding, and the distributions, goodput and validity signals added beside
// them. It is a pure function of the level's records: its LevelRecord (the
// window, the inter-token gaps, the server's counters, the client's load)
// and its measured Requests, in any order. The live run, `runner report DIR`
// and `runner merge` all compute a level's metrics here, from the same
// records, and so get the same numbers.
//
// Memory per level is bounded: a latency's samples are kept exactly up to
// ExactLimit requests; past that, every sample of it goes into a histogram
// (an HdrHistogram of µs, ±0.05%: see internal/hist) and a warning says so,
// so a level of a million requests keeps memory flat. Means and counts stay
// exact either way, and inter-token gaps (too many to keep) are always a
// histogram, with an exact count, sum and max.
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
// reference's are); a success whose first token was already an answer (no
// reasoning came first) waited its TTFT for its first answer, so that is its
// TTFAT; max_tokens_hit_rate is over a natural-mode level's successes;
// max_in_flight over every measured request's [start, start + E2E); the TTFT overhead (TTFT minus the server's own
// timings.prompt_ms) over the successes whose stream carried server timings;
// dispatch lag is over every measured request; ITL is over every
// inter-token gap of the level; reconnects counts every measured request,
// failed or not, that was re-sent on a new connection. "error" is the first failure by
// dispatch order (the reference's failed[0]). Goodput is the share of all
// measured requests, failures included, that succeeded within every set SLO
// bound (inclusive; a request without a TPOT, i.e. one output token, is not
// judged on TPOT).
//
// Rounding of the added metrics: latencies 2 dp (ms), request_tps and
// achieved_rate 3 dp, mean token counts 2 dp, goodput and the server's
// prefix-cache hit rate and acceptance length 4 dp. spec_acceptance_rate is
// passed through unrounded, as the reference does.
package aggregate

import (
	"slices"
	"sync"

	"github.com/runnerbench/runner/result"
)

// DefaultExactLimit is how many requests of a level keep exact per-request
// latencies: 100k requests × 7 latencies ≈ 6 MB.
const DefaultExactLimit = 100_000

// PrefixHitWarnRate is the server prefix-cache hit rate over a measured window
// above which a level is warned about: every prompt leads with a unique
// nonce, so a high hit rate means the nonce did not defeat caching and the
// prefill numbers are flattered.
const PrefixHitWarnRate = 0.2

// Level collects one load level's measured requests. Add is safe for
// concurrent use; Point may be called at any time and as often as wanted.
type Level struct {
	spec  result.LevelSpec
	limit int

	mu  sync.Mutex
	all *acc
	// parts are the populations that report a point of their own beside
	// the level's (parts.go): each turn of a multi-turn level, each model
	// of a stage that spreads its requests over several, the probe
	// requests beside the load.
	parts []*levelPart
	// keep is the level's per-request samples, when kept.
	keep *Samples
	// sl keeps what the level's time slices need (nil: not sliced).
	sl *slicer
	// reads are the level's telemetry reads (at most maxLevelReads;
	// dropped counts the rest).
	reads   []*result.TelemetryScrape
	dropped int
}

// AddTelemetry records one telemetry read of the level (any target, any
// order). It is safe for concurrent use.
func (l *Level) AddTelemetry(r *result.TelemetryScrape) {
	if r == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.reads) >= maxLevelReads {
		l.dropped++
		return
	}
	l.reads = append(l.reads, compact(r))
}

// NewLevel starts a level; exactLimit bounds the requests whose latencies
// are kept exactly (0 means DefaultExactLimit).
func NewLevel(spec result.LevelSpec, exactLimit int) *Level {
	if exactLimit <= 0 {
		exactLimit = DefaultExactLimit
	}
	l := &Level{spec: spec, limit: exactLimit, all: newAcc(exactLimit), parts: partsOf(spec, exactLimit)}
	if spec.SliceNs > 0 {
		l.sl = &slicer{}
	}
	return l
}

// Add records one finished request. Warm-ups are not measured and are
// ignored, as are requests of other levels' records. A probe request
// counts toward the probe requests' point alone, never the level's.
func (l *Level) Add(r *result.Request) {
	if r == nil || r.Warmup {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !r.ProbeRequest {
		l.all.add(r, &l.spec)
		if l.sl != nil {
			l.sl.add(r)
		}
		if l.keep != nil {
			l.keep.add(r)
		}
	}
	for _, pt := range l.parts {
		if pt.has(r) {
			pt.add(r)
		}
	}
}

// KeepSamples makes the level keep its per-request samples (Samples), for
// comparing it with another run's; call it before the first Add.
func (l *Level) KeepSamples() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.keep = newSamples(l.spec)
	for _, pt := range l.parts {
		pt.keep = newSamples(pt.spec)
	}
}

// Samples are the level's per-request samples given its record, and one
// per part (a turn, a model, the probe requests), in the order of Parts;
// nil unless kept.
func (l *Level) Samples(rec *result.LevelRecord) (*Samples, []*Samples) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.keep == nil {
		return nil, nil
	}
	parts := make([]*Samples, len(l.parts))
	for i, pt := range l.parts {
		parts[i] = pt.keep.done(rec)
	}
	return l.keep.done(rec), parts
}

// Peek is the level's point and a copy of its samples so far (nil unless
// kept), given a record of it so far: what a look at a level in progress
// reads while its requests go on arriving.
func (l *Level) Peek(rec *result.LevelRecord) (result.Point, *Samples) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := builder{spec: &l.spec, rec: rec, a: l.all, limit: l.limit, reads: l.reads, dropped: l.dropped, sl: l.sl}
	p := b.point(true)
	if l.keep == nil {
		return p, nil
	}
	c := *l.keep
	c.rows = slices.Clone(l.keep.rows)
	return p, c.done(rec)
}

// Point is the level's metrics given its record. Its parts' points (per
// turn, per model, the probe requests') follow from Parts.
func (l *Level) Point(rec *result.LevelRecord) result.Point {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := builder{spec: &l.spec, rec: rec, a: l.all, limit: l.limit, reads: l.reads, dropped: l.dropped, sl: l.sl}
	return b.point(true)
}

// Parts is one point per part of the level: per turn of a multi-turn
// level, per model of a stage that spreads its requests over several, and
// the probe requests' (nil without any). They have no ITL distribution
// (token gaps are recorded once, for the level), no server counters (those
// are read around the whole level), and their throughputs are over the
// level's window.
func (l *Level) Parts(rec *result.LevelRecord) []result.Point {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []result.Point
	for _, pt := range l.parts {
		b := builder{spec: &pt.spec, rec: rec, a: pt.a, limit: l.limit, part: pt.key}
		out = append(out, b.point(false))
	}
	return out
}
