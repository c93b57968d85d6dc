package sim

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// TestMaxConnections: with max_connections 2, a third connection's request
// waits unread while two connections are open, and is answered once one of
// them closes, as llama-server's HTTP threads behave.
func TestMaxConnections(t *testing.T) {
	cfg := FastConfig()
	cfg.MaxConnections = 2
	s := startSim(t, cfg)
	addr := strings.TrimSuffix(strings.TrimPrefix(s.URL(), "http://"), "/v1")
	get := func(c net.Conn) {
		t.Helper()
		if _, err := c.Write([]byte("GET /v1/models HTTP/1.1\r\nHost: sim\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
	}
	answered := func(c net.Conn, within time.Duration) (bool, error) {
		_ = c.SetReadDeadline(time.Now().Add(within))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return false, nil
			}
			return false, err
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	}
	var open []net.Conn
	for i := range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		get(c)
		if ok, err := answered(c, time.Minute); !ok || err != nil {
			t.Fatalf("connection %d of 2: not answered (%v)", i+1, err)
		}
		open = append(open, c)
	}
	third, err := net.Dial("tcp", addr) // the kernel completes the handshake
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	get(third)
	// Unanswerable while both stay open, however busy the machine.
	if ok, err := answered(third, 300*time.Millisecond); ok || err != nil {
		t.Fatalf("a third connection was answered (%v) while max_connections 2 were open", err)
	}
	open[0].Close()
	if ok, err := answered(third, time.Minute); !ok || err != nil {
		t.Fatalf("the third connection was not answered after one of the two closed (%v)", err)
	}
}
