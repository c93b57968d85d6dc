// Package rxtime gives a TCP connection's reads the time the kernel received
// their bytes. A benchmark client that reads the clock after its read returns
// stamps every token late by its own lag (a goroutine waiting for a core, a
// reader busy with other streams); the kernel stamps each segment as it
// arrives, before any of that.
//
// On Linux, Wrap turns on software receive timestamps (SO_TIMESTAMPING,
// else SO_TIMESTAMPNS) on a TCP connection and reads it with recvmsg, so
// each read returns with the kernel's receive time of its last byte, which
// Latest reports. The connection sits below HTTP and TLS (a tls.Conn wraps
// it; From finds it again through tls.Conn.NetConn), so every API and both
// schemes read through it. Elsewhere, or where the kernel refuses the
// option, Wrap returns the connection unchanged and From finds no stamps:
// the caller keeps its own (user) time and says so.
//
// The kernel's time is the wall clock (CLOCK_REALTIME); OnMonotonic maps it
// onto the monotonic reading of a time.Time taken after the read.
package rxtime

import (
	"crypto/tls"
	"net"
	"time"
)

// Stamper is a connection whose reads carry the kernel's receive time.
type Stamper interface {
	// Latest is the kernel's receive time (Unix ns, wall clock) of the last
	// byte of the most recent read, and that read's number (counting from
	// 1). A read the kernel gave no time for has unixNs 0.
	Latest() (read uint64, unixNs int64)
}

// From returns the stamper beneath c (looking through TLS), or nil when its
// reads carry no kernel time.
func From(c net.Conn) Stamper {
	for range 4 {
		switch v := c.(type) {
		case Stamper:
			return v
		case *tls.Conn:
			c = v.NetConn()
		default:
			return nil
		}
	}
	return nil
}

// OnMonotonic places the kernel time k (Unix ns) on now's clock: now moved
// back by how much earlier than now the kernel's wall clock says the bytes
// arrived, which keeps now's monotonic reading. lag is that difference
// (now's wall clock minus k). Both clocks are read at the same instant
// (time.Now reads them together), so the mapping is exact unless the wall
// clock is stepped between k and now; ok is false when the lag is negative
// (the wall clock went back) or longer than maxLag (it jumped forward, or
// the bytes arrived before the request was sent), and then now is the time.
func OnMonotonic(now time.Time, k int64, maxLag time.Duration) (at time.Time, lag time.Duration, ok bool) {
	lag = time.Duration(now.UnixNano() - k)
	if k == 0 || lag < 0 || lag > maxLag {
		return now, 0, false
	}
	return now.Add(-lag), lag, true
}
