package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/runnerbench/runner/internal/gpuexporters"
	"github.com/runnerbench/runner/records"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
)

// TestTelemetryRun runs a plan against the built-in simulator with two GPU
// exporters (the recorded DCGM and AMD pages, served over loopback with
// advancing counters) as telemetry targets: telemetry.jsonl holds every
// read, the point's server state, server latency and GPU energy come from
// them, the energy matches what the exporters' GPUs truly used over the
// window, and `runner report` recomputes the same points from the records.
func TestTelemetryRun(t *testing.T) {
	dcgm, err := gpuexporters.Start(gpuexporters.DCGM, gpuexporters.Options{Collect: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer dcgm.Close()
	amd, err := gpuexporters.Start(gpuexporters.AMD, gpuexporters.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer amd.Close()
	plan := fmt.Sprintf(`version: 1
name: telemetry
telemetry:
  interval: 200ms
  timeout: 2s
  targets:
    - {name: nvidia, url: %q}
    - {name: amd, url: %q}
endpoints:
  sim:
    simulator: {ttft_ms: 30, itl_ms: 4, max_num_seqs: 2}
prompts:
  p: {synthetic: {input_tokens: 32}}
stages:
  - name: s
    endpoint: sim
    prompts: p
    output_tokens: 60
    concurrency: [4]
    requests: 24
    seed: 7
    slices: 1s
`, dcgm.URL, amd.URL)
	dir := t.TempDir()
	src := []byte(plan)
	p, err := scenario.LoadBytes("telemetry.yaml", src, t.TempDir(), scenario.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := records.Create(dir, src)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), Options{Plan: p, PlanBytes: src, Records: w, Logger: zerolog.Nop()})
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	pt := rep.Stages[0].Points[0]
	run, err := records.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	lvl := run.Stages[0].Levels[0]

	reads, err := records.LevelTelemetry(dir, "s", 0)
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]int{}
	var first, last time.Time
	for _, r := range reads {
		if r.Error != "" {
			// A busy machine can miss a read's timeout: a missing sample,
			// warned about, which the figures below must survive.
			t.Logf("a failed read: %+v", r)
		}
		k := r.Target
		if r.Endpoint {
			k = "endpoint:" + k
		}
		by[k]++
		if first.IsZero() || r.Time.Before(first) {
			first = r.Time
		}
		if r.Time.After(last) {
			last = r.Time
		}
	}
	if by["nvidia"] < 3 || by["amd"] < 3 || by["endpoint:sim"] < 3 {
		t.Fatalf("reads by target %v", by)
	}
	if !first.Before(lvl.Start) || !last.After(lvl.End) {
		t.Errorf("reads from %v to %v do not bracket the window %v .. %v", first, last, lvl.Start, lvl.End)
	}

	// The simulator runs at most 2 of the 4 streams: the rest wait. A read
	// sees at most the 4 streams' requests plus the 2 a step just finished:
	// the simulator hands out a step's last tokens, and the client sends its
	// next requests, before the simulator books the finished ones out of
	// its running gauge; on a busy machine its loop can wait for a core in
	// between (a read saw 5 at load average 7).
	if pt.ServerRunningMax == nil || *pt.ServerRunningMax > 2 || *pt.ServerRunningMax < 1 {
		t.Errorf("server_running_max %v", *pt.ServerRunningMax)
	}
	if pt.ServerWaitingMax == nil || *pt.ServerWaitingMax < 1 || *pt.ServerWaitingMax > 3 {
		t.Errorf("server_waiting_max %v", *pt.ServerWaitingMax)
	}
	most := 0.0
	defer func() { t.Logf("the most requests a read inside the window saw: %v", most) }()
	for _, r := range reads {
		if !r.Endpoint || r.Time.Before(lvl.Start) || r.Time.After(lvl.End) {
			continue
		}
		n := 0.0
		for _, s := range r.Samples {
			if s.Metric == "vllm:num_requests_running" || s.Metric == "vllm:num_requests_waiting" {
				n += s.Value
			}
		}
		most = max(most, n)
		if n > 4+2 {
			t.Errorf("a read inside the window at %v sees %v requests of 4 streams and 2 slots", r.Time, n)
		}
	}
	// The simulator's own TTFT histogram: at least its 30 ms; the client's
	// mean is the server's plus transport.
	if pt.ServerTTFTMeanMs == nil || *pt.ServerTTFTMeanMs < 29 || pt.TTFTGapMeanMs == nil || *pt.TTFTGapMeanMs < -1 {
		t.Errorf("server ttft mean %v gap %v", pt.ServerTTFTMeanMs, pt.TTFTGapMeanMs)
	}
	if pt.ServerQueueMeanMs == nil {
		t.Error("no server queue time")
	}

	// GPU energy over the window, against the exporters' truth.
	truth := dcgm.EnergyJ(lvl.Start, lvl.End) + amd.EnergyJ(lvl.Start, lvl.End)
	if pt.GPUCount == nil || *pt.GPUCount != 4 || pt.EnergyJ == nil {
		t.Fatalf("gpus %v energy %v warnings %q", pt.GPUCount, pt.EnergyJ, pt.Warnings)
	}
	// DCGM's counter refreshes every 100 ms and is read every 200 ms: each
	// edge may be off by about a read interval's energy, more when a read
	// near an edge timed out.
	tol := dcgm.PowerW()*1.0 + 1
	if math.Abs(*pt.EnergyJ-truth) > tol {
		t.Errorf("energy_j %v, truth %v ± %v (%s)", *pt.EnergyJ, truth, tol, *pt.EnergySource)
	}
	if !strings.Contains(*pt.EnergySource, "nvidia (DCGM exporter, 2 GPUs)") || !strings.Contains(*pt.EnergySource, "amd (AMD device metrics exporter, 2 GPUs)") {
		t.Errorf("energy source %q", *pt.EnergySource)
	}
	if pt.GPUPowerMaxW == nil || *pt.GPUPowerMaxW != result.Round(dcgm.PowerW()+amd.PowerW(), 1) {
		t.Errorf("gpu_power_max_w %v, want %v", pt.GPUPowerMaxW, dcgm.PowerW()+amd.PowerW())
	}
	if pt.EnergyPerOutputTokMJ == nil || pt.OutputTokensPerJoule == nil {
		t.Fatal("no energy per token")
	}
	if got := *pt.GPUPowerMeanW / pt.OutputTPSTotal * 1000; math.Abs(got-*pt.EnergyPerOutputTokMJ)/got > 0.01 {
		t.Errorf("mean power over tok/s %v mJ, energy per token %v", got, *pt.EnergyPerOutputTokMJ)
	}
	// Each slice holds the telemetry read in it: the GPUs' power (constant
	// here) and the engine's running requests (at most its 2 slots).
	if pt.Slices == nil || len(pt.Slices.Windows) < 2 {
		t.Fatalf("slices %+v", pt.Slices)
	}
	withPower := 0
	for i, w := range pt.Slices.Windows {
		if v, ok := w.Series["GPU power (W, all GPUs)"]; ok {
			withPower++
			if want := dcgm.PowerW() + amd.PowerW(); math.Abs(v-want) > 1e-6*want {
				t.Errorf("slice %d: GPU power %v, want %v", i, v, want)
			}
		}
		if v, ok := w.Series["server requests running"]; ok && (v < 0 || v > 2) {
			t.Errorf("slice %d: %v requests running of 2 slots", i, v)
		}
	}
	if withPower < len(pt.Slices.Windows)-1 {
		t.Errorf("GPU power in %d of %d slices", withPower, len(pt.Slices.Windows))
	}
	if len(rep.Telemetry) != 2 || rep.Telemetry[0].Target != "nvidia" || rep.Telemetry[0].Reads < 3 {
		t.Errorf("report telemetry %+v", rep.Telemetry)
	}

	t.Logf("reads %v; running max %v waiting max %v; server TTFT mean %v queue mean %v, client TTFT mean %v, gap %v; energy %v J (truth %.1f) %s; %v mJ/token, %v tok/J, power mean %v max %v",
		by, *pt.ServerRunningMax, *pt.ServerWaitingMax, *pt.ServerTTFTMeanMs, *pt.ServerQueueMeanMs, *pt.TTFTMeanMs, *pt.TTFTGapMeanMs,
		*pt.EnergyJ, truth, *pt.EnergySource, *pt.EnergyPerOutputTokMJ, *pt.OutputTokensPerJoule, *pt.GPUPowerMeanW, *pt.GPUPowerMaxW)

	// runner report: the same points from the records.
	again, err := Recompute(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(rep.Stages[0].Points)
	b, _ := json.Marshal(again.Stages[0].Points)
	if string(a) != string(b) {
		t.Errorf("recomputed points differ:\nlive %s\nagain %s", a, b)
	}
}

// TestMergeTelemetry: every shard of a sharded run read the same GPU
// exporter; the merged level counts its GPUs once (the lowest shard's
// reads) and its energy over the merged window, and the merged directory
// keeps every shard's reads.
func TestMergeTelemetry(t *testing.T) {
	dirs := writeShards(t, 2, nil)
	for i, dir := range dirs {
		w, err := records.NewJSONL(dir + "/" + records.FileTelemetry)
		if err != nil {
			t.Fatal(err)
		}
		for at := t0.Add(-2 * time.Second); at.Before(t0.Add(15 * time.Second)); at = at.Add(time.Second) {
			// Shard 1's exporter (the same GPUs, seen from the other
			// machine) reports twice the power: it must not be counted.
			w0 := 100.0 * float64(i+1)
			s := at.Sub(t0.Add(-2 * time.Second)).Seconds()
			r := &result.TelemetryScrape{Time: at, Target: "gpus", Stage: "s", Level: 0, Shard: i, Samples: []result.TelemetrySample{
				{Metric: "DCGM_FI_DEV_POWER_USAGE", Labels: map[string]string{"gpu": "0", "UUID": "GPU-x"}, Value: w0},
				{Metric: "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", Labels: map[string]string{"gpu": "0", "UUID": "GPU-x"}, Value: 1e6 + w0*s*1000},
			}}
			if err := w.Write(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	sh, err := ReadShards(dirs)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir() + "/merged"
	rep, err := sh.Write(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := rep.Stages[0].Points[0]
	run, err := records.ReadRun(out)
	if err != nil {
		t.Fatal(err)
	}
	lvl := run.Stages[0].Levels[0]
	want := 100 * time.Duration(lvl.WallNs).Seconds()
	if p.GPUCount == nil || *p.GPUCount != 1 || p.EnergyJ == nil || math.Abs(*p.EnergyJ-want) > 0.1 {
		t.Fatalf("merged: gpus %v energy %v, want 1 GPU, %v J", p.GPUCount, p.EnergyJ, want)
	}
	n := 0
	if err := records.EachTelemetry(out, func(*result.TelemetryScrape) error { n++; return nil }); err != nil || n != 34 {
		t.Errorf("merged telemetry.jsonl: %d reads, %v", n, err)
	}
}

// TestTelemetryHostileTarget: a telemetry target that never answers costs
// the run failed reads, a warning on the level and on the run, and at most
// a timeout at each edge of the level: never a stalled level.
func TestTelemetryHostileTarget(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	src := []byte(fmt.Sprintf(`version: 1
name: hostile-telemetry
telemetry:
  interval: 100ms
  timeout: 300ms
  targets:
    - {name: tarpit, url: %q}
endpoints:
  sim:
    simulator: {ttft_ms: 5, itl_ms: 1}
prompts:
  p: {synthetic: {input_tokens: 16}}
stages:
  - {name: s, endpoint: sim, prompts: p, output_tokens: 8, concurrency: [2], requests: 20}
`, srv.URL+"/metrics"))
	p, err := scenario.LoadBytes("h.yaml", src, t.TempDir(), scenario.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	w, err := records.Create(dir, src)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	rep, err := Run(context.Background(), Options{Plan: p, PlanBytes: src, Records: w, Logger: zerolog.Nop()})
	_ = w.Close()
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	pt := rep.Stages[0].Points[0]
	if pt.Failed != 0 || pt.Completed != 20 {
		t.Errorf("%d completed, %d failed", pt.Completed, pt.Failed)
	}
	// The level itself is a fraction of a second; each edge may wait one
	// timeout for the tarpit.
	if took > 20*time.Second {
		t.Errorf("the run took %v", took)
	}
	if !strings.Contains(strings.Join(pt.Warnings, "\n"), "telemetry tarpit:") || !strings.Contains(strings.Join(rep.Warnings, "\n"), "telemetry target tarpit") {
		t.Errorf("level warnings %q, run warnings %q", pt.Warnings, rep.Warnings)
	}
	failed := 0
	_ = records.EachTelemetry(dir, func(r *result.TelemetryScrape) error {
		if r.Target == "tarpit" && strings.Contains(r.Error, "no answer within 300ms") {
			failed++
		}
		return nil
	})
	if failed < 2 || rep.Telemetry[0].Failed != failed {
		t.Errorf("%d failed reads recorded, report says %+v", failed, rep.Telemetry)
	}
}
