package aggregate

import (
	"fmt"
	"slices"
	"time"

	"github.com/runnerbench/runner/result"
)

// Client-bottleneck thresholds: when the runner itself is the limit, the
// latencies it reports are its own, not the server's.
const (
	// CPUBusyShare is the share of its usable cores at which the client counts as busy.
	CPUBusyShare  = 0.85
	lagP99LimitMs = 10.0
	// lagP99FloorMs: sends late by less than a millisecond are the
	// operating system's scheduling noise (a thread woken from idle starts
	// that late now and then, on a virtual machine above all), not a client
	// that cannot keep up; an idle client's sends land well inside it
	// (runner/clock/wait.go), so a fast server (TTFT of a few ms) does not get an
	// idle client flagged.
	lagP99FloorMs = 1.0
	// schedP90LimitMs bounds the Go runtime's scheduling latency p90 over a
	// level: a stream's reader that waits that long to run stamps its token
	// that late, which CPU share misses when other processes hold the cores.
	schedP90LimitMs = 10.0
	lagP99TTFTShare = 0.10 // of TTFT p50
)

// client sets the runner's own diagnostics (CPU share, scheduling latency)
// and flags the level when the runner itself may have set the pace: its CPU
// near the cores it may use, its goroutines waiting to run longer than
// schedLimitMs allows, or an open loop's requests leaving late (dispatch lag
// p99 above 10 ms or above 10% of the TTFT p50, whichever is smaller, and
// above 1 ms). A closed loop has no schedule to be late against: its
// "lag" is the time a worker took to build its next request after the
// last reply, which slows the offered load no more than the client's CPU
// and scheduling latency already say, so it never flags the client.
// Requests that waited for a max_concurrency slot were late by the plan's
// design, not the client's: with such waits the lag does not flag the
// client, and a note says how many waited. Arrivals a level's duration
// cut off before they were sent (the dispatcher behind its schedule at the
// end) are warned about with their count. A level merged from shards is
// judged shard by shard (partsClient). Each flag names its signal in
// ClientBottleneckBy.
func (b *builder) client() {
	p, rec := &b.p, b.rec
	if len(rec.Parts) > 0 {
		b.partsClient()
	} else if wall := rec.Wall(); wall > 0 {
		p.ClientCPUPercent = result.Ptr(result.Round(100*float64(rec.Client.CPUNs)/float64(wall), 1))
		p.ClientSchedP90Ms = rec.Client.SchedP90Ms
		b.judgeClient("", rec.Client, wall, p.DispatchLagP99Ms, rec.CapWaits)
	} else {
		return
	}
	if rec.CapWaits > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf(
			"%d of %d requests waited for a free max_concurrency slot (%d): the schedule offered more than the cap lets through, and the waits show as dispatch lag and in the latency from the schedule",
			rec.CapWaits, p.NRequests, b.spec.Concurrency))
	}
	if rec.Unsent > 0 {
		p.Warnings = append(p.Warnings, fmt.Sprintf(
			"%d of the %d arrivals its schedule held before the level's duration ended were never sent: the duration ran out while the dispatcher was behind its schedule, so the level offered less than its rate",
			rec.Unsent, int64(p.NRequests)+rec.Unsent))
	}
}

// judgeClient flags the level when one client (who: "" for the level's
// own, "shard i: " for a shard's) may have set the pace: its CPU share over
// its window, its scheduling latency, or its requests' dispatch lag p99.
func (b *builder) judgeClient(who string, c result.ClientLoad, wall time.Duration, lagP99 *float64, capWaits int64) {
	p := &b.p
	cpuPct := 100 * float64(c.CPUNs) / float64(wall)
	if s := c.SchedP90Ms; s != nil {
		if limit := SchedLimitMs(p); *s > limit {
			b.bottleneck(SignalSched, who+fmt.Sprintf(
				"client scheduling latency p90 %s exceeds %s: the runner's readers waited for a core (its own load or other processes'), so token times are late by up to that much", result.FormatMs(*s), result.FormatMs(limit)))
		}
	}
	if procs := max(1, c.Procs); cpuPct >= CPUBusyShare*100*float64(procs) {
		b.bottleneck(SignalCPU, who+fmt.Sprintf(
			"client CPU at %.0f%% of %d usable cores: the runner may be the bottleneck, latencies include its own delays", cpuPct, procs))
	}
	if lagP99 != nil && capWaits == 0 && b.spec.Rate != nil {
		limit := lagP99LimitMs
		if p.TTFTP50Ms != nil {
			limit = max(lagP99FloorMs, min(limit, lagP99TTFTShare**p.TTFTP50Ms))
		}
		if *lagP99 > limit {
			b.bottleneck(SignalLag, who+fmt.Sprintf(
				"dispatch lag p99 %s exceeds %s: requests left the client late against their schedule, the runner may be the bottleneck", result.FormatMs(*lagP99), result.FormatMs(limit)))
		}
	}
}

// The signals that flag a client bottleneck, as ClientBottleneckBy names
// them: the catalogue's metrics that measure them.
const (
	SignalSched = "client_sched_p90_ms"
	SignalCPU   = "client_cpu_percent"
	SignalLag   = "dispatch_lag_p99_ms"
)

// bottleneck flags the level, naming the signal that raised the flag once.
func (b *builder) bottleneck(signal, warning string) {
	b.p.ClientBottleneck = true
	if !slices.Contains(b.p.ClientBottleneckBy, signal) {
		b.p.ClientBottleneckBy = append(b.p.ClientBottleneckBy, signal)
	}
	b.p.Warnings = append(b.p.Warnings, warning)
}

// SchedLimitMs is how long (p90) the runner's goroutines may wait for a core
// before its token times are suspect: 10% of the level's ITL p50 (a reader
// that late skews single gaps by that share), at least 1 ms (the runtime's
// own jitter) and at most 10 ms.
func SchedLimitMs(p *result.Point) float64 {
	limit := schedP90LimitMs
	if p.ITLP50Ms != nil {
		limit = min(limit, max(1, 0.10**p.ITLP50Ms))
	}
	return limit
}
