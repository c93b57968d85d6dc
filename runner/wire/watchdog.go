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

// watchdog enforces a request's timeouts with two timers. The first holds
// the first-token bound until the first token, then the idle bound: rather
// than re-arming a timer at every chunk (a lock on the timer heap per
// token), each token chunk stores its time and the timer, when it fires,
// re-arms itself for the idle time left. The second, the whole-request
// bound, never moves.
type watchdog struct {
	to      scenario.Timeouts
	answer  bool // the answer is not streamed: the first-token bound is the whole answer's
	cancel  context.CancelCauseFunc
	phase   atomic.Int32
	lastTok atomic.Int64 // offset of the latest token chunk from start, ns
	start   time.Time    // written before phase moves on (atomics order it)
	timer   *time.Timer
	whole   *time.Timer
}

// newWatchdog starts the timers; cancel ends the request with the timeout
// that struck. answer: the API answers in one piece (no token to wait for).
func newWatchdog(to scenario.Timeouts, answer bool, cancel context.CancelCauseFunc) *watchdog {
	w := &watchdog{to: to, answer: answer, cancel: cancel}
	w.timer = time.AfterFunc(to.FirstToken.D(), w.fire)
	w.whole = time.AfterFunc(to.Request.D(), func() {
		cancel(&timeoutError{"request timeout: not finished within " + to.Request.String()})
	})
	return w
}

func (w *watchdog) fire() {
	switch w.phase.Load() {
	case phaseFirstToken:
		if w.answer {
			w.cancel(&timeoutError{"answer timeout: no whole answer within " + w.to.FirstToken.String() + " (timeouts.first_token bounds an answer that is not streamed)"})
			return
		}
		w.cancel(&timeoutError{"first token timeout: no token within " + w.to.FirstToken.String()})
	case phaseDraining:
		w.cancel(&timeoutError{"no end of body after [DONE]"})
	default:
		idle := w.to.Idle.D()
		quiet := time.Since(w.start) - time.Duration(w.lastTok.Load())
		if quiet < idle {
			w.timer.Reset(idle - quiet)
			return
		}
		w.cancel(&timeoutError{"idle timeout: no token for " + idle.String()})
	}
}

// sent notes that the request went out at start; a second send (a re-send
// on a new connection) restarts the first-token bound with the clock.
func (w *watchdog) sent(start time.Time, again bool) {
	w.start = start
	if again {
		w.timer.Reset(w.to.FirstToken.D())
	}
}

// token notes a token chunk at now; the first switches to the idle bound.
func (w *watchdog) token(now time.Time, first bool) {
	w.lastTok.Store(int64(now.Sub(w.start)))
	if first {
		w.phase.Store(phaseStreaming)
		w.timer.Reset(w.to.Idle.D())
	}
}

// draining notes [DONE]: the rest of the body may take drainTimeout.
func (w *watchdog) draining() {
	w.phase.Store(phaseDraining)
	w.timer.Reset(drainTimeout)
}

func (w *watchdog) stop() {
	w.timer.Stop()
	w.whole.Stop()
}
