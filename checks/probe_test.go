package checks

import (
	"strings"
	"testing"

	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
)

// A level-scope check reads its level's probe requests as probe.METRIC:
// each level, and each part of it (a turn here), sees its own level's probe
// point; a level whose probes measured nothing fails the check, naming
// probe.ttft_p95_ms as null.
func TestProbeMetrics(t *testing.T) {
	probes := func(c int, ttft *float64) result.Point {
		p := point(c, 0, ttft, 0)
		p.ProbeRequests = true
		return p
	}
	turn := point(1, 0, result.Ptr(10.0), 5)
	turn.Turn = 1
	res := &result.Stage{Name: "s", Points: []result.Point{
		point(1, 0, result.Ptr(10.0), 5), turn, probes(1, result.Ptr(120.0)),
		point(8, 0, result.Ptr(10.0), 40), probes(8, result.Ptr(900.0)),
		point(32, 0, result.Ptr(10.0), 90), probes(32, nil),
	}}
	stage := &scenario.Stage{Name: "s", Checks: []*scenario.Check{
		check(t, "new users", "probe.ttft_p95_ms < 500", "level", "fail", ""),
	}}
	out := EvaluateStage(stage, res, nil)
	want := map[string]string{
		"c=1": "pass", "c=1 turn=1": "pass", "c=1 probes": "pass",
		"c=8": "fail", "c=8 probes": "fail",
		"c=32": "fail", "c=32 probes": "fail",
	}
	for _, o := range out {
		if o.Status != want[o.LevelLabel] {
			t.Errorf("%s: %s (%s), want %s", o.LevelLabel, o.Status, o.Message, want[o.LevelLabel])
		}
		if o.LevelLabel == "c=32" && !strings.Contains(o.Message, "probe.ttft_p95_ms is null") {
			t.Errorf("c=32: %q does not name the null probe metric", o.Message)
		}
		if o.LevelLabel == "c=8" && o.Values["probe.ttft_p95_ms"] != 900.0 {
			t.Errorf("c=8 read probe.ttft_p95_ms %v, want its own level's 900", o.Values["probe.ttft_p95_ms"])
		}
	}
	if len(out) != len(want) {
		t.Errorf("%d outcomes, want %d", len(out), len(want))
	}
}
