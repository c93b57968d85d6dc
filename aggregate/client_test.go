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

// stampsOf is a level's stamps: kernel and user token chunks, shared ones,
// and the kernel-timed chunks' read lags (ms).
func stampsOf(kernel, user, shared int64, lagsMs ...float64) *result.Stamps {
	st := &result.Stamps{Kernel: kernel, User: user, Shared: shared}
	for _, l := range lagsMs {
		st.Lag.Add(time.Duration(l * float64(time.Millisecond)))
	}
	return st
}

// lags is n read lags: all at base ms but the top share at high ms.
func lags(n int, base, high float64, highShare float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = base
		if float64(i) >= float64(n)*(1-highShare) {
			out[i] = high
		}
	}
	return out
}

// TestReadLagVerdict: with kernel times the client-bound verdict reads the
// measured read lag first, against the ITL p50 (a read later than the gap
// to the next token stamps the earlier one late); the scheduling latency,
// a proxy for that lag, judges only the chunks the runner's own clock timed.
func TestReadLagVerdict(t *testing.T) {
	tests := []struct {
		name   string
		stamps *result.Stamps
		itl    *float64
		sched  float64
		signal string // "" : not flagged
		says   string // in the warning
	}{
		{"lag past the ITL", stampsOf(1000, 0, 30, lags(1000, 2, 35, 0.05)...), result.Ptr(20.0), 0.2, SignalReadLag, "client read lag p99 35.0 ms exceeds 20.0 ms (the ITL p50, at least 1 ms)"},
		{"lag past the ITL, nothing shared", stampsOf(1000, 0, 0, lags(1000, 2, 35, 0.05)...), result.Ptr(20.0), 0.2, "", ""},
		{"lag under the ITL, the proxy ignored", stampsOf(1000, 0, 0, lags(1000, 2, 5, 0.05)...), result.Ptr(20.0), 25, "", ""},
		{"no ITL: no verdict", stampsOf(100, 0, 0, lags(100, 2, 120, 0.05)...), nil, 0.2, "", ""},
		{"a fast server: at least 1 ms", stampsOf(1000, 0, 10, lags(1000, 0.2, 0.8, 0.05)...), result.Ptr(0.3), 0.2, "", ""},
		{"a fast server past 1 ms", stampsOf(1000, 0, 10, lags(1000, 0.2, 1.5, 0.05)...), result.Ptr(0.3), 0.2, SignalReadLag, "exceeds 1.00 ms (the ITL p50, at least 1 ms)"},
		{"mixed: the proxy for the user-timed", stampsOf(900, 100, 0, lags(900, 1, 2, 0.05)...), result.Ptr(20.0), 25, SignalSched, "the 10.0% of token chunks its own clock timed are late"},
		{"user-timed: the proxy", stampsOf(0, 1000, 0), result.Ptr(20.0), 25, SignalSched, "so token times are late by up to that much"},
		{"a record from before kernel times: the proxy", nil, result.Ptr(20.0), 25, SignalSched, "so token times are late"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &result.LevelRecord{Start: t0, End: t0.Add(time.Second), WallNs: int64(time.Second),
				Client: result.ClientLoad{CPUNs: int64(time.Second / 10), Procs: 2, SchedP90Ms: &tt.sched, Stamps: tt.stamps}}
			b := builder{spec: &result.LevelSpec{Concurrency: 64}, rec: rec}
			b.p = result.Point{ITLP50Ms: tt.itl}
			b.client()
			p := b.p
			if tt.signal == "" {
				if p.ClientBottleneck || len(p.Warnings) > 0 {
					t.Fatalf("flagged by %q: %q", p.ClientBottleneckBy, p.Warnings)
				}
				return
			}
			if !p.ClientBottleneck || len(p.ClientBottleneckBy) != 1 || p.ClientBottleneckBy[0] != tt.signal {
				t.Fatalf("flag %v by %q, want %s (warnings %q)", p.ClientBottleneck, p.ClientBottleneckBy, tt.signal, p.Warnings)
			}
			if len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], tt.says) {
				t.Fatalf("warnings %q, want one saying %q", p.Warnings, tt.says)
			}
		})
	}
	// The warning counts the chunks the late reads stamped late.
	rec := &result.LevelRecord{Start: t0, End: t0.Add(time.Second), WallNs: int64(time.Second),
		Client: result.ClientLoad{CPUNs: 1, Procs: 2, Stamps: stampsOf(1000, 0, 125, lags(1000, 2, 35, 0.05)...)}}
	b := builder{spec: &result.LevelSpec{Concurrency: 64}, rec: rec}
	b.p = result.Point{ITLP50Ms: result.Ptr(20.0)}
	b.client()
	if len(b.p.Warnings) != 1 || !strings.Contains(b.p.Warnings[0], "(12.5% of the kernel-timed token chunks were)") {
		t.Errorf("warnings %q", b.p.Warnings)
	}
}

