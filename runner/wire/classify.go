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

// Interrupt is the cause to cancel requests' context with when the run,
// not the server, stops them (a level's grace deadline, a stage that
// stops): each is recorded as interrupted, with why as its error.
func Interrupt(why string) error { return &interruptError{why} }

// Fail records rec as a failure of kind (result.Err*) with its message.
func Fail(rec *result.Request, kind, msg string) {
	rec.OK = false
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
	if parent.Err() != nil {
		return result.ErrInterrupted, errInterrupted.msg, true
	}
	return result.ErrInterrupted, client.Excerpt([]byte(cause.Error())), true
}
