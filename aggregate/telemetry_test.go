package aggregate

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/sim/simconfig"
)

func TestHistogramQuantile(t *testing.T) {
	h := &result.HistogramDelta{Count: 40, Sum: 8, Buckets: []result.HistogramBucket{{LE: 0.1, Count: 10}, {LE: 0.2, Count: 30}, {LE: 0.5, Count: 40}}}
	for _, c := range []struct{ q, want float64 }{{0.1, 0.04}, {0.5, 0.15}, {0.95, 0.44}, {1, 0.5}} {
		got, past := HistogramQuantile(h, c.q)
		if math.Abs(got-c.want) > 1e-12 || past {
			t.Errorf("q %v: %v (past %v), want %v", c.q, got, past, c.want)
		}
	}
	h.Count = 50 // ten above the last bound
	if got, past := HistogramQuantile(h, 0.95); got != 0.5 || !past {
		t.Errorf("past the last bound: %v %v", got, past)
	}
	if got, _ := HistogramQuantile(&result.HistogramDelta{}, 0.5); !math.IsNaN(got) {
		t.Errorf("empty: %v", got)
	}
}

// TestServerLatency: the server's histograms' deltas become its latency
// percentiles and means, and the TTFT gap the client's mean minus the
// server's.
func TestServerLatency(t *testing.T) {
	ttft := result.HistogramDelta{Count: 20, Sum: 2, Buckets: []result.HistogramBucket{{LE: 0.05, Count: 0}, {LE: 0.1, Count: 10}, {LE: 0.25, Count: 20}}}
	queue := result.HistogramDelta{Count: 20, Sum: 0.4, Buckets: []result.HistogramBucket{{LE: 0.3, Count: 20}}}
	b := builder{spec: &result.LevelSpec{}, rec: &result.LevelRecord{Server: &result.ServerDelta{Histograms: map[string]result.HistogramDelta{
		"vllm:time_to_first_token_seconds": ttft, "vllm:request_queue_time_seconds": queue}}}}
	b.p.TTFTMeanMs = result.Ptr(130.0)
	b.p.Completed = 20
	b.serverLatency()
	b.ttftGap()
	p := b.p
	if p.ServerTTFTMeanMs == nil || *p.ServerTTFTMeanMs != 100 || *p.ServerTTFTP50Ms != 100 || *p.ServerTTFTP95Ms != 235 {
		t.Fatalf("server ttft mean %v p50 %v p95 %v", p.ServerTTFTMeanMs, p.ServerTTFTP50Ms, p.ServerTTFTP95Ms)
	}
	if p.ServerQueueMeanMs == nil || *p.ServerQueueMeanMs != 20 {
		t.Errorf("queue mean %v", p.ServerQueueMeanMs)
	}
	if p.TTFTGapMeanMs == nil || *p.TTFTGapMeanMs != 30 {
		t.Errorf("gap %v", p.TTFTGapMeanMs)
	}
	if p.ServerPrefillP50Ms != nil || p.ServerE2EMeanMs != nil {
		t.Error("a family the server lacks has values")
	}
	if notes := strings.Join(p.Notes, "\n"); !strings.Contains(notes, "interpolated") {
		t.Errorf("notes %q", notes)
	}
}

