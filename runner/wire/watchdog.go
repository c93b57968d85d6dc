package wire

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/runnerbench/runner/scenario"
)

// phases of a request, for its one watchdog timer.
const (
	phaseFirstToken = iota
	phaseStreaming
	phaseDraining
)

// drainTimeout bounds reading past [DONE] to the end of the body.
const drainTimeout = 2 * time.Second

// watchdog enforces a request's timeouts with one timer. It holds the
// first-token bound until the first token, then the idle bound, then the
// drain bound, and under all of them the whole-request bound: the timer is
// set for whichever ends first. Rather than re-arming the timer at every
// chunk (a lock on the timer heap per token), each token chunk stores its
// time and the timer, when it fires, re-arms itself for what is left. Every
// time the timer reads is an offset from born, which never changes, so it
// reads nothing the request's goroutine writes but atomics.
type watchdog struct {
	to     scenario.Timeouts
	answer bool // the answer is not streamed: the first-token bound is the whole answer's
	cancel context.CancelCauseFunc
	born   time.Time // the watchdog's start: the whole-request bound counts from here
	phase  atomic.Int32
	// Offsets from born, ns: when the first-token bound ends (moved by a
	// re-send), when the drain bound ends, and the latest token chunk.
	firstBy, drainBy, lastTok atomic.Int64
	// start is the request's send (the stream's clock), the request's
	// goroutine's alone.
	start time.Time
	timer *time.Timer
}

// newWatchdog starts the timer; cancel ends the request with the timeout
// that struck. answer: the API answers in one piece (no token to wait for).
func newWatchdog(to scenario.Timeouts, answer bool, cancel context.CancelCauseFunc) *watchdog {
	w := &watchdog{to: to, answer: answer, cancel: cancel, born: time.Now()}
	first := to.FirstToken.D()
	w.firstBy.Store(int64(first))
	w.timer = time.AfterFunc(min(first, to.Request.D()), w.fire)
	return w
}

// fire ends the request if a bound has passed, else re-arms the timer for
// the nearest bound left.
func (w *watchdog) fire() {
	el := time.Since(w.born)
	whole := w.to.Request.D()
	if el >= whole {
		w.cancel(&timeoutError{"request timeout: not finished within " + w.to.Request.String()})
		return
	}
	var left time.Duration
	switch w.phase.Load() {
	case phaseFirstToken:
		if left = time.Duration(w.firstBy.Load()) - el; left <= 0 {
			if w.answer {
				w.cancel(&timeoutError{"answer timeout: no whole answer within " + w.to.FirstToken.String() + " (timeouts.first_token bounds an answer that is not streamed)"})
				return
			}
			w.cancel(&timeoutError{"first token timeout: no token within " + w.to.FirstToken.String()})
			return
		}
	case phaseDraining:
		if left = time.Duration(w.drainBy.Load()) - el; left <= 0 {
			w.cancel(&timeoutError{"no end of body after [DONE]"})
			return
		}
	default:
		idle := w.to.Idle.D()
		if left = idle - (el - time.Duration(w.lastTok.Load())); left <= 0 {
			w.cancel(&timeoutError{"idle timeout: no token for " + idle.String()})
			return
		}
	}
	w.timer.Reset(min(left, whole-el))
}

// arm sets the timer for d from now, or for the whole-request bound if
// that ends sooner.
func (w *watchdog) arm(now time.Time, d time.Duration) {
	w.timer.Reset(min(d, w.to.Request.D()-now.Sub(w.born)))
}

// sent notes that the request went out at start; a second send (a re-send
// on a new connection) restarts the first-token bound with the clock.
func (w *watchdog) sent(start time.Time, again bool) {
	w.start = start
	if again {
		first := w.to.FirstToken.D()
		w.firstBy.Store(int64(start.Sub(w.born) + first))
		w.arm(start, first)
	}
}

// token notes a token chunk at now; the first switches to the idle bound.
func (w *watchdog) token(now time.Time, first bool) {
	w.lastTok.Store(int64(now.Sub(w.born)))
	if first {
		w.phase.Store(phaseStreaming)
		w.arm(now, w.to.Idle.D())
	}
}

// draining notes [DONE]: the rest of the body may take drainTimeout.
func (w *watchdog) draining() {
	now := time.Now()
	w.drainBy.Store(int64(now.Sub(w.born) + drainTimeout))
	w.phase.Store(phaseDraining)
	w.arm(now, drainTimeout)
}

func (w *watchdog) stop() { w.timer.Stop() }
