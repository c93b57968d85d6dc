package diagnosis

import (
	"math"
	"slices"

	"github.com/runnerbench/runner/aggregate"

	"github.com/runnerbench/runner/result"
)

// Growth is how much a latency must grow over the lightest load's to count
// as growing in a cause's rule (decode-bound: ITL; prefill-bound: TTFT).
const Growth = 1.5

// causeAt is what limits the server at l, by the rules in order: first
// those whose evidence no clock can bend (the KV cache, failures, a full
// batch: counters and gauges), then the measuring host, where its signals
// could have made the latencies that left the factor, then decode and
// prefill, read from those latencies; without the engine's gauges the rest
// is no_telemetry, with them not_determined.
func (g *diag) causeAt(l *level) string {
	switch {
	case g.kvFull(l):
		return result.CauseKVCacheFull
	case g.errorsRose(l):
		return failureCause(l)
	case g.batchFull(l):
		return result.CauseBatchFull
	case (l.runner && g.runnerExplains(l)) || (l.sim && g.simExplains(l)):
		return result.CauseClientBound
	case g.decodeBound(l):
		return result.CauseDecodeBound
	case g.prefillBound(l):
		return result.CausePrefillBound
	case !gauges(l):
		return result.CauseNoTelemetry
	}
	return result.CauseNotDetermined
}

// simStretch is the built-in simulator's stretch that bears on metric: its
// time to first token's, its decode's, or the whole request's.
var simStretch = map[string]string{
	"ttft_p95_ms": "sim_ttft_stretch_max", "itl_p50_ms": "sim_decode_stretch_max", "tpot_p50_ms": "sim_decode_stretch_max",
	"e2e_p95_ms": "sim_e2e_stretch_max", "output_tps_per_stream": "sim_e2e_stretch_max",
}

// simExplains reports whether the built-in simulator's own lateness at l
// could have made every metric by which l leaves the knee's factor: each
// grew by no more than Factor times 1 + its stretch (a stretch past the
// histogram's bound explains anything; a rise of failures, nothing).
func (g *diag) simExplains(l *level) bool {
	for _, m := range g.broken(l) {
		name, ok := simStretch[m]
		if !ok {
			return false
		}
		s, ok := l.get(name)
		if !ok {
			continue
		}
		b, _ := g.base.get(m)
		v, _ := l.get(m)
		ratio := v / b
		if m == "output_tps_per_stream" {
			ratio = b / v
		}
		if ratio > Factor*(1+s) {
			return false
		}
	}
	return true
}

// runnerExplains reports whether the runner's own signals at l could have
// made every metric by which l leaves the knee's factor: a client near its
// cores, or open-loop sends late against their schedule (bursts the server
// then sees), could make anything; a scheduling latency alone delays a
// token's read by about its p90, so each latency (per-user speed: E2E p95)
// must have grown by no more than StepGaps times it. A rise of failures is
// never the client's.
func (g *diag) runnerExplains(l *level) bool {
	for _, s := range l.clientBy {
		if s == aggregate.SignalCPU || s == aggregate.SignalLag || s == "client_bottleneck" {
			return !slices.Contains(g.broken(l), "error_rate")
		}
	}
	sched, _ := l.get(aggregate.SignalSched)
	for _, m := range g.broken(l) {
		if m == "error_rate" {
			return false
		}
		if m == "output_tps_per_stream" {
			m = "e2e_p95_ms"
		}
		b, okB := g.base.get(m)
		v, ok := l.get(m)
		if ok && okB && v-b > StepGaps*sched {
			return false
		}
	}
	return true
}

// determined reports whether cause names a limit (not "not determined").
func determined(cause string) bool {
	return cause != result.CauseNotDetermined && cause != result.CauseNoTelemetry
}

// gauges reports whether l has the engine's running and waiting gauges.
func gauges(l *level) bool {
	_, r := l.get("server_running_max")
	_, w := l.get("server_waiting_p95")
	return r && w
}

// inFlight is the requests l held in flight at most (its concurrency when
// the peak is unknown).
func inFlight(l *level) float64 {
	if v, ok := l.get("max_in_flight"); ok {
		return v
	}
	v, _ := l.get("concurrency")
	return v
}

// failureCause is rate_limited when HTTP 429 is at least half of l's
// failures, failing otherwise.
func failureCause(l *level) string {
	failed, _ := l.get("failed")
	if failed > 0 && float64(l.errs[http429]) >= failed/2 {
		return result.CauseRateLimited
	}
	return result.CauseFailing
}

const http429 = "http_429"

// kvShare is one request's share of the KV cache, from the lightest load:
// its usage max over the requests it held in flight (0 when unknown).
func (g *diag) kvShare() float64 {
	u, ok := g.base.get("kv_cache_usage_max")
	if n := inFlight(g.base); ok && n >= 1 {
		return u / n
	}
	return 0
}