// TestTTFTGapNote: the note on the client's TTFT calls the gap network,
// the HTTP front end and the client only where the server's own figures
// rule its queue out, on servers whose truth is known: vLLM's TTFT runs
// from arrival (it holds the queue, and every request is timed in its
// queue histogram), llm-d-inference-sim's is the prefill alone, and it
// times only the requests that waited (seen on v0.10.2: 4 streams on 2
// slots, client 289.36 ms, TTFT 100, prefill 100.89, 12 of 16 waited
// 211.32 ms each).
func TestTTFTGapNote(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	type queue struct{ sumMs, count float64 }
	for _, c := range []struct {
		name             string
		client, ttft     float64
		queue            *queue
		prefill, waiting *float64
		want, not        string
	}{
		{"vLLM: TTFT holds the queue", 130, 100, &queue{16 * 20, 16}, f(80), nil,
			"(queue 20.00 ms, prefill 80.00 ms), and 30.00 ms is network, the HTTP front end and the client", "outside"},
		{"llm-d-inference-sim: 12 of 16 waited", 289.36, 100, &queue{12 * 211.32, 12}, f(100.89), f(2),
			"(queue 158.49 ms a request: 12 of 16 waited, 211.32 ms each on average, prefill 100.89 ms), which starts after the queue (its mean is below the queue's); of the 189.36 ms outside it, the queue is 158.49 ms and 30.87 ms is network", ""},
		{"llm-d-inference-sim: the prefill alone matches it", 120, 50, &queue{16 * 40, 16}, f(51), f(3),
			"(it matches the prefill alone); of the 70.00 ms outside it, the queue is 40.00 ms and 30.00 ms is network", ""},
		{"more queue than gap", 120, 50, &queue{16 * 80, 16}, f(51), f(3),
			"the queue accounts for all", "is network"},
		{"no queue histogram, requests waited", 396.44, 50, nil, f(53.91), f(8),
			"and 346.44 ms is outside it: the server's queue (up to 8 requests waited, and no histogram times the wait)", ""},
		{"no queue histogram, nothing waited", 204, 50, nil, f(53.91), f(0),
			"and 154.00 ms is network, the HTTP front end and the client (the server's waiting gauge read 0 at every read in the window)", ""},
		{"no queue histogram, no gauge", 204, 50, nil, nil, nil,
			"and 154.00 ms is outside it: network, the HTTP front end and the client, or a queue the server does not report", ""},
		{"a queue, and no way to tell whether the TTFT holds it", 130, 100, &queue{16 * 20, 16}, nil, f(4),
			"and 30.00 ms is outside it: network, the HTTP front end and the client, and the 20.00 ms of queue too if this server's TTFT starts after its queue", ""},
		{"a queue too short to matter", 130, 100, &queue{16 * 0.2, 16}, nil, f(1),
			"(queue 0.20 ms), and 30.00 ms is network", "outside"},
		// The built-in simulator, known by the lag histograms only it
		// exposes: its TTFT runs from arrival.
		{"sim", 91.86, 69.62, &queue{16 * 29.66, 16}, nil, f(12),
			"(queue 29.66 ms), and 22.24 ms is network, the HTTP front end and the client", "outside"},
	} {
		rec := &result.LevelRecord{Server: &result.ServerDelta{Histograms: map[string]result.HistogramDelta{}}}
		if c.name == "sim" {
			rec.Server.Histograms[simconfig.MetricLagRatio] = result.HistogramDelta{}
		}
		if q := c.queue; q != nil {
			rec.Server.Histograms["vllm:request_queue_time_seconds"] = result.HistogramDelta{Count: q.count, Sum: q.sumMs / 1000}
		}
		b := builder{rec: rec, p: result.Point{Completed: 16, TTFTMeanMs: &c.client, ServerTTFTMeanMs: &c.ttft, ServerPrefillMeanMs: c.prefill, ServerWaitingMax: c.waiting}}
		b.ttftGap()
		note := strings.Join(b.p.Notes, "\n")
		if !strings.Contains(note, c.want) || c.not != "" && strings.Contains(note, c.not) {
			t.Errorf("%s: %q\nwant %q", c.name, note, c.want)
		}
	}
}

// dcgmReads are DCGM reads every step from start to end: two GPUs at w0
// and w1 W, their energy counters in whole mJ, refreshed every collect (0:
// at every read), or blank.
func dcgmReads(start, end time.Time, step, collect time.Duration, w0, w1 float64, blankEnergy bool) []*result.TelemetryScrape {
	var out []*result.TelemetryScrape
	for at := start; !at.After(end); at = at.Add(step) {
		seen := at.Sub(start)
		if collect > 0 {
			seen = seen.Truncate(collect)
		}
		r := &result.TelemetryScrape{Time: at, Target: "gpus", Stage: "s"}
		for i, w := range []float64{w0, w1} {
			l := map[string]string{"gpu": string(rune('0' + i)), "UUID": "GPU-" + string(rune('a'+i)), "pod": "changes-" + at.String()}
			e := math.Floor(1e9 + w*seen.Seconds()*1000)
			if blankEnergy {
				e = 9223372036854775794
			}
			r.Samples = append(r.Samples,
				result.TelemetrySample{Metric: "DCGM_FI_DEV_POWER_USAGE", Labels: l, Value: w},
				result.TelemetrySample{Metric: "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", Labels: l, Value: e},
				result.TelemetrySample{Metric: "DCGM_FI_DEV_GPU_UTIL", Labels: l, Value: 90 + float64(i)*4},
				result.TelemetrySample{Metric: "DCGM_FI_DEV_FB_USED", Labels: l, Value: 1000},
				result.TelemetrySample{Metric: "DCGM_FI_DEV_MEMORY_TEMP", Labels: l, Value: 9223372036854775794},
			)
		}
		out = append(out, r)
	}
	return out
}

