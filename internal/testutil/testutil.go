// Package testutil holds small helpers shared by the tests of several
// packages. Nothing outside tests imports it.
package testutil

import (
	"bytes"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
)

// SyncBuffer is a bytes.Buffer that one goroutine (or a child process's
// output copier) may write while another reads it.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// GeneratedSection holds the part of a checked-in file (a docs page) between
// the markers begin and end to generated: with update it writes generated
// there, otherwise it fails the test when the section is stale, naming
// how to regenerate it (regen). It returns the section as it is checked in.
func GeneratedSection(t testing.TB, path, begin, end, generated string, update bool, regen string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i, j := strings.Index(text, begin), strings.Index(text, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no generated section between %q and %q", path, begin, end)
	}
	want := text[:i+len(begin)] + "\n" + generated + text[j:]
	if update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return generated
	}
	if text != want {
		t.Errorf("%s's section between %q and %q is stale: %s", path, begin, end, regen)
	}
	return text[i:j]
}

// ServeConns listens on a loopback port and serves every connection it
// accepts with serve, on a goroutine of its own, until the test ends (then
// the listener closes and every serve has returned). It is for servers
// that speak raw bytes: a half-answered response, a connection closed
// under a request.
func ServeConns(t testing.TB, serve func(net.Conn)) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { serve(c) })
		}
	})
	return ln
}
