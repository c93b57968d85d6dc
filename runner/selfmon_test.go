package runner

import (
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
	// accepted only with a measured read lag (or, for chunks the runner's
	// clock timed, a scheduling latency) over its limit to show for it.
	for _, by := range p.ClientBottleneckBy {
		shown := false
		switch by {
		case aggregate.SignalReadLag:
			shown = p.ClientReadLagP99Ms != nil && *p.ClientReadLagP99Ms > aggregate.ReadLagLimitMs(&p)
		case aggregate.SignalSched:
			shown = *p.ClientSchedP90Ms > aggregate.SchedLimitMs(&p)
		}
		if !shown {
			t.Fatalf("normal run flagged as client-bound by %s: CPU %.1f%%, read lag p99 %v, sched p90 %v ms, warnings %q",
				by, *p.ClientCPUPercent, deref(p.ClientReadLagP99Ms), *p.ClientSchedP90Ms, p.Warnings)
		}
	}
	if *p.ClientCPUPercent >= 100*aggregate.CPUBusyShare {
		t.Fatalf("client CPU %.1f%% for 4 slow streams", *p.ClientCPUPercent)
	}
}
