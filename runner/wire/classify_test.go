package wire

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/runnerbench/runner/result"
)

// TestFailReadByCause: a read that fails after we cancelled the request is
// named by our cause, even when the read itself was a clean end of body (a
// server shutting down with the run); a stream the server ended on its own
// is truncated.
func TestFailReadByCause(t *testing.T) {
	live := context.Background()
	stopped, stop := context.WithCancel(context.Background())
	stop()
	timedOut, expire := context.WithCancelCause(context.Background())
	expire(&timeoutError{"no first token within 1s"})
	for _, tc := range []struct {
		name          string
		parent, rctx  context.Context
		err           error
		kind, message string
	}{
		{"server ended the body", live, live, io.EOF, result.ErrTruncated, "stream ended without finish_reason"},
		{"server cut the connection", live, live, io.ErrUnexpectedEOF, result.ErrTruncated, "stream cut after 3 chunks"},
		{"run stopped, clean end of body", stopped, stopped, io.EOF, result.ErrInterrupted, "run interrupted"},
		{"run stopped, cut", stopped, stopped, io.ErrUnexpectedEOF, result.ErrInterrupted, "run interrupted"},
		{"request timed out, clean end of body", live, timedOut, io.EOF, result.ErrTimeout, "no first token within 1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &result.Request{OK: true}
			clk := streamClock{start: time.Now().Add(-time.Second), chunks: 3}
			failRead(tc.parent, tc.rctx, rec, &clk, tc.err)
			if rec.OK || rec.ErrorKind != tc.kind || !strings.Contains(rec.Error, tc.message) {
				t.Errorf("ok %v kind %q error %q; want kind %q error containing %q", rec.OK, rec.ErrorKind, rec.Error, tc.kind, tc.message)
			}
			if rec.E2EMs < 1000 {
				t.Errorf("e2e %.1f ms, want the time since the send (≥ 1000)", rec.E2EMs)
			}
		})
	}
}
