package runner

import (
	"context"
	"runtime"
	"testing"
)

// BenchmarkChunkAllocs shows that the per-token path allocates nothing: it
// runs the same requests with 32 and with 512 output tokens against a
// zero-latency simulator in a child process (so the mallocs counted are the
// runner's alone) and reports the allocations per request of each, and
// their difference per extra chunk (allocs/chunk, which must be ~0: what a
// request allocates, it allocates once, not per token).
func BenchmarkChunkAllocs(b *testing.B) {
	e, _ := benchEngine(b, 256)
	plan := synthPlan(64, "reference")
	const reqs = 64
	perReq := func(out int) float64 {
		st := stage(out, 8)
		st.Requests.Each = reqs
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		res, err := runStageCtx(context.Background(), e, plan, st)
		runtime.ReadMemStats(&m1)
		if err != nil || res.Points[0].Failed != 0 {
			b.Fatalf("err %v failed %d", err, res.Points[0].Failed)
		}
		// Warm-ups and connection priming are in the count too; they are
		// the same for both lengths and cancel out in the difference.
		return float64(m1.Mallocs-m0.Mallocs) / reqs
	}
	const short, long = 32, 512
	var aShort, aLong float64
	for b.Loop() {
		aShort += perReq(short)
		aLong += perReq(long)
	}
	n := float64(b.N)
	b.ReportMetric(aShort/n, "allocs/req@32")
	b.ReportMetric(aLong/n, "allocs/req@512")
	b.ReportMetric((aLong-aShort)/n/(long-short), "allocs/chunk")
}