// gpuPoint is the point of a 10 s level that emitted tokens, with reads.
func gpuPoint(reads []*result.TelemetryScrape, tokens int) result.Point {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	rec := &result.LevelRecord{Stage: "s", Start: t0, End: t0.Add(10 * time.Second), WallNs: int64(10 * time.Second)}
	l := NewLevel(result.LevelSpec{Concurrency: 1}, 0)
	l.Add(&result.Request{Stage: "s", Start: t0, OK: true, OutputTokens: tokens, E2EMs: 9000, TTFTMs: result.Ptr(10.0), Chunks: tokens})
	for _, r := range reads {
		l.AddTelemetry(r)
	}
	return l.Point(rec)
}

// TestGPUEnergy: two GPUs at 100 and 200 W for a 10 s window used 3000 J,
// from the energy counters (refreshed at every read, or every 3 s as a
// slow exporter's are) or, with the counter blank, from power integrated
// over the reads; energy per token is mean power over output tok/s.
func TestGPUEnergy(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name    string
		collect time.Duration
		blank   bool
		source  string
		tol     float64 // J
	}{
		{"counter every read", 0, false, "energy counter deltas", 0.01},
		{"counter every 3 s", 3 * time.Second, false, "energy counter deltas", 300 * 0.5},
		{"blank counter", 0, true, "power integrated", 1e-9},
	} {
		t.Run(c.name, func(t *testing.T) {
			reads := dcgmReads(t0.Add(-4*time.Second), t0.Add(14*time.Second), 500*time.Millisecond, c.collect, 100, 200, c.blank)
			p := gpuPoint(reads, 1500)
			if p.GPUCount == nil || *p.GPUCount != 2 {
				t.Fatalf("gpu_count %v (warnings %q)", p.GPUCount, p.Warnings)
			}
			if p.EnergyJ == nil || math.Abs(*p.EnergyJ-3000) > c.tol {
				t.Fatalf("energy_j %v, want 3000 ± %v (source %v)", p.EnergyJ, c.tol, *p.EnergySource)
			}
			if !strings.Contains(*p.EnergySource, c.source) || !strings.Contains(*p.EnergySource, "2 GPUs") {
				t.Errorf("source %q, want %q", *p.EnergySource, c.source)
			}
			if math.Abs(*p.GPUPowerMeanW-*p.EnergyJ/10) > 0.1 || *p.GPUPowerMaxW != 300 {
				t.Errorf("power mean %v max %v", *p.GPUPowerMeanW, *p.GPUPowerMaxW)
			}
			wantPerTok := result.Round(1000**p.EnergyJ/1500, 3)
			if *p.EnergyPerOutputTokMJ != wantPerTok || math.Abs(*p.OutputTokensPerJoule - 1500 / *p.EnergyJ) > 1e-3 {
				t.Errorf("per token %v (want %v), per joule %v", *p.EnergyPerOutputTokMJ, wantPerTok, *p.OutputTokensPerJoule)
			}
			// Mean power over output tok/s is energy per token.
			if got := *p.GPUPowerMeanW / p.OutputTPSTotal * 1000; math.Abs(got-*p.EnergyPerOutputTokMJ) > 1 {
				t.Errorf("power/tps %v mJ, energy per token %v", got, *p.EnergyPerOutputTokMJ)
			}
			if *p.GPUUtilMeanPercent != 92 || *p.GPUMemoryUsedMaxMiB != 2000 {
				t.Errorf("util %v memory %v", *p.GPUUtilMeanPercent, *p.GPUMemoryUsedMaxMiB)
			}
		})
	}
	// A level shorter than the exporter's refresh: the counter cannot
	// bracket it, so power is integrated.
	reads := dcgmReads(t0.Add(-1*time.Second), t0.Add(11*time.Second), time.Second, 30*time.Second, 100, 200, false)
	p := gpuPoint(reads, 1500)
	if p.EnergyJ == nil || *p.EnergyJ != 3000 || !strings.Contains(*p.EnergySource, "power integrated") {
		t.Errorf("slow exporter: energy %v from %v", p.EnergyJ, p.EnergySource)
	}
	// No reads at all: no GPU metrics.
	if p := gpuPoint(nil, 10); p.GPUCount != nil || p.EnergyJ != nil {
		t.Error("GPU metrics without telemetry")
	}
}

