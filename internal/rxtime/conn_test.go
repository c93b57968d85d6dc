//go:build linux

package rxtime

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http/httptest"
	"os"
	"testing"
	"time"
)

// pair is a loopback TCP connection: the client side wrapped, the server
// side plain.
func pair(t *testing.T) (client net.Conn, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s := <-accepted
	if s == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return Wrap(c), s
}

// TestKernelTimeOfEachWrite: each read's kernel time lies inside the
// write that sent its bytes (on loopback the receiver's timestamp is taken
// while the sender is still in its write call), even when the reader comes
// to it long after, which user time could not tell.
func TestKernelTimeOfEachWrite(t *testing.T) {
	c, s := pair(t)
	st := From(c)
	if st == nil {
		t.Fatalf("Wrap returned %T: no kernel timestamps on this kernel", c)
	}
	buf := make([]byte, 4096)
	for i := range 5 {
		before := time.Now()
		if _, err := s.Write([]byte("data: token\n\n")); err != nil {
			t.Fatal(err)
		}
		after := time.Now()
		time.Sleep(20 * time.Millisecond) // the reader comes late
		n, err := c.Read(buf)
		if err != nil || n != 13 {
			t.Fatalf("read %d: %d bytes, %v", i, n, err)
		}
		now := time.Now()
		read, k := st.Latest()
		if read != uint64(i+1) {
			t.Errorf("read %d counted as %d", i, read)
		}
		if k == 0 {
			t.Fatalf("read %d: no kernel time", i)
		}
		var clk Clock
		clk.Sync()
		at := clk.At(k)
		lag := now.Sub(at)
		// The clock reads bracket the write to within their own cost; allow
		// 1 ms for a write the scheduler parks between them.
		if at.Before(before.Add(-time.Millisecond)) || at.After(after.Add(time.Millisecond)) {
			t.Errorf("read %d: kernel time %v outside the write [%v, %v]", i, at.Sub(before), time.Duration(0), after.Sub(before))
		}
		if lag < 15*time.Millisecond {
			t.Errorf("read %d: lag %v, but the reader came 20 ms after the write", i, lag)
		}
	}
}

// TestReadsLikeTCP: EOF, a closed connection and a deadline come back as
// net.Conn's own errors.
func TestReadsLikeTCP(t *testing.T) {
	c, s := pair(t)
	buf := make([]byte, 16)
	if n, err := c.Read(buf[:0]); n != 0 || err != nil {
		t.Errorf("empty read: %d, %v", n, err)
	}
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	var ne net.Error
	if _, err := c.Read(buf); !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("deadline: %v", err)
	}
	_ = c.SetReadDeadline(time.Time{})
	s.Write([]byte("bye"))
	s.Close()
	got, err := io.ReadAll(c)
	if string(got) != "bye" || err != nil {
		t.Errorf("read to EOF: %q, %v", got, err)
	}
	c.Close()
	if _, err := c.Read(buf); !errors.Is(err, net.ErrClosed) {
		t.Errorf("read after close: %v", err)
	}
}

// TestThroughTLS: a tls.Conn over a wrapped connection is found again, and
// its reads are stamped too.
func TestThroughTLS(t *testing.T) {
	srv := httptest.NewUnstartedServer(nil)
	srv.StartTLS() // for its certificate only
	defer srv.Close()
	cert := srv.TLS.Certificates[0]
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		s, err := ln.Accept()
		if err != nil {
			return
		}
		defer s.Close()
		_, _ = s.Write([]byte("hello"))
		_, _ = io.Copy(io.Discard, s)
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	tc := tls.Client(Wrap(raw), &tls.Config{InsecureSkipVerify: true})
	defer tc.Close()
	buf := make([]byte, 16)
	n, err := tc.Read(buf)
	if err != nil || string(buf[:n]) != "hello" {
		t.Fatalf("tls read: %q, %v", buf[:n], err)
	}
	st := From(tc)
	if st == nil {
		t.Fatal("From found no stamper beneath the tls.Conn")
	}
	if read, k := st.Latest(); read == 0 || k == 0 {
		t.Errorf("after a TLS read: read %d, kernel time %d", read, k)
	}
	if From(raw) != nil {
		t.Error("a plain TCPConn is not a stamper")
	}
}

// TestReadAllocatesNothing: a read, its control message and Latest cost no
// allocation.
func TestReadAllocatesNothing(t *testing.T) {
	c, s := pair(t)
	st := From(c)
	line := []byte("data: {\"choices\":[{\"delta\":{\"content\":\" x\"}}]}\n\n")
	buf := make([]byte, 4096)
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := s.Write(line); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf[:len(line)]); err != nil {
			t.Fatal(err)
		}
		if _, k := st.Latest(); k == 0 {
			t.Fatal("no kernel time")
		}
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations per write and read", allocs)
	}
}

// TestClock: a kernel time maps onto the monotonic clock: now's wall time
// maps to now, a time 3 ms earlier to 3 ms before it, and one time always to
// the same instant.
func TestClock(t *testing.T) {
	var c Clock
	c.Sync()
	now := time.Now()
	// now's own two readings may be cut apart by the scheduler; c's offset
	// is the best of several, so now maps to no later than now plus that.
	at := c.At(now.UnixNano())
	if d := now.Sub(at); d < -time.Millisecond || d > time.Millisecond {
		t.Errorf("now maps %v away from now", d)
	}
	if d := at.Sub(c.At(now.UnixNano() - int64(3*time.Millisecond))); d != 3*time.Millisecond {
		t.Errorf("3 ms earlier maps %v earlier", d)
	}
	if !c.At(12345).Equal(c.At(12345)) {
		t.Error("one time maps to two instants")
	}
	// The mapped time carries a monotonic reading: Since is taken on it.
	if d := time.Since(c.At(now.UnixNano() - int64(time.Second))); d < time.Second {
		t.Errorf("a time 1 s ago is %v ago", d)
	}
}
