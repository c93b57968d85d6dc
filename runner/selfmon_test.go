package runner

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/runnerbench/runner/aggregate"

	"github.com/runnerbench/runner/sim"
)

// TestClientBottleneckFlagged saturates the runner on purpose: one usable
// core (GOMAXPROCS=1) and two goroutines burning it while a level runs. The
// level's client CPU must then be near 100% of that core and the point
// flagged as client-bound, with the warning saying why.
func TestClientBottleneckFlagged(t *testing.T) {
	cfg := fastSim()
	s := startSim(t, cfg)
	e, _ := newEngine(t, s.URL(), nil)
	st := stage(16, 8)
	st.Requests.Each = 48

	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := 0
			for !stop.Load() {
				x++ // async preemption lets the engine run in between
			}
			_ = x
		}()
	}
	var ru0, ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	t0 := time.Now()
	res := runStage(t, e, synthPlan(32, "reference"), st)
	wall := time.Since(t0)
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	stop.Store(true)
	wg.Wait()

	p := res.Points[0]
	if p.ClientCPUPercent == nil {
		t.Fatal("no client CPU recorded")
	}
	if !p.ClientBottleneck {
		got := 100 * float64(cpuTime(&ru1)-cpuTime(&ru0)) / float64(wall)
		if got < 100*aggregate.CPUBusyShare {
			// The kernel did not give this process a whole core (other
			// processes on a shared machine): the saturation did not happen,
			// so there is nothing to detect.
			t.Skipf("process got only %.0f%% of a core; cannot saturate it here", got)
		}
		t.Fatalf("client CPU %.1f%% of GOMAXPROCS=1, lag p99 %v: not flagged as bottleneck (warnings %q)",
			*p.ClientCPUPercent, p.DispatchLagP99Ms, p.Warnings)
	}
	if len(p.Warnings) == 0 {
		t.Fatal("bottleneck flagged without a warning saying why")
	}
	if p.Completed != st.Requests.Each {
		t.Fatalf("completed %d of %d", p.Completed, st.Requests.Each)
	}
}

// TestClientBottleneckNotFlagged is the normal case: a few streams with a
// server that takes its time use a few percent of a core, and the point must
// not be flagged.
func TestClientBottleneckNotFlagged(t *testing.T) {
	cfg := sim.FastConfig()
	cfg.TTFTMs = 50 // the lag limit is min(10 ms, 10% of TTFT p50)
	cfg.ITLMs = 5
	s := startSim(t, cfg)
	e, _ := newEngine(t, s.URL(), nil)
	st := stage(16, 4)
	st.Requests.Each = 16
	res := runStage(t, e, synthPlan(32, "reference"), st)
	p := res.Points[0]
	if p.ClientCPUPercent == nil {
		t.Fatal("no client CPU recorded")
	}
	if p.ClientSchedP90Ms == nil {
		t.Fatal("no client scheduling latency recorded")
	}
	// The runner's own work must not flag it. Other processes holding both
	// cores (a loaded CI machine) may, and then the flag must say so: it is
	// accepted only with a scheduling latency over the limit to show for it.
	if p.ClientBottleneck && *p.ClientSchedP90Ms <= aggregate.SchedLimitMs(&p) {
		t.Fatalf("normal run flagged as client-bound: CPU %.1f%%, lag p99 %v, sched p99 %v ms, warnings %q",
			*p.ClientCPUPercent, p.DispatchLagP99Ms, *p.ClientSchedP90Ms, p.Warnings)
	}
	if *p.ClientCPUPercent >= 100*aggregate.CPUBusyShare {
		t.Fatalf("client CPU %.1f%% for 4 slow streams", *p.ClientCPUPercent)
	}
}

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
