package aggregate

import (
	"strings"
	"testing"

	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/sim/simconfig"
)

// TestSimLag: the built-in simulator's lateness counters over the window
// become the level's sim_* metrics, and the level is flagged sim_behind,
// with a warning naming the signal and its figures, when more than 1% of
// its requests were served behind the model; another server's counters
// give neither.
func TestSimLag(t *testing.T) {
	counters := func(timed, behind float64) map[string]float64 {
		return map[string]float64{
			simconfig.MetricSteps: 800, simconfig.MetricLateSteps: 40, simconfig.MetricStepLateness: 0.1234,
			simconfig.MetricTimedRequests: timed, simconfig.MetricBehindRequests: behind, simconfig.MetricRequestLag: 0.024,
		}
	}
	for _, tt := range []struct {
		name   string
		c      map[string]float64
		metric bool
		want   bool
	}{
		{"on time", counters(24, 0), true, false},
		{"one of 24 behind", counters(24, 1), true, true},
		{"1% of 1000 behind", counters(1000, 10), true, false},
		{"past 1% of 1000", counters(1000, 11), true, true},
		{"another server", map[string]float64{"vllm:generation_tokens": 100}, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := builder{spec: &result.LevelSpec{Concurrency: 1}, rec: &result.LevelRecord{Server: &result.ServerDelta{Counters: tt.c}}}
			b.simLag()
			p := b.p
			if (p.SimLateSteps != nil) != tt.metric || (p.SimBehindRequests != nil) != tt.metric {
				t.Fatalf("metrics %v %v, want present: %v", p.SimLateSteps, p.SimBehindRequests, tt.metric)
			}
			if p.SimBehind != tt.want || (len(p.Warnings) > 0) != tt.want {
				t.Fatalf("sim_behind %v, warnings %q", p.SimBehind, p.Warnings)
			}
			if !tt.metric {
				return
			}
			if *p.SimLateSteps != 40 || *p.SimLatenessMs != 123.4 || *p.SimLagMeanMs != result.Round(24/tt.c[simconfig.MetricTimedRequests], 3) {
				t.Errorf("late steps %d, lateness %v ms, lag mean %v ms", *p.SimLateSteps, *p.SimLatenessMs, *p.SimLagMeanMs)
			}
			if tt.want && !strings.HasPrefix(p.Warnings[0], "sim_behind: ") || tt.want && !strings.Contains(p.Warnings[0], "40 of 800 engine steps") {
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
