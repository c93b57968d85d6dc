package pipeline

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/runnerbench/runner/internal/gpuexporters"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/runner/telemetry"
	"github.com/runnerbench/runner/scenario"
)

func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkTelemetryCost measures what telemetry costs the client. First
// the sampler alone: rounds of reads of a DCGM page, an AMD page and the
// simulator's /metrics (all in this process, so their serving counts too:
// an upper bound), as CPU per round, which at a 1 s interval is that share
// of one core. Then the same open-loop level (rate 40/s, 6 s) against the
// built-in simulator with and without those three read every second: its
// dispatch lag p99 and max, and the client's CPU. Run it alone on a quiet
// machine (go test ./pipeline -run '^$' -bench TelemetryCost -benchtime 1x).
// RUNNER_COST_RATE and RUNNER_COST_DURATION (default 40 and 6s) set the
// level's load: a p99 of 232 requests is their 3rd largest lag, so a
// figure to rely on wants more (RUNNER_COST_RATE=200
// RUNNER_COST_DURATION=30s), and RUNNER_COST_PAIRS (default 2) more pairs.
func BenchmarkTelemetryCost(b *testing.B) {
	dcgm, err := gpuexporters.Start(gpuexporters.DCGM, gpuexporters.Options{Collect: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer dcgm.Close()
	amd, err := gpuexporters.Start(gpuexporters.AMD, gpuexporters.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer amd.Close()

	// The sampler alone, 100 rounds as fast as 10 ms apart.
	targets := []*telemetry.Target{
		{Name: "nvidia", URL: dcgm.URL, Keep: telemetry.KeepFor(nil)},
		{Name: "amd", URL: amd.URL, Keep: telemetry.KeepFor(nil)},
	}
	s := telemetry.New(targets, 10*time.Millisecond, time.Second)
	reads := 0
	c0, w0 := cpuNow(), time.Now()
	lr := s.Level(context.Background(), "s", 0, 0, nil, func(*result.TelemetryScrape) { reads++ })
	lr.WaitFirst()
	time.Sleep(time.Second)
	lr.Stop()
	cpu, wall := cpuNow()-c0, time.Since(w0)
	s.Close()
	rounds := float64(reads) / 2
	perRound := cpu / time.Duration(rounds)
	b.ReportMetric(float64(perRound.Microseconds()), "µs-cpu/round")
	b.ReportMetric(100*perRound.Seconds()/1, "%core-at-1s")
	b.Logf("sampler alone: %d reads (%.0f rounds) in %v, %v CPU: %v a round of two GPU pages, %.3f%% of a core at a 1 s interval",
		reads, rounds, wall.Round(time.Millisecond), cpu.Round(time.Millisecond), perRound, 100*perRound.Seconds())

	level := func(withTelemetry bool) result.Point {
		tel := ""
		if withTelemetry {
			tel = fmt.Sprintf("telemetry:\n  interval: 1s\n  targets:\n    - {name: nvidia, url: %q}\n    - {name: amd, url: %q}\n", dcgm.URL, amd.URL)
		} else {
			tel = "telemetry: {endpoint: false}\n"
		}
		src := []byte(`version: 1
name: cost
` + tel + `endpoints:
  sim:
    simulator: {ttft_ms: 20, itl_ms: 5, max_num_seqs: 256}
prompts:
  p: {synthetic: {input_tokens: 64}}
stages:
  - name: open
    endpoint: sim
    prompts: p
    output_tokens: 40
    rate: [` + costEnv("RUNNER_COST_RATE", "40") + `]
    duration: ` + costEnv("RUNNER_COST_DURATION", "6s") + `
    seed: 3
`)
		p, err := scenario.LoadBytes("cost.yaml", src, b.TempDir(), scenario.Options{})
		if err != nil {
			b.Fatal(err)
		}
		rep, err := Run(context.Background(), Options{Plan: p, PlanBytes: src, Logger: zerolog.Nop()})
		if err != nil {
			b.Fatal(err)
		}
		return rep.Stages[0].Points[0]
	}
	pairs, _ := strconv.Atoi(costEnv("RUNNER_COST_PAIRS", "2"))
	for i := range 2 * max(1, pairs) {
		with := i%2 == 1
		pt := level(with)
		name := map[bool]string{false: "without", true: "with"}[with]
		b.Logf("%-7s telemetry: %d requests, dispatch lag p99 %s ms max %s ms, client CPU %s%%, gpu_count %v",
			name, pt.NRequests, ptr(pt.DispatchLagP99Ms), ptr(pt.DispatchLagMaxMs), ptr(pt.ClientCPUPercent), ptrInt(pt.GPUCount))
	}
}

func costEnv(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func ptr(p *float64) string {
	if p == nil {
		return "null"
	}
	return fmt.Sprint(*p)
}

func ptrInt(p *int) string {
	if p == nil {
		return "null"
	}
	return fmt.Sprint(*p)
}
