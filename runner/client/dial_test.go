package client

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/runnerbench/runner/internal/testutil"
	"github.com/runnerbench/runner/scenario"
)

// TestDialEndsAtConnectTimeout: a dial that hangs ends at the connect
// timeout with a timeout error, both for an IP address (its deadline kept on
// the socket alone, connectBy) and for a name (net.Dialer's Timeout), as
// the transport dials: under a context that has a Done and no deadline.
func TestDialEndsAtConnectTimeout(t *testing.T) {
	t.Parallel()
	hanging := testutil.HangingAddr(t)
	_, port, _ := net.SplitHostPort(hanging)
	const timeout = 150 * time.Millisecond
	ep := endpoint("m")
	ep.Timeouts.Connect = scenario.Duration(timeout)
	for _, host := range []string{"127.0.0.1", "localhost"} {
		addr := net.JoinHostPort(host, port)
		if _, byDeadline := connectBy(t.Context(), addr, timeout); byDeadline != (host == "127.0.0.1") {
			t.Errorf("%s: dialled by the deadline alone: %v", addr, byDeadline)
		}
		c, err := New("t", ep, "http://"+addr+"/v1", zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		dial := c.dial(&net.Dialer{Timeout: timeout})
		ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
		start := time.Now()
		// tcp4: localhost may also name ::1, where nothing listens and a
		// refusal would come before any timeout.
		conn, err := dial(ctx, "tcp4", addr)
		took := time.Since(start)
		cancel()
		if err == nil {
			conn.Close()
			t.Fatalf("%s: dial connected to a port whose accept queue is full", addr)
		}
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Errorf("%s: %v, want a timeout", addr, err)
		}
		if took < timeout-10*time.Millisecond || took > timeout+2*time.Second {
			t.Errorf("%s: the dial ended after %v, connect timeout %v", addr, took, timeout)
		}
	}
}

// TestDialCancelled: a dial of an IP address by its deadline alone still
// ends when the transport cancels it, long before the deadline.
func TestDialCancelled(t *testing.T) {
	t.Parallel()
	addr := testutil.HangingAddr(t)
	c, err := New("t", endpoint("m"), "http://"+addr+"/v1", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	dial := c.dial(&net.Dialer{Timeout: time.Minute})
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	conn, err := dial(ctx, "tcp", addr)
	if err == nil {
		conn.Close()
		t.Fatal("dial connected to a port whose accept queue is full")
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("a cancelled dial ended after %v", took)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled dial: %v, want context.Canceled", err)
	}
}
