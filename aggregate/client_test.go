package aggregate

import (
	"strings"
	"testing"
	"time"

	"github.com/runnerbench/runner/result"
)

// TestClientBottleneck: the level is flagged, with a warning saying why,
// when the runner's CPU is near its cores, its goroutines waited for a core,
// or requests left late; never on requests that waited for a
// max_concurrency slot, which the plan asked for.
func TestClientBottleneck(t *testing.T) {
	tests := []struct {
		name      string
		cpu       float64
		lag, ttft *float64
		sched     *float64
		capWaits  int64
		want      bool
		closed    bool   // a closed loop: no schedule, its lag flags nothing
		signal    string // the signal the flag must name
	}{
		{"idle", 20, result.Ptr(0.5), result.Ptr(100.0), result.Ptr(0.2), 0, false, false, ""},
		{"cpu busy", 175, result.Ptr(0.5), result.Ptr(100.0), nil, 0, true, false, SignalCPU},
		{"lag over 10 ms", 20, result.Ptr(12.0), result.Ptr(1000.0), nil, 0, true, false, SignalLag},
		{"lag over 10% of ttft", 20, result.Ptr(3.0), result.Ptr(20.0), nil, 0, true, false, SignalLag},
		// llama-server's closed loops: 2.74 ms against 10% of a 14.7 ms TTFT.
		{"closed loop lag", 20, result.Ptr(2.74), result.Ptr(14.7), result.Ptr(0.2), 0, false, true, ""},
		{"closed loop busy cpu", 175, result.Ptr(2.74), result.Ptr(14.7), nil, 0, true, true, SignalCPU},
		{"lag under both", 20, result.Ptr(1.5), result.Ptr(20.0), nil, 0, false, false, ""},
		// A fast server: 10% of its TTFT is under the 1 ms floor.
		{"sub-millisecond lag, fast server", 20, result.Ptr(0.9), result.Ptr(4.0), nil, 0, false, false, ""},
		{"lag over the floor, fast server", 20, result.Ptr(1.2), result.Ptr(4.0), nil, 0, true, false, SignalLag},
		{"no lag data", 20, nil, nil, nil, 0, false, false, ""},
		{"readers waited for a core", 20, result.Ptr(0.5), result.Ptr(100.0), result.Ptr(25.0), 0, true, false, SignalSched},
		{"scheduling latency under the limit", 20, result.Ptr(0.5), result.Ptr(100.0), result.Ptr(9.5), 0, false, false, ""},
		{"lag from a full cap", 20, result.Ptr(50.0), result.Ptr(100.0), nil, 3, false, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &result.LevelRecord{Start: t0, End: t0.Add(time.Second), WallNs: int64(time.Second), CapWaits: tt.capWaits,
				Client: result.ClientLoad{CPUNs: int64(tt.cpu * 1e7), Procs: 2, SchedP90Ms: tt.sched}}
			spec := &result.LevelSpec{Concurrency: 4, Rate: result.Ptr(8.0)}
			if tt.closed {
				spec.Rate = nil
			}
			b := builder{spec: spec, rec: rec}
			b.p = result.Point{DispatchLagP99Ms: tt.lag, TTFTP50Ms: tt.ttft}
			b.client()
			p := b.p
			warned := len(p.Warnings) > 0
			if notes := len(p.Notes) > 0; notes != (tt.capWaits > 0) {
				t.Fatalf("cap waits %d, notes %q", tt.capWaits, p.Notes)
			}
			if p.ClientBottleneck != tt.want || warned != tt.want {
				t.Fatalf("bottleneck %v warnings %q", p.ClientBottleneck, p.Warnings)
			}
			if tt.want && (len(p.ClientBottleneckBy) != 1 || p.ClientBottleneckBy[0] != tt.signal) {
				t.Fatalf("flag names %q, want %q (warnings %q)", p.ClientBottleneckBy, tt.signal, p.Warnings)
			}
			if !tt.want && len(p.ClientBottleneckBy) != 0 {
				t.Fatalf("no flag, but names %q", p.ClientBottleneckBy)
			}
			if p.ClientCPUPercent == nil || *p.ClientCPUPercent != tt.cpu {
				t.Fatalf("cpu %v", p.ClientCPUPercent)
			}
		})
	}
}

// TestErrorRate: error_rate is failed / n_requests, null when nothing was sent.
func TestErrorRate(t *testing.T) {
	reqs := []*result.Request{ok(50, 500, 100, 100), ok(50, 500, 100, 100), ok(50, 500, 100, 100),
		{ErrorKind: result.ErrTimeout, Error: "idle"}}
	if p := pointOf(record(time.Second, nil), reqs); p.ErrorRate == nil || *p.ErrorRate != 0.25 {
		t.Errorf("error_rate %v, want 0.25 (1 of 4)", p.ErrorRate)
	}
	if p := pointOf(record(time.Second, nil), nil); p.ErrorRate != nil {
		t.Errorf("error_rate %v of a level that sent nothing, want null", *p.ErrorRate)
	}
}

// TestUnsentArrivals: arrivals a level's duration cut off before they were
// sent are warned about with their count and the schedule's (sent plus
// unsent); the client is not flagged for them (the lag says that), and a
// level that sent its schedule says nothing.
func TestUnsentArrivals(t *testing.T) {
	for _, unsent := range []int64{0, 10} {
		rec := &result.LevelRecord{Start: t0, End: t0.Add(time.Second), WallNs: int64(time.Second), Unsent: unsent,
			Client: result.ClientLoad{CPUNs: int64(20 * 1e7), Procs: 2}}
		b := builder{spec: &result.LevelSpec{Rate: result.Ptr(46.0)}, rec: rec}
		b.p = result.Point{NRequests: 36, DispatchLagP99Ms: result.Ptr(0.5), TTFTP50Ms: result.Ptr(100.0)}
		b.client()
		want := 0
		if unsent > 0 {
			want = 1
		}
		if len(b.p.Warnings) != want || b.p.ClientBottleneck ||
			want == 1 && !strings.HasPrefix(b.p.Warnings[0], "10 of the 46 arrivals its schedule held before the level's duration ended were never sent") {
			t.Errorf("unsent %d: warnings %q, bottleneck %v", unsent, b.p.Warnings, b.p.ClientBottleneck)
		}
	}
}
