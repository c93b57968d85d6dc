package aggregate

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/runnerbench/runner/result"
)

// span is one measured request's time on the wire, [start, end) in Unix ns.
type span struct{ start, end int64 }

// addSpan keeps r's span for the exact peak in flight, up to limit requests.
// Past that the spans are dropped (16 bytes a request would grow without
// bound over a long level) and the peak comes from the level record's live
// count instead.
func (a *acc) addSpan(r *result.Request) {
	if a.spilled {
		return
	}
	if len(a.spans) >= a.limit {
		a.spans, a.spilled = nil, true
		return
	}
	start := r.Start.UnixNano()
	end := start
	if valid(r.E2EMs) && r.E2EMs > 0 {
		end += int64(math.Round(r.E2EMs * 1e6))
	}
	a.spans = append(a.spans, span{start, end})
}

// peakInFlight is the most spans open at once. Spans are half-open: one that
// ends at the instant another starts does not overlap it. It sorts a copy of
// the events, so the answer depends only on which requests were added, never
// on their order.
func peakInFlight(spans []span) int {
	type event struct {
		t     int64
		delta int
	}
	ev := make([]event, 0, 2*len(spans))
	for _, s := range spans {
		if s.end > s.start {
			ev = append(ev, event{s.start, +1}, event{s.end, -1})
		}
	}
	// At equal times ends (-1) come before starts (+1).
	slices.SortFunc(ev, func(a, b event) int { return cmp.Or(cmp.Compare(a.t, b.t), cmp.Compare(a.delta, b.delta)) })
	n, peak := 0, 0
	for _, e := range ev {
		n += e.delta
		peak = max(peak, n)
	}
	return peak
}

// inFlight sets max_in_flight, exactly from the requests' spans while the
// level kept them, else from the record's live count (null for records
// without send times), and warns when a
// closed-loop level never held the concurrency it is labelled with: its
// numbers then describe a lighter load than its label says (too few requests
// for the level, a ramp longer than the requests, a client that could not
// put the wave on the wire in time).
func (b *builder) inFlight() {
	a, p := b.a, &b.p
	switch {
	case !a.spilled && len(a.spans) > 0:
		p.MaxInFlight = result.Ptr(peakInFlight(a.spans))
	case b.rec.MaxInFlight > 0:
		p.MaxInFlight = result.Ptr(b.rec.MaxInFlight)
	default:
		return
	}
	conc := b.spec.Concurrency
	if b.rec.Shard != nil && b.rec.ShardConcurrency > 0 {
		conc = b.rec.ShardConcurrency // one shard's record holds its own streams
	}
	// An interrupted level, or one whose every request failed, already says
	// its numbers are partial or absent.
	// A users level holds no concurrency: its users think between requests;
	// a series' concurrency is its peak, not what it held throughout.
	if b.spec.Rate != nil || b.spec.Users > 0 || b.spec.Series != nil || conc <= 0 || a.completed == 0 || b.rec.Interrupted || *p.MaxInFlight >= conc {
		return
	}
	p.Warnings = append(p.Warnings, fmt.Sprintf(
		"at most %d requests were in flight at once, fewer than the %d this level is labelled with: its numbers describe a lighter load (send at least %d requests a level, shorten the ramp, or check the client)",
		*p.MaxInFlight, conc, conc))
}
