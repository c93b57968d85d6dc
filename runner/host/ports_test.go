package host

import (
	"errors"
	"strings"
	"testing"
)

// TestCheckPorts: a level with more connections to one server than the
// ephemeral range holds is refused, with the range and what to change.
func TestCheckPorts(t *testing.T) {
	const linux = "32768\t60999\n" // Linux's default: 28,232 ports
	if err := checkPorts(28232, "127.0.0.1:8000", linux); err != nil {
		t.Errorf("28,232 connections in 28,232 ports: %v", err)
	}
	err := checkPorts(28233, "127.0.0.1:8000", linux)
	if !errors.Is(err, ErrPorts) {
		t.Fatalf("28,233 connections: %v", err)
	}
	for _, want := range []string{"concurrency 28233", "127.0.0.1:8000", "28232 ephemeral ports", "ip_local_port_range is 32768 60999", "sysctl -w net.ipv4.ip_local_port_range", "--shards"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if err := checkPorts(50000, "h:1", "1024 65535"); err != nil {
		t.Errorf("a widened range: %v", err)
	}
	for _, junk := range []string{"", "1024", "a b", "9 3"} {
		if err := checkPorts(1<<20, "h:1", junk); err != nil {
			t.Errorf("unreadable range %q: %v", junk, err)
		}
	}
	// This machine's own range is read (Linux) or skipped (elsewhere).
	if err := CheckPorts(10, "127.0.0.1:1"); err != nil {
		t.Errorf("10 connections: %v", err)
	}
}