// TestTimestampSource: the level says how its token chunks were timed, with
// the kernel's share, and the read lag's p50, p99 and max; a level merged
// from shards counts every shard's chunks.
func TestTimestampSource(t *testing.T) {
	point := func(rec *result.LevelRecord) result.Point {
		b := builder{spec: &result.LevelSpec{Concurrency: 4}, rec: rec}
		b.client()
		return b.p
	}
	one := func(st *result.Stamps) *result.LevelRecord {
		return &result.LevelRecord{Start: t0, End: t0.Add(time.Second), WallNs: int64(time.Second), Client: result.ClientLoad{CPUNs: 1, Procs: 2, Stamps: st}}
	}
	tests := []struct {
		name  string
		rec   *result.LevelRecord
		src   string
		share float64
	}{
		{"kernel", one(stampsOf(200, 0, 0, lags(200, 0.5, 3, 0.02)...)), "kernel", 1},
		{"user", one(stampsOf(0, 80, 0)), "user", 0},
		{"mixed", one(stampsOf(3, 1, 0, 1, 1, 1)), "mixed", 0.75},
	}
	for _, tt := range tests {
		p := point(tt.rec)
		if p.TimestampSource == nil || *p.TimestampSource != tt.src || p.TimestampKernelShare == nil || *p.TimestampKernelShare != tt.share {
			t.Errorf("%s: source %v share %v", tt.name, deref(p.TimestampSource), p.TimestampKernelShare)
		}
	}
	if p := point(one(stampsOf(200, 0, 0, lags(200, 0.5, 3, 0.02)...))); p.ClientReadLagP50Ms == nil || *p.ClientReadLagP50Ms != 0.5 ||
		*p.ClientReadLagP99Ms != 3 || *p.ClientReadLagMaxMs != 3 {
		t.Errorf("read lag p50 %v p99 %v max %v, want 0.5, 3, 3", p.ClientReadLagP50Ms, p.ClientReadLagP99Ms, p.ClientReadLagMaxMs)
	}
	if p := point(one(stampsOf(0, 80, 0))); p.ClientReadLagP50Ms != nil {
		t.Errorf("a user-timed level has a read lag %v", *p.ClientReadLagP50Ms)
	}
	if p := point(one(nil)); p.TimestampSource != nil || p.TimestampKernelShare != nil {
		t.Errorf("a record without stamps says %v", deref(p.TimestampSource))
	}
	merged := &result.LevelRecord{Start: t0, End: t0.Add(time.Second), WallNs: int64(time.Second), Parts: []result.LevelPart{
		{Shard: 0, Start: t0, End: t0.Add(time.Second), WallNs: int64(time.Second), Client: result.ClientLoad{CPUNs: 1, Procs: 2, Stamps: stampsOf(30, 0, 0, lags(30, 1, 1, 0)...)}},
		{Shard: 1, Start: t0, End: t0.Add(time.Second), WallNs: int64(time.Second), Client: result.ClientLoad{CPUNs: 1, Procs: 2, Stamps: stampsOf(0, 10, 0)}},
	}}
	b := builder{spec: &result.LevelSpec{Concurrency: 4}, rec: merged, a: &acc{}}
	b.client()
	if p := b.p; p.TimestampSource == nil || *p.TimestampSource != "mixed" || *p.TimestampKernelShare != 0.75 {
		t.Errorf("merged shards: source %v share %v, want mixed 0.75", deref(p.TimestampSource), p.TimestampKernelShare)
	}
}

// TestClockStep: a window whose wall-clock span differs from its monotonic
// length by more than slewing explains gets a warning; slewing does not.
func TestClockStep(t *testing.T) {
	for _, tt := range []struct {
		name  string
		moved time.Duration
		warn  bool
	}{
		{"none", 0, false},
		{"slewed 500 ppm over 10 s", 5 * time.Millisecond, false},
		{"stepped forward", 40 * time.Millisecond, true},
		{"stepped back", -3 * time.Second, true},
	} {
		rec := &result.LevelRecord{Start: t0, End: t0.Add(10*time.Second + tt.moved), WallNs: int64(10 * time.Second),
			Client: result.ClientLoad{CPUNs: 1, Procs: 2, Stamps: stampsOf(10, 0, 0, lags(10, 1, 1, 0)...)}}
		b := builder{spec: &result.LevelSpec{Concurrency: 4}, rec: rec}
		b.client()
		warned := len(b.p.Warnings) == 1 && strings.Contains(b.p.Warnings[0], "a clock step")
		if warned != tt.warn {
			t.Errorf("%s: warnings %q", tt.name, b.p.Warnings)
		}
	}
}

func deref(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}
