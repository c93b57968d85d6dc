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
// The kernel's time is the wall clock (CLOCK_REALTIME); a Clock maps it onto
// the monotonic clock.
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

// Clock places kernel receive times (the wall clock, Unix ns) on the
// monotonic clock that every duration of a request is taken on. The wall
// clock and the monotonic clock are slewed alike (NTP's frequency changes
// move both) and differ only by steps, so one reading of both (Now) maps
// every time, and two times of one read map to one instant. Sync once per
// request: a step of the wall clock between two Syncs is then seen by the
// next.
type Clock struct {
	base time.Time // a reading of both clocks, taken together
}

// Sync takes the clock's reading of both clocks (Now).
func (c *Clock) Sync() { c.base = Now() }

// At is the kernel time k (Unix ns) on the monotonic clock, as a time.Time
// that Sub and Since compare on it.
func (c *Clock) At(k int64) time.Time {
	return c.base.Add(time.Duration(k - c.base.UnixNano()))
}

// nowReads is how many readings Now takes (each about 25 ns).
const nowReads = 4

// Now is time.Now with its wall-clock and monotonic readings taken together.
// time.Now reads the wall clock, then the monotonic clock; a reading the
// scheduler cuts in two carries a monotonic time later than its wall time by
// the cut, and a wall time derived from it (its wall time plus a monotonic
// duration) is early by as much. Of a few readings, Now returns the one
// whose clocks stand closest: the largest wall-minus-monotonic difference,
// right to the tens of nanoseconds between the two reads of an
// uninterrupted one.
func Now() time.Time {
	first := time.Now()
	best, bestOff := first, int64(0)
	for range nowReads - 1 {
		t := time.Now()
		if off := t.UnixNano() - first.UnixNano() - int64(t.Sub(first)); off > bestOff {
			best, bestOff = t, off
		}
	}
	return best
}
