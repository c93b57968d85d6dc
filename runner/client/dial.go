package client

import (
	"context"
	"net"
	"net/netip"
	"time"

	"github.com/runnerbench/runner/internal/rxtime"
)

// dial connects to addr and wraps the connection in internal/rxtime, so its
// reads carry the kernel's receive time (where the kernel gives one). d's
// Timeout is the connect timeout.
func (c *Client) dial(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	bare := *d
	bare.Timeout = 0 // its deadline comes in its context (connectBy)
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c.dialing.Add(1)
		var conn net.Conn
		var err error
		if by, ok := connectBy(ctx, addr, d.Timeout); ok {
			conn, err = bare.DialContext(by, network, addr)
		} else {
			conn, err = d.DialContext(ctx, network, addr)
		}
		c.dialing.Add(-1)
		if err != nil || c.userTimes.Load() {
			return conn, err
		}
		return rxtime.Wrap(conn), nil
	}
}

// connectBy is ctx with the connect deadline, for a dial of an IP address
// (false: any other dial, which takes net.Dialer's Timeout).
//
// net.Dialer's Timeout costs a context and a timer per dial (context.
// WithDeadline): at 16,384 connections, 0.11 s of CPU per level. net keeps
// a dial's deadline on the socket itself, though: the connect waits under a
// write deadline taken from its context's Deadline, and the poller ends it
// there with a timeout. With an IP address there is nothing else to bound
// (no lookup, one address), so the deadline alone is enough, and ctx's Done
// (the transport's cancel) is all it needs beside. Where ctx has no Done,
// net sets no deadline either, so that dial takes Timeout too.
// TestDialEndsAtConnectTimeout holds this: a dial that hangs ends at the
// deadline.
func connectBy(ctx context.Context, addr string, timeout time.Duration) (context.Context, bool) {
	if timeout <= 0 || ctx.Done() == nil {
		return nil, false
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, false
	}
	if _, err := netip.ParseAddr(host); err != nil {
		return nil, false
	}
	at := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(at) {
		at = d
	}
	return deadlineCtx{ctx, at}, true
}

// deadlineCtx is a context whose Deadline is at (connectBy).
type deadlineCtx struct {
	context.Context
	at time.Time
}

func (c deadlineCtx) Deadline() (time.Time, bool) { return c.at, true }
