package host

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestSchedLatencyQuantile(t *testing.T) {
	b := []float64{0, 1e-6, 1e-3, 1e-2, math.Inf(1)}
	before := SchedSnapshot{counts: []uint64{5, 5, 0, 0}, buckets: b}
	after := SchedSnapshot{counts: []uint64{5, 95, 8, 2}, buckets: b}
	// The deltas are 0, 90, 8, 2: p50 in [1µs, 1ms), p95 in [1ms, 10ms), p99 in [10ms, inf).
	for _, tt := range []struct {
		q    float64
		want time.Duration
	}{{0.5, time.Millisecond}, {0.95, 10 * time.Millisecond}, {0.99, 10 * time.Millisecond}, {0.9, time.Millisecond}} {
		n, got, ok := SchedLatency(before, after, tt.q)
		if !ok || n != 100 || got != tt.want {
			t.Errorf("q=%v: n=%d lat=%v ok=%v, want n=100 lat=%v", tt.q, n, got, ok, tt.want)
		}
	}
	if _, _, ok := SchedLatency(after, after, 0.99); ok {
		t.Error("no wake-ups between equal snapshots, yet ok")
	}
	if _, _, ok := SchedLatency(SchedSnapshot{}, SchedSnapshot{}, 0.99); ok {
		t.Error("empty snapshots, yet ok")
	}
}

// TestSchedLatencySaturated: with one usable core burnt by two goroutines,
// goroutines that wake from short sleeps wait for the core, and the
// runtime's scheduling latency shows it (milliseconds, the preemption
// quantum), where CPU share alone would not if the core were taken by
// another process.
func TestSchedLatencySaturated(t *testing.T) {
	wake := func() {
		var wg sync.WaitGroup
		for range 100 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 20 {
					time.Sleep(500 * time.Microsecond)
				}
			}()
		}
		wg.Wait()
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var stop atomic.Bool
	var bg sync.WaitGroup
	for range 2 {
		bg.Add(1)
		go func() {
			defer bg.Done()
			for !stop.Load() {
			}
		}()
	}
	s0 := ReadSched()
	wake()
	s1 := ReadSched()
	stop.Store(true)
	bg.Wait()
	n, p99, ok := SchedLatency(s0, s1, 0.99)
	// The runtime samples its scheduling events (about one in eight), so n
	// is well below the 2,000 wake-ups.
	if !ok || n < 20 {
		t.Fatalf("saturated: n=%d ok=%v", n, ok)
	}
	if p99 < 2*time.Millisecond {
		t.Fatalf("saturated core: scheduling latency p99 %v, want milliseconds", p99)
	}
	t.Logf("saturated: %d wake-ups, p99 %v", n, p99)
}
