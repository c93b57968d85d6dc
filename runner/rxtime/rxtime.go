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
	"math"
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
// move both) and differ only by steps, so one offset maps every time; Sync
// measures it. time.Now reads the two clocks one after the other, and a
// reading cut in two by the scheduler gets an offset wrong by the cut, so
// Sync keeps the best of a few readings: the offset is then right to the
// tens of nanoseconds that separate the two reads of an uninterrupted one,
// and it is the same for every time mapped, so two times of one read are
// equal and times of later reads never come out earlier.
type Clock struct {
	base time.Time // a reading with both clocks
	off  int64     // wall minus monotonic since base, ns
}

// syncReads is how many readings Sync takes (each about 25 ns).
const syncReads = 4

// Sync measures the offset between the two clocks now. Call it once per
// request: a step of the wall clock between two Syncs is then seen by the
// next.
func (c *Clock) Sync() {
	c.base = time.Now()
	bw := c.base.UnixNano()
	c.off = math.MinInt64
	for range syncReads {
		t := time.Now()
		// A reading whose monotonic half was taken late (preempted between
		// the halves) shows a smaller offset: keep the largest.
		c.off = max(c.off, t.UnixNano()-bw-int64(t.Sub(c.base)))
	}
}

// At is the kernel time k (Unix ns) on the monotonic clock, as a time.Time
// that Sub and Since compare on it.
func (c *Clock) At(k int64) time.Time {
	return c.base.Add(time.Duration(k - c.base.UnixNano() - c.off))
}
