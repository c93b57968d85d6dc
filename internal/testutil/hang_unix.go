//go:build unix

package testutil

import (
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"
)

// HangingAddr is a loopback address whose dials hang: a listener whose
// accept queue is full (nobody accepts) drops new SYNs. The test fails when
// the kernel keeps accepting past a full queue.
func HangingAddr(t *testing.T) string {
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
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	for range 8 {
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err != nil {
			return addr // the queue is full: later SYNs are dropped
		}
		t.Cleanup(func() { c.Close() })
	}
	t.Fatal("the kernel kept accepting connections past a full accept queue; no dial can be made to hang on loopback")
	return ""
}