// kvFull: l preempted requests where the lightest load preempted none, or
// its KV cache had less than one request's room left (and KVRoomMin) while
// requests failed more than at the lightest load or waited behind a full
// batch (batchFull): the cache is what holds the batch there.
func (g *diag) kvFull(l *level) bool {
	pre, _ := l.get("server_preemptions")
	preB, _ := g.base.get("server_preemptions")
	if pre > 0 && preB <= 0 {
		return true
	}
	u, ok := l.get("kv_cache_usage_max")
	room := result.Round(1-u, 4)
	if !ok || room >= max(KVRoomMin, result.Round(g.kvShare(), 4)) {
		return false
	}
	return g.errorsRose(l) || g.batchFull(l)
}

// ceiling is the most requests the engine was seen running at any level.
func (g *diag) ceiling() float64 {
	c := 0.0
	for _, l := range g.ls {
		if v, ok := l.get("server_running_max"); ok {
			c = max(c, v)
		}
	}
	return c
}

// tolerance is how far below the ceiling a running count still counts as
// at it: 2% of it, whole requests (none below 50: an engine at its slot
// limit shows exactly that many running).
func tolerance(c float64) float64 { return math.Floor(0.02 * c) }

// nearCeiling reports whether l ran as many requests as any level did.
func (g *diag) nearCeiling(l *level) bool {
	r, ok := l.get("server_running_max")
	c := g.ceiling()
	return ok && c >= 1 && r >= c-tolerance(c)
}

// batchFull: requests wait at l (waiting p95 at least WaitingMin) while it
// runs as many as any level did, fewer than it holds in flight, and
// another level that differs from it by at least a quarter of the load
// (and one request) ran as many too: the batch does not grow with the load.
func (g *diag) batchFull(l *level) bool {
	r, _ := l.get("server_running_max")
	if w, ok := l.get("server_waiting_p95"); !ok || w < WaitingMin || !g.nearCeiling(l) || inFlight(l) <= r {
		return false
	}
	return slices.ContainsFunc(g.ls, func(x *level) bool {
		lo, hi := min(inFlight(x), inFlight(l)), max(inFlight(x), inFlight(l))
		return x != l && g.nearCeiling(x) && hi >= max(1.25*lo, lo+1)
	})
}

// decodeBound: ITL p50 at l is at least Growth times the lightest load's
// and ITLNoiseMs above it, and the batch grew (running mean, else the
// requests in flight).
func (g *diag) decodeBound(l *level) bool {
	b, okB := g.base.get(g.itl)
	v, ok := l.get(g.itl)
	if g.itl == "" || !ok || !okB || v < Growth*b || v-b < ITLNoiseMs {
		return false
	}
	if rb, ok := g.base.get("server_running_mean"); ok {
		if r, ok := l.get("server_running_mean"); ok {
			return r > rb
		}
	}
	return inFlight(l) > inFlight(g.base)
}

// itlHolds reports whether ITL p50 at l is within ITLHold times the
// lightest load's, or ITLNoiseMs of it.
func (g *diag) itlHolds(l *level) bool {
	b, okB := g.base.get(g.itl)
	v, ok := l.get(g.itl)
	return g.itl != "" && ok && okB && (v <= ITLHold*b || v <= b+ITLNoiseMs)
}

// prefillBound: TTFT p95 at l is at least Growth times the lightest
// load's while ITL holds, and the engine's gauges show the batch still
// growing at l (its running max above the level below's): the requests'
// first tokens wait for prefill, not for a place in the batch. Where the
// server has its own TTFT histogram, its mean must have grown Growth times
// too: a first token late by what the server never saw is the network's or
// the client's, not prefill.
func (g *diag) prefillBound(l *level) bool {
	i := slices.Index(g.ls, l)
	if g.lat != "ttft_p95_ms" || i < 1 || !gauges(l) || !g.itlHolds(l) {
		return false
	}
	if b, ok := g.base.get("server_ttft_mean_ms"); ok && b > 0 {
		if v, ok := l.get("server_ttft_mean_ms"); !ok || v < Growth*b {
			return false
		}
	}
	below, okB := g.ls[i-1].get("server_running_max")
	r, _ := l.get("server_running_max")
	return g.grew(l, g.lat, Growth) && okB && r > below
}

// from is the lowest level above after from which cause holds at every
// level up to the highest.
func (g *diag) from(cause string, after int) int {
	at := len(g.ls) - 1
	for i := len(g.ls) - 1; i > after; i-- {
		if g.causeAt(g.ls[i]) != cause {
			break
		}
		at = i
	}
	return at
}
