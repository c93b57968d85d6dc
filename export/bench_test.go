package export

import (
	"context"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/runnerbench/runner/result"
)

// BenchmarkCPUAt10kRPS measures the CPU export costs a run of 10,000
// requests a second, each of 128 output tokens (1.28 million inter-token
// gaps a second), exporting every second to a loopback remote-write
// receiver and an OTLP one: each iteration is one second of that load, run
// with and without the exporter, and cpu-ms/s is the difference in the
// process's CPU time (user + system) per second of load, receivers
// included. On a 2-core machine shared with other work the figure is noisy;
// run with -count to see its spread.
//
//	go test ./export -run '^$' -bench CPUAt10kRPS -benchtime 5x
func BenchmarkCPUAt10kRPS(b *testing.B) {
	rc := &receiver{series: map[string]float64{}}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	otlp := httptest.NewServer(&sink{})
	defer otlp.Close()
	var with, without time.Duration
	for i := 0; i < b.N; i++ {
		without += load(b, nil)
		e, err := New(Options{Targets: []Target{{To: PrometheusRW, URL: srv.URL}, {To: OTLP, URL: otlp.URL}},
			Plan: "bench", RunID: "r", Interval: time.Second})
		if err != nil {
			b.Fatal(err)
		}
		with += load(b, e)
		for _, st := range e.Close(context.Background()) {
			if st.Dropped > 0 {
				b.Fatalf("dropped: %+v", st)
			}
		}
	}
	b.ReportMetric(float64(with-without)/float64(time.Millisecond)/float64(b.N), "cpu-ms/s")
	b.ReportMetric(float64(without)/float64(time.Millisecond)/float64(b.N), "base-cpu-ms/s")
}

// sink answers every request with 200.
type sink struct{}

func (sink) ServeHTTP(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(200) }

// load runs one second of 10,000 requests a second through e (nil: only
// the load's own work) and returns the CPU time the process spent.
func load(b *testing.B, e *Exporter) time.Duration {
	b.Helper()
	gaps := make([]time.Duration, 256)
	for i := range gaps {
		gaps[i] = 9*time.Millisecond + time.Duration(i)*time.Microsecond
	}
	reqs := make([]result.Request, 100)
	for i := range reqs {
		reqs[i] = result.Request{Stage: "s", OK: true, E2EMs: 1200 + float64(i), TTFTMs: ms(40 + float64(i)/10), OutputTokens: 128, DispatchLagMs: 0.02}
	}
	if e != nil {
		e.LevelStarted("s", 0, "c=1000", "sim")
	}
	before := cpu()
	start := time.Now()
	for tick := range 100 { // 100 ticks of 10 ms, 100 requests each
		for j := range reqs {
			if e != nil {
				e.Request(&reqs[j])
				if j%2 == 0 {
					e.Gaps(gaps)
				}
			}
		}
		if e != nil && tick%10 == 0 {
			e.Progress("s", 0, tick*100, 1000)
		}
		time.Sleep(time.Until(start.Add(time.Duration(tick+1) * 10 * time.Millisecond)))
	}
	if e != nil {
		e.LevelDone("s", 0, &result.Point{Completed: 10000}, nil)
	}
	return cpu() - before
}

func cpu() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
