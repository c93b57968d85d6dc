package reporters

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runnerbench/runner/internal/testutil"
)

func TestProgressDisabledWritesNothing(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgress(&buf, false)
	p.Update(ProgressUpdate{Stage: "s", Label: "c=1", Done: 1, Total: 2})
	p.LevelDone()
	p.Close()
	if buf.Len() != 0 {
		t.Errorf("disabled progress wrote %q", buf.String())
	}
	var nilP *Progress
	nilP.Update(ProgressUpdate{}) // a nil Progress is a no-op too
	nilP.Close()
}

func TestProgressShowsLevels(t *testing.T) {
	var buf testutil.SyncBuffer
	p := NewProgress(&buf, true)
	clock := time.Unix(0, 0)
	p.now = func() time.Time { return clock }
	for i := 1; i <= 64; i++ {
		clock = clock.Add(10 * time.Millisecond)
		p.Update(ProgressUpdate{Stage: "throughput", Level: 0, Label: "c=8", Done: i, Total: 64, Failed: 1,
			Elapsed: time.Duration(i) * 10 * time.Millisecond, OutputTPS: 1634.12})
	}
	p.LevelDone()
	// A new level starts a new bar even without LevelDone in between.
	p.Update(ProgressUpdate{Stage: "throughput", Level: 1, Label: "c=32", Done: 3, Total: 128})
	p.Update(ProgressUpdate{Stage: "open-loop", Level: 0, Label: "rate=4", Done: 5, Total: 0})
	p.Close()
	out := buf.String()
	for _, want := range []string{"throughput c=8", "(64/64", "1634.1 tok/s", "1 failed", "0.6s", "throughput c=32", "(3/128", "open-loop rate=4"} {
		if !strings.Contains(out, want) {
			t.Errorf("progress output lacks %q:\n%q", want, out)
		}
	}
	if got := strings.Count(out, "\n"); got != 3 {
		t.Errorf("want one finished line per level (3), got %d newlines:\n%q", got, out)
	}
	// Throttled: 64 updates 10 ms apart are drawn about every 100 ms (at
	// most two repaints a draw: description, then count), not 64 times.
	if frames := strings.Count(out, "throughput c=8"); frames > 2*(640/100+2) {
		t.Errorf("bar repainted %d times for 64 updates over 640 ms; throttling is not working", frames)
	}
}

func TestProgressConcurrent(t *testing.T) {
	var buf testutil.SyncBuffer
	p := NewProgress(&buf, true)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				p.Update(ProgressUpdate{Stage: "s", Label: "c=4", Done: g*50 + i, Total: 200})
			}
		}()
	}
	wg.Wait()
	p.Close()
	if !strings.Contains(buf.String(), "s c=4") {
		t.Errorf("no bar drawn: %q", buf.String())
	}
}

// TestProgressSaysHowItGoes: the live line carries the TTFT and ITL medians
// so far (a dash before the first), and a level bounded by its duration
// says how much of it has passed.
func TestProgressSaysHowItGoes(t *testing.T) {
	got := describe(ProgressUpdate{Stage: "sweep", Label: "c=4", Done: 37, Total: 100, OutputTPS: 812.44,
		TTFTP50Ms: 12.345, ITLP50Ms: 1.0249, Elapsed: 3200 * time.Millisecond})
	for _, want := range []string{"sweep c=4", "812.4 tok/s", "p50 TTFT 12.3 ms · ITL 1.02 ms", "0 failed", "3.2s"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	got = describe(ProgressUpdate{Stage: "soak", Label: "rate=4", Elapsed: 12 * time.Second, Duration: 40 * time.Second})
	for _, want := range []string{"p50 TTFT – · ITL –", "12.0s/40s"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
}
