package aggregate

import (
	"fmt"
	"math"
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
	b.stamps()
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
	b.judgeReadLag(who, c.Stamps)
	if s := c.SchedP90Ms; s != nil && userTimed(c.Stamps) > 0 {
		// The scheduling latency stands in for a read lag the kernel's times
		// did not measure: it judges the chunks the runner's clock timed.
		if limit := SchedLimitMs(p); *s > limit {
			which := "token times are"
			if share := userTimed(c.Stamps); share < 1 {
				which = fmt.Sprintf("the %s of token chunks its own clock timed are", percent(share))
			}
			b.bottleneck(SignalSched, who+fmt.Sprintf(
				"client scheduling latency p90 %s exceeds %s: the runner's readers waited for a core (its own load or other processes'), so %s late by up to that much", result.FormatMs(*s), result.FormatMs(limit), which))
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

// judgeReadLag flags the level when the client's measured read lag (the
// kernel-timed chunks') p99 passes ReadLagLimitMs and some token chunk
// shared its read with a later one: a read that late takes in every token
// that arrived meanwhile, and the kernel's one time for the read is the last
// one's arrival, so the others are stamped late. A lag that stamped nothing
// late (no ITL to be later than, or none shared) is no verdict on the
// numbers: the kernel's times do not hold it.
func (b *builder) judgeReadLag(who string, st *result.Stamps) {
	if st == nil || st.Kernel == 0 || st.Lag.Count == 0 || st.Shared == 0 || b.p.ITLP50Ms == nil {
		return
	}
	p99 := lagQuantile(&st.Lag, 0.99)
	limit := ReadLagLimitMs(&b.p)
	if p99 <= limit {
		return
	}
	b.bottleneck(SignalReadLag, who+fmt.Sprintf(
		"client read lag p99 %s exceeds %s (the ITL p50, at least 1 ms): the runner read token chunks that long after the kernel received them, and a read that late takes in every token that arrived meanwhile, each but the last stamped with the last one's arrival (%s of the kernel-timed token chunks were)",
		result.FormatMs(p99), result.FormatMs(limit), percent(float64(st.Shared)/float64(st.Kernel))))
}

// ReadLagLimitMs is how late (p99) the runner may read the kernel-timed
// token chunks before their times are suspect: the level's ITL p50 (a read
// later than the gap to the next token takes both in, and the first is
// stamped with the second's arrival), at least 1 ms; 0 without an ITL.
func ReadLagLimitMs(p *result.Point) float64 {
	if p.ITLP50Ms == nil {
		return 0
	}
	return max(1, *p.ITLP50Ms)
}

// percent prints a share as a percentage with one decimal ("12.5%").
func percent(share float64) string { return fmt.Sprintf("%.1f%%", 100*share) }

// userTimed is the share of token chunks the runner's own clock timed (1
// without stamps: a record from before kernel times).
func userTimed(st *result.Stamps) float64 {
	if st == nil || st.Kernel+st.User == 0 {
		return 1
	}
	return float64(st.User) / float64(st.Kernel+st.User)
}

// lagQuantile is quantile q of the read lags in ms, from their histogram.
func lagQuantile(t *result.ITL, q float64) float64 {
	s := summary{n: t.Count, h: t.Hist, mean: float64(t.SumNs) / float64(t.Count) / 1e6, max: float64(t.MaxNs) / 1e6}
	v, _ := s.quantile(q)
	return v
}

// stamps sets how the level's token chunks were timed and the client's read
// lag (a level merged from shards: every shard's chunks together), and
// warns when the wall clock, on which the kernel's times are, moved against
// the monotonic clock over the window.
func (b *builder) stamps() {
	st := levelStamps(b.rec)
	if st == nil || st.Kernel+st.User == 0 {
		return
	}
	p := &b.p
	share := float64(st.Kernel) / float64(st.Kernel+st.User)
	src := "mixed"
	switch st.Kernel {
	case 0:
		src = "user"
	case st.Kernel + st.User:
		src = "kernel"
	}
	p.TimestampSource, p.TimestampKernelShare = &src, result.Ptr(result.Round(share, 4))
	if st.Lag.Count > 0 {
		p.ClientReadLagP50Ms = result.Ptr(result.Round(lagQuantile(&st.Lag, 0.50), 3))
		p.ClientReadLagP99Ms = result.Ptr(result.Round(lagQuantile(&st.Lag, 0.99), 3))
		p.ClientReadLagMaxMs = result.Ptr(result.Round(float64(st.Lag.MaxNs)/1e6, 3))
	}
	if st.Kernel > 0 {
		b.clockStep()
	}
}

// levelStamps is the record's stamps, or its shards' merged (nil: none).
func levelStamps(rec *result.LevelRecord) *result.Stamps {
	if len(rec.Parts) == 0 {
		return rec.Client.Stamps
	}
	var m *result.Stamps
	for _, part := range rec.Parts {
		if part.Client.Stamps != nil {
			if m == nil {
				m = &result.Stamps{}
			}
			m.Merge(part.Client.Stamps)
		}
	}
	return m
}

// Clock steps: the wall clock may be slewed by up to 500 ppm (NTP's
// limit) without a step; beyond that plus a millisecond, it was stepped.
const (
	slewPPM     = 500
	clockStepMs = 1.0
)

// clockStep warns when the wall clock moved against the monotonic clock
// over a window (its wall-clock span against its monotonic length) by more
// than slewing explains. Each kernel time is placed on the monotonic clock
// against a wall-clock reading taken as its chunk is decoded, so a step
// shifts only the chunks whose read spanned it.
func (b *builder) clockStep() {
	ws := b.rec.Windows
	if len(ws) == 0 {
		ws = []result.Window{{Start: b.rec.Start, End: b.rec.End, WallNs: b.rec.WallNs}}
	}
	for _, w := range ws {
		if w.WallNs <= 0 || w.Start.IsZero() {
			continue
		}
		moved := float64(w.End.UnixNano()-w.Start.UnixNano()-w.WallNs) / 1e6
		if math.Abs(moved) > clockStepMs+float64(w.WallNs)/1e6*slewPPM/1e6 {
			b.p.Warnings = append(b.p.Warnings, fmt.Sprintf(
				"the wall clock moved %+.1f ms against the monotonic clock during the window (a clock step): the kernel's receive times are on the wall clock, so the token chunks read across the step may be off by up to that much", moved))
			return
		}
	}
}

// The signals that flag a client bottleneck, as ClientBottleneckBy names
// them: the catalogue's metrics that measure them.
const (
	SignalReadLag = "client_read_lag_p99_ms"
	SignalSched   = "client_sched_p90_ms"
	SignalCPU     = "client_cpu_percent"
	SignalLag     = "dispatch_lag_p99_ms"
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
