package wire

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/runnerbench/runner/internal/redact"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/runner/client"
)

// timeoutError is a request timeout; its message says which one struck.
type timeoutError struct{ msg string }

func (t *timeoutError) Error() string { return t.msg }

// interruptError ends a request that the run (not the server) stopped.
type interruptError struct{ msg string }

func (t *interruptError) Error() string { return t.msg }

var errInterrupted = &interruptError{"run interrupted"}

// gaveUpError ends a request the client gave up on (GiveUp): it is
// recorded as cancelled, not as a failure.
type gaveUpError struct{}

func (gaveUpError) Error() string { return "cancelled by the client" }

var errGaveUp error = gaveUpError{}

// cancelled is the kind byCause gives a request the client gave up on;
// Fail records it as cancelled.
const cancelled = "cancelled"

// Interrupt is the cause to cancel requests' context with when the run,
// not the server, stops them (a level's grace deadline, a stage that
// stops): each is recorded as interrupted, with why as its error.
func Interrupt(why string) error { return &interruptError{why} }

// Fail records rec as a failure of kind (result.Err*) with its message.
// A request the client gave up on (kind cancelled) is recorded as
// cancelled instead: neither ok nor failed.
func Fail(rec *result.Request, kind, msg string) {
	rec.OK = false
	if kind == cancelled {
		rec.Cancelled = true
		return
	}
	rec.ErrorKind = kind
	rec.Error = msg
}

// Ms is d in milliseconds, as records carry durations.
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// classifyTransport names a failure before any response arrived.
func classifyTransport(rctx, parent context.Context, err error, connect string) (kind, msg string) {
	if k, m, ok := byCause(rctx, parent); ok {
		return k, m
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return result.ErrTimeout, "connect timeout: no connection within " + connect
	}
	return result.ErrConnect, client.Excerpt([]byte(redact.Error(err).Error()))
}

// byCause reports a cancellation we caused (a timeout) or the run's interruption.
func byCause(rctx, parent context.Context) (kind, msg string, ok bool) {
	if rctx.Err() == nil {
		return "", "", false
	}
	cause := context.Cause(rctx)
	var te *timeoutError
	if errors.As(cause, &te) {
		return result.ErrTimeout, te.msg, true
	}
	var ie *interruptError
	if errors.As(cause, &ie) {
		return result.ErrInterrupted, ie.msg, true
	}
	if cause == errGaveUp && parent.Err() == nil {
		return cancelled, "", true
	}
	if parent.Err() != nil {
		return result.ErrInterrupted, errInterrupted.msg, true
	}
	return result.ErrInterrupted, client.Excerpt([]byte(cause.Error())), true
}
