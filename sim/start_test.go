package sim

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestStartRefusesNonLoopback(t *testing.T) {
	if _, err := StartOn(t.Context(), "0.0.0.0:0", FastConfig()); err == nil {
		t.Fatal("StartOn 0.0.0.0 succeeded")
	}
	s, err := StartOn(t.Context(), "[::1]:0", FastConfig())
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	defer s.Close()
	if !strings.HasPrefix(s.URL(), "http://[::1]:") {
		t.Errorf("URL %s", s.URL())
	}
}

func TestStartStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	s, err := Start(ctx, FastConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !regexp.MustCompile(`^http://127\.0\.0\.1:\d+/v1$`).MatchString(s.URL()) {
		t.Errorf("URL %q", s.URL())
	}
	resp, err := http.Get(s.URL() + "/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cancel()
	deadline := time.Now().Add(2 * time.Second)
	for {
		resp, err := http.Get(s.URL() + "/models")
		if err != nil {
			break
		}
		resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatal("still serving after its context was cancelled")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