// TestAMDEnergy: AMD's names and microjoules, and a partition other than 0
// (zero power, no energy) not counted as a GPU.
func TestAMDEnergy(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	var reads []*result.TelemetryScrape
	for at := t0.Add(-time.Second); !at.After(t0.Add(11 * time.Second)); at = at.Add(time.Second) {
		s := at.Sub(t0).Seconds() + 1
		l := func(id, part string) map[string]string {
			return map[string]string{"gpu_id": id, "gpu_partition_id": part, "hostname": "h", "serial_number": "x" + id}
		}
		reads = append(reads, &result.TelemetryScrape{Time: at, Target: "amd", Stage: "s", Samples: []result.TelemetrySample{
			{Metric: "gpu_package_power", Labels: l("0", "0"), Value: 700},
			{Metric: "gpu_package_power", Labels: l("1", "0"), Value: 500},
			{Metric: "gpu_package_power", Labels: l("1", "1"), Value: 0},
			{Metric: "gpu_energy_consumed", Labels: l("0", "0"), Value: 5e12 + 700e6*s},
			{Metric: "gpu_energy_consumed", Labels: l("1", "0"), Value: 6e12 + 500e6*s},
			{Metric: "gpu_gfx_activity", Labels: l("0", "0"), Value: 80},
			{Metric: "gpu_gfx_activity", Labels: l("1", "0"), Value: 60},
		}})
	}
	p := gpuPoint(reads, 1200)
	if p.GPUCount == nil || *p.GPUCount != 2 || p.EnergyJ == nil || math.Abs(*p.EnergyJ-12000) > 0.1 {
		t.Fatalf("gpus %v energy %v (%v)", p.GPUCount, p.EnergyJ, p.Warnings)
	}
	if !strings.Contains(*p.EnergySource, "AMD") || *p.EnergyPerOutputTokMJ != 10000 || *p.GPUUtilMeanPercent != 70 {
		t.Errorf("source %q per token %v util %v", *p.EnergySource, *p.EnergyPerOutputTokMJ, *p.GPUUtilMeanPercent)
	}
}

// TestServerState: the endpoint's gauges over the window (reads outside it
// left out), and a failed read of a target warned about.
func TestServerState(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	var reads []*result.TelemetryScrape
	for i := -2; i <= 12; i++ {
		running, waiting, kv := float64(i%4), 0.0, 0.1*float64(i%5)
		if i < 0 || i > 10 {
			running, waiting, kv = 100, 100, 1 // outside the window
		}
		if i == 5 {
			waiting = 3
		}
		reads = append(reads, &result.TelemetryScrape{Time: t0.Add(time.Duration(i) * time.Second), Target: "ep", Endpoint: true, Stage: "s", Samples: []result.TelemetrySample{
			{Metric: "vllm:num_requests_running", Labels: map[string]string{"model_name": "m"}, Value: running},
			{Metric: "vllm:num_requests_waiting", Labels: map[string]string{"model_name": "m"}, Value: waiting},
			{Metric: "vllm:kv_cache_usage_perc", Value: kv},
		}})
	}
	reads = append(reads, &result.TelemetryScrape{Time: t0, Target: "gpus", Stage: "s", Error: "no answer within 1s"})
	p := gpuPoint(reads, 10)
	// running over i = 0..10: 0 1 2 3 0 1 2 3 0 1 2 (mean 15/11)
	if p.ServerRunningMax == nil || *p.ServerRunningMax != 3 || *p.ServerRunningMean != result.Round(15.0/11, 2) {
		t.Fatalf("running %v %v", p.ServerRunningMean, p.ServerRunningMax)
	}
	if *p.ServerWaitingMax != 3 || *p.KVCacheUsageMax != 0.4 {
		t.Errorf("waiting max %v kv max %v", *p.ServerWaitingMax, *p.KVCacheUsageMax)
	}
	w := strings.Join(p.Warnings, "\n")
	if !strings.Contains(w, "telemetry gpus: 1 of 1 reads during this level failed (last: no answer within 1s)") {
		t.Errorf("warnings %q", w)
	}
}

func TestAtAndIntegral(t *testing.T) {
	t0 := time.Unix(1000, 0)
	pts := []TimeValue{{t0, 0}, {t0.Add(2 * time.Second), 4}, {t0.Add(4 * time.Second), 4}}
	if v, ok := At(pts, t0.Add(time.Second)); !ok || v != 2 {
		t.Errorf("At 1 s: %v %v", v, ok)
	}
	if _, ok := At(pts, t0.Add(-time.Second)); ok {
		t.Error("At before the first read")
	}
	// ∫ over [1 s, 3 s] of the ramp 2..4 then 4: 3 + 4 = 7.
	if v, held, ok := Integral(pts, t0.Add(time.Second), t0.Add(3*time.Second)); !ok || held || v != 7 {
		t.Errorf("integral %v %v %v", v, held, ok)
	}
	if _, held, _ := Integral(pts, t0.Add(3*time.Second), t0.Add(6*time.Second)); !held {
		t.Error("an edge past the last read is not said to be held")
	}
}
