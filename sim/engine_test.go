package sim

import (
	"io"
	"strings"
	"testing"
	"time"
)

// TestCloseDuringLongStep checks Close does not wait out a long prefill step,
// and that the request in it ends (aborted) rather than hanging.
func TestCloseDuringLongStep(t *testing.T) {
	cfg := FastConfig()
	cfg.TTFTMs = 60_000 // a minute-long prefill
	s, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan []byte, 1)
	go func() {
		resp, err := post(t.Context(), s.URL()+"/completions", map[string]any{"prompt": "x", "max_tokens": 2, "stream": true})
		if err != nil {
			done <- nil // cut before the headers: also not completed
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- body
	}()
	for s.Counters().Running == 0 {
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Close took %v", d)
	}
	select {
	case body := <-done:
		if strings.Contains(string(body), "[DONE]") {
			t.Errorf("request completed through a closed server: %q", body)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("request still hanging after Close")
	}
}
