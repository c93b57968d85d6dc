package runner

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/runnerbench/runner/runner/body"
)

// BenchmarkLevel runs whole closed-loop levels against a zero-latency
// simulator in a child process, so the CPU figures are the engine's alone:
// chunks/s is the token-chunk rate one runner process sustains, and
// cpu-ns/chunk is its CPU cost per streamed chunk (HTTP, SSE framing, JSON
// scan, timing, aggregation).
func BenchmarkLevel(b *testing.B) {
	for _, conc := range []int{1, 64, 256} {
		b.Run(fmt.Sprint("c=", conc), func(b *testing.B) {
			e, _ := benchEngine(b, 1024)
			const out = 256
			st := stage(out, conc)
			st.Requests.Each = max(conc, 64)
			plan := synthPlan(64, "reference")
			var chunks, cpu int64
			var wall time.Duration
			b.ResetTimer()
			for b.Loop() {
				var ru0, ru1 syscall.Rusage
				_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
				t0 := time.Now()
				res, err := runStageCtx(context.Background(), e, plan, st)
				if err != nil || res.Points[0].Failed != 0 {
					b.Fatalf("err %v failed %d", err, res.Points[0].Failed)
				}
				wall += time.Since(t0)
				_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
				cpu += int64(cpuTime(&ru1) - cpuTime(&ru0))
				chunks += int64(st.Requests.Each*out + body.WarmupOutputTokens)
			}
			b.ReportMetric(float64(chunks)/wall.Seconds(), "chunks/s")
			b.ReportMetric(float64(cpu)/float64(chunks), "cpu-ns/chunk")
		})
	}
}
