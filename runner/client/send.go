package client

import (
	"net"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	"github.com/runnerbench/runner/internal/redact"
	"github.com/runnerbench/runner/internal/rxtime"
)

// Do sends req (a request whose GetBody can make its body again, as
// http.NewRequest's of a bytes.Reader can) on the pooled connections. It
// calls sent with the instant just before the request goes out (again:
// the re-send below), and returns the connection the response is read
// from.
//
// A server that closes a kept-alive connection without saying so
// (llama-server does after every stream, though its headers offer
// keep-alive) makes a request written on that connection before the client
// saw the close fail with no response at all. Go's transport re-sends only
// idempotent requests, and a POST is not one; so such a request, one that
// failed before any response byte on a connection that had carried a request
// before, is sent again here, once, on a new connection, its clock restarted
// by sent (the new connection's set-up is then inside its TTFT, as it is for
// any request on a fresh connection). A request the server answered in any
// way, by a single response byte, is never re-sent, and neither is one
// whose context ended (our own timeout, the run's interruption).
func (c *Client) Do(req *http.Request, sent func(start time.Time, again bool)) (*http.Response, net.Conn, error) {
	ctx := req.Context()
	var reused, answered atomic.Bool
	var conn net.Conn // set by GotConn, on this goroutine, before Do returns
	trace := &httptrace.ClientTrace{
		GotConn: func(i httptrace.GotConnInfo) {
			reused.Store(i.Reused)
			conn = i.Conn
		},
		GotFirstResponseByte: func() { answered.Store(true) },
	}
	req = req.WithContext(httptrace.WithClientTrace(ctx, trace))
	c.mu.Lock()
	pooled, fresh := c.pooled, c.fresh
	c.mu.Unlock()
	// The start's wall-clock time (in the records) and its monotonic one
	// (every duration) read together: rxtime.Now.
	sent(rxtime.Now(), false)
	resp, err := pooled.Do(req)
	if err == nil || !reused.Load() || answered.Load() || ctx.Err() != nil || req.GetBody == nil {
		return resp, conn, err
	}
	c.noteClosedKeepAlive(err)
	body, berr := req.GetBody()
	if berr != nil {
		return nil, conn, err
	}
	again := req.Clone(ctx) // without the trace: the pooled connection's answers are over
	again.Body = body
	again = again.WithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(i httptrace.GotConnInfo) { conn = i.Conn },
	}))
	sent(rxtime.Now(), true)
	resp, err = fresh.Do(again)
	return resp, conn, err
}

// noteClosedKeepAlive says, once per endpoint, that the server closes
// kept-alive connections; every request this affects is still counted in
// its level's reconnects.
func (c *Client) noteClosedKeepAlive(err error) {
	c.closedOnce.Do(func() {
		c.log.Warn().Str("error", Excerpt([]byte(redact.Error(err).Error()))).Msg(
			"the server closed a kept-alive connection without saying so; requests that found their connection closed before any response are sent again once on a new connection (counted as reconnects)")
	})
}
