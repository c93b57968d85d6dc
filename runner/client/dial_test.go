package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/runnerbench/runner/scenario"
)

// hangingAddr is a loopback port whose dials hang: a listener whose accept
// queue is full (nobody accepts) drops new SYNs. ok is false when the
// kernel kept accepting.
func hangingAddr(t *testing.T) (port int, ok bool) {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatalf("socket: %v", err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatalf("bind: %v", err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatalf("listen: %v", err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	port = sa.(*syscall.SockaddrInet4).Port
	for range 8 {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 100*time.Millisecond)
		if err != nil {
			return port, true
		}
		t.Cleanup(func() { c.Close() })
	}
	return port, false
}

// TestDialEndsAtConnectTimeout: a dial that hangs ends at the connect
// timeout with a timeout error, both for an IP address (its deadline kept on
// the socket alone, connectBy) and for a name (net.Dialer's Timeout), as
// the transport dials: under a context that has a Done and no deadline.
func TestDialEndsAtConnectTimeout(t *testing.T) {
	t.Parallel()
	port, ok := hangingAddr(t)
	if !ok {
		t.Fatal("the kernel kept accepting connections past a full accept queue; no dial can be made to hang on loopback")
	}
	const timeout = 150 * time.Millisecond
	ep := endpoint("m")
	ep.Timeouts.Connect = scenario.Duration(timeout)
	for _, host := range []string{"127.0.0.1", "localhost"} {
		addr := net.JoinHostPort(host, fmt.Sprint(port))
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
		conn, err := dial(ctx, "tcp", addr)
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
	port, ok := hangingAddr(t)
	if !ok {
		t.Fatal("the kernel kept accepting connections past a full accept queue; no dial can be made to hang on loopback")
	}
	c, err := New("t", endpoint("m"), fmt.Sprintf("http://127.0.0.1:%d/v1", port), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	dial := c.dial(&net.Dialer{Timeout: time.Minute})
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	conn, err := dial(ctx, "tcp", fmt.Sprintf("127.0.0.1:%d", port))
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
