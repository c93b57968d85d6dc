package runner

import (
	"context"
	"time"
)

// An open-loop request is due at an instant its schedule fixes, and its
// dispatch lag (and its latency from the schedule) counts every microsecond
// it leaves late. Go's timers wake up to about a millisecond late on Linux,
// more under load: the runtime's poller sleeps in whole milliseconds. So the
// dispatcher waits in three steps:
//
//   - a Go timer until timerMargin before the due time: cancellable, free;
//   - a nanosleep until spinMargin before it: the kernel's high-resolution
//     timer, late by the thread's timer slack (50 µs by default) plus a
//     wake-up, and cheap (one system call);
//   - a busy loop on the monotonic clock for the rest: exact, and the only
//     part that costs CPU, about spinMargin less the nanosleep's lateness per
//     request.
//
// The busy loop does not yield (runtime.Gosched): every yield would be a
// sample of the runtime's scheduling latency, and thousands of them a second
// would hide a starved client's real latencies (client_sched_p90_ms). It
// holds its core for at most spinMargin, which other goroutines see as that
// much scheduling latency on a single core (other cores take their work).
const (
	timerMargin = 2 * time.Millisecond
	spinMargin  = 200 * time.Microsecond
)

// waitUntil returns at due, precisely, or false as soon as ctx is done
// (within timerMargin once the timer has fired).
func waitUntil(ctx context.Context, due time.Time) bool {
	if time.Until(due) > timerMargin {
		if !sleepUntil(ctx, due.Add(-timerMargin)) {
			return false
		}
	}
	if time.Until(due) > spinMargin {
		fineSleep(due.Add(-spinMargin))
	}
	for time.Now().Before(due) {
	}
	return ctx.Err() == nil
}

// waitFor is how the engine's open loops wait for a due time: precisely, or
// with Go's timer alone when Options.CoarseSends asks for the old behaviour.
func (e *Engine) waitFor(ctx context.Context, due time.Time) bool {
	if e.opts.CoarseSends {
		return sleepUntil(ctx, due)
	}
	return waitUntil(ctx, due)
}
