package aggregate

import (
	"strings"
	"testing"

	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/sim/simconfig"
)

// lagDelta is a simulator's delta over a window: 800 steps, 40 late, and
// the requests by lag ratio (how many at most each bound of
// simconfig.LagRatioBounds and above the one before; above: past them all).
func lagDelta(at map[float64]float64, above float64) *result.ServerDelta {
	h := result.HistogramDelta{}
	for _, le := range simconfig.LagRatioBounds {
		h.Count += at[le]
		h.Buckets = append(h.Buckets, result.HistogramBucket{LE: le, Count: h.Count})
	}
	h.Count += above
	return &result.ServerDelta{
		Counters: map[string]float64{simconfig.MetricSteps: 800, simconfig.MetricLateSteps: 40,
			simconfig.MetricStepLateness: 0.1234, simconfig.MetricRequestLag: 0.024},
		Histograms: map[string]result.HistogramDelta{simconfig.MetricLagRatio: h,
			simconfig.MetricTTFTLagRatio: h, simconfig.MetricDecodeLagRatio: h, simconfig.MetricE2ELagRatio: h},
	}
}

// TestSimLag: the built-in simulator's lateness over the window becomes the
// level's sim_* metrics; the level is flagged sim_behind, with a warning
// naming the signal and its figures, when some request was stretched by
// more than 2.5%; another server's counters give neither.
func TestSimLag(t *testing.T) {
	for _, tt := range []struct {
		name    string
		d       *result.ServerDelta
		metrics bool
		behind  int64
		max     *float64 // each part's stretch maximum
		want    bool
	}{
		{"on time", lagDelta(map[float64]float64{0.01: 24}, 0), true, 0, result.Ptr(0.01), false},
		{"within 2.5%", lagDelta(map[float64]float64{0.01: 20, 0.025: 4}, 0), true, 0, result.Ptr(0.025), false},
		{"one stretched by up to 10%", lagDelta(map[float64]float64{0.01: 23, 0.1: 1}, 0), true, 1, result.Ptr(0.1), true},
		{"past every bound", lagDelta(map[float64]float64{0.01: 20, 2: 3}, 1), true, 4, nil, true},
		{"another server", &result.ServerDelta{Counters: map[string]float64{"vllm:generation_tokens": 100}}, false, 0, nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := builder{spec: &result.LevelSpec{Concurrency: 1}, rec: &result.LevelRecord{Server: tt.d}}
			b.simLag()
			p := b.p
			if (p.SimLateSteps != nil) != tt.metrics || (p.SimBehindRequests != nil) != tt.metrics {
				t.Fatalf("metrics %v %v, want present: %v", p.SimLateSteps, p.SimBehindRequests, tt.metrics)
			}
			if p.SimBehind != tt.want || (len(p.Warnings) > 0) != tt.want {
				t.Fatalf("sim_behind %v, warnings %q", p.SimBehind, p.Warnings)
			}
			for _, v := range []*float64{p.SimTTFTStretchMax, p.SimDecodeStretchMax, p.SimE2EStretchMax} {
				if (v == nil) != (tt.max == nil) || tt.max != nil && *v != *tt.max {
					t.Errorf("stretch maximum %v, want %v", v, tt.max)
				}
			}
			if !tt.metrics {
				return
			}
			if *p.SimLateSteps != 40 || *p.SimLatenessMs != 123.4 || *p.SimBehindRequests != tt.behind || *p.SimLagMeanMs != 1 {
				t.Errorf("late steps %d, lateness %v ms, behind %d, lag mean %v ms", *p.SimLateSteps, *p.SimLatenessMs, *p.SimBehindRequests, *p.SimLagMeanMs)
			}
			if tt.want && (!strings.HasPrefix(p.Warnings[0], "sim_behind: ") || !strings.Contains(p.Warnings[0], "40 of 800 engine steps")) {
				t.Errorf("warning %q", p.Warnings[0])
			}
		})
	}
	b := builder{spec: &result.LevelSpec{}, rec: &result.LevelRecord{}}
	b.simLag() // no counters at all
	if b.p.SimLateSteps != nil || b.p.SimBehind {
		t.Errorf("without a server delta: %+v", b.p)
	}
}
