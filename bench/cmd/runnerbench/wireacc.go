package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/runnerbench/runner/internal/engines"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/sim"
)

// The wire's accuracy: the runner's per-request TTFT and E2E against the
// simulator's record of the writes that carried the first token and the end
// of each stream, and its level ITL against the gaps between the writes; and
// against llm-d-inference-sim's configured TTFT and inter-token latency.

// wireAccuracy: 64 and 512 streams, quiet and with -busy spinning processes.
func wireAccuracy(md *strings.Builder, o options) error {
	fmt.Fprintf(md, "\n### Token times against the simulator's writes\n\n")
	fmt.Fprintf(md, "Simulator in its own process (50 ms prefill, 20 ms decode steps, 32 output tokens, one wave of `c` requests). Truth: the simulator's record of each token's write, [began, returned], or its kernel's transmit time when TCP held the bytes past the call; an error is the distance from the runner's time (request start + TTFT, start + E2E) to the write of the first token, of the stream's end (or of the body's last chunk, whichever is nearer), in ms, 0 inside it. ITL: the level's percentiles against those of the gaps between the writes' midpoints. Load average at the start: %s.\n\n", loadAvg())
	fmt.Fprintf(md, "| c | machine | token times | TTFT error p50 / p99 / max | E2E error p50 / p99 / max | ITL p50 runner / truth | ITL p99 runner / truth | read lag p50 / p99 ms | client-bound by |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, busy := range machines(o) {
		for _, conc := range []int{64, 512} {
			for _, user := range []bool{true, false} {
				if err := wireAccuracyRow(md, conc, busy, user); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// wireAccuracyRow runs one level against a fresh simulator and judges it;
// user times it by the runner's clock (before kernel times).
func wireAccuracyRow(md *strings.Builder, conc, busy int, user bool) error {
	stop := spin(busy)
	defer stop()
	cfg := sim.FastConfig()
	cfg.MaxNumSeqs = conc + 16
	cfg.TTFTMs, cfg.ITLMs = 50, 20
	cfg.TruthLimit = conc + 64
	s, err := startSim(cfg, true)
	if err != nil {
		return err
	}
	r, err := runRunner(job{URL: s.url, Conc: conc, Requests: conc, Output: 32, Input: 64, KeepSample: true, UserTimes: user})
	truths, terr := s.stop(true)
	if err != nil {
		return err
	}
	if terr != nil {
		return fmt.Errorf("simulator truth: %w", terr)
	}
	byNonce := map[string]sim.RequestTruth{}
	for _, t := range truths {
		byNonce[t.Nonce] = t
	}
	var ttft, e2e, gaps []float64
	for _, smp := range r.Samples {
		t, ok := byNonce[smp.Nonce]
		if !ok || len(t.TokenWritten) < 2 {
			continue
		}
		first := smp.StartNs + int64(smp.TTFTMs*1e6)
		b0, w0 := arrival(t, 0)
		ttft = append(ttft, outside(first, b0, w0))
		n := len(t.TokenWritten) - 1
		end := smp.StartNs + int64(smp.E2EMs*1e6)
		bn, wn := arrival(t, n)
		e2e = append(e2e, nearer(outside(end, bn, wn), end, t))
		for i := 1; i <= n; i++ {
			mid := func(j int) int64 { return (t.TokenWriteBegan[j].UnixNano() + t.TokenWritten[j].UnixNano()) / 2 }
			gaps = append(gaps, float64(mid(i)-mid(i-1))/1e6)
		}
	}
	if len(ttft) == 0 {
		return fmt.Errorf("c=%d: no request matched the simulator's truth", conc)
	}
	p := r.Point
	fmt.Fprintf(md, "| %d | %s | %s | %s | %s | %s / %.2f | %s / %.2f | %s / %s | %s |\n", conc, machineName(busy), source(&p),
		pct3abs(ttft), pct3abs(e2e), f2(p.ITLP50Ms), quantile(gaps, 0.5), f2(p.ITLP99Ms), quantile(gaps, 0.99),
		f2(p.ClientReadLagP50Ms), f2(p.ClientReadLagP99Ms), boundBy(&p))
	return nil
}

// wireInferenceSim: the runner against llm-d-inference-sim's configured
// TTFT (100 ms) and inter-token latency (10 ms) at 16 and 64 streams, with
// -busy spinning processes beside both.
func wireInferenceSim(md *strings.Builder, o options) error {
	root, err := engines.RepoRoot()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bin, err := engines.BuildInferenceSim(ctx, root)
	if err != nil {
		return err
	}
	fmt.Fprintf(md, "\n### Against llm-d-inference-sim's configured latencies\n\n")
	fmt.Fprintf(md, "llm-d-inference-sim (`--time-to-first-token 100ms --inter-token-latency 10ms`, 64 output tokens, `--max-num-seqs 128`) and the runner on the same machine, one level of 4 × `c` requests. The configured values are the truth here; the server's own lateness on a busy machine is in the error too. Load average at the start: %s.\n\n", loadAvg())
	fmt.Fprintf(md, "| c | machine | token times | TTFT p50 (100) | TPOT p50 (10) | ITL p50 (10) | ITL p99 | read lag p50 / p99 ms | client-bound by |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, busy := range machines(o) {
		for _, run := range []struct {
			conc int
			user bool
		}{{16, true}, {16, false}, {64, true}, {64, false}} {
			conc := run.conc
			stop := spin(busy)
			e, err := engines.StartInferenceSim(ctx, bin, "--time-to-first-token", "100ms", "--inter-token-latency", "10ms", "--max-num-seqs", "128")
			if err != nil {
				stop()
				return err
			}
			r, err := runRunner(job{URL: e.BaseURL, Model: engines.SimModel, Conc: conc, Requests: 4 * conc, Output: 64, Input: 64, UserTimes: run.user})
			e.Stop()
			stop()
			if err != nil {
				return err
			}
			p := r.Point
			fmt.Fprintf(md, "| %d | %s | %s | %s | %s | %s | %s | %s / %s | %s |\n", conc, machineName(busy), source(&p),
				f2(p.TTFTP50Ms), f2(p.TPOTP50Ms), f2(p.ITLP50Ms), f2(p.ITLP99Ms), f2(p.ClientReadLagP50Ms), f2(p.ClientReadLagP99Ms), boundBy(&p))
		}
	}
	return nil
}

// machineName names a load beside an experiment.
func machineName(busy int) string {
	if busy == 0 {
		return "quiet"
	}
	return fmt.Sprintf("busy %d", busy)
}

// source is how the level's token chunks were timed.
func source(p *result.Point) string {
	if p.TimestampSource == nil {
		return "user"
	}
	if *p.TimestampSource == "mixed" && p.TimestampKernelShare != nil {
		return fmt.Sprintf("mixed (%.1f%% kernel)", 100**p.TimestampKernelShare)
	}
	return *p.TimestampSource
}

// boundBy names the signals that flagged the level client-bound ("–": none).
func boundBy(p *result.Point) string {
	if !p.ClientBottleneck {
		return "–"
	}
	return strings.Join(p.ClientBottleneckBy, ", ")
}
