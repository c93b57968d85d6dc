package board

import (
	"strings"
	"testing"
	"time"

	"github.com/runnerbench/runner/result"
)

// synthetic is a run of plan p, stage s, whose levels have the given
// (per-user, total, ttft) values.
func synthetic(source, labels string, start int, levels ...[3]float64) Run {
	st := Stage{Name: "s", Load: "concurrency", API: "chat", Mode: "pinned"}
	for i, l := range levels {
		st.Levels = append(st.Levels, Level{
			Label: result.LevelLabel(1<<i, nil, 0, 0),
			Metrics: map[string]float64{"concurrency": float64(int(1) << i), "input_tokens": 64, "output_tokens": 32,
				"output_tps_per_stream": l[0], "output_tps_total": l[1], "ttft_p95_ms": l[2]},
		})
	}
	return Run{Source: source, Labels: labelsOf(labels), StopReason: result.StopCompleted, Verdict: "pass",
		Facts:  result.Facts{PlanName: "p", PlanHash: "h", RunnerVersion: "v1", StartedAt: time.Date(2026, 12, 1, 0, start, 0, 0, time.UTC)},
		Stages: []Stage{st}}
}

// TestFrontierTiesAndGPUs: a point equal to a frontier point is on the
// frontier too, one beaten on one axis and equal on the other is not; the
// per-GPU view leaves out runs without a numeric gpus label and says so,
// and divides by it.
func TestFrontierTiesAndGPUs(t *testing.T) {
	runs := []Run{
		synthetic("a", "engine=a gpus=2", 1, [3]float64{100, 1000, 10}, [3]float64{50, 4000, 30}),
		synthetic("b", "engine=b gpus=eight", 2, [3]float64{100, 1000, 10}, [3]float64{50, 3000, 20}),
		synthetic("c", "engine=c", 3, [3]float64{80, 1000, 9}),
	}
	b := mustBuild(t, runs, Options{})
	g := &b.Groups[0]
	tp := &g.Views[0]
	want := map[string]bool{"engine=a gpus=2 c=1": true, "engine=a gpus=2 c=2": true, "engine=b gpus=eight c=1": true, "engine=b gpus=eight c=2": false, "engine=c c=1": false}
	for _, s := range tp.Series {
		for _, p := range s.Points {
			if w := want[s.Name+" "+p.Level]; p.Frontier != w {
				t.Errorf("throughput view: %s %s frontier %v, want %v", s.Name, p.Level, p.Frontier, w)
			}
		}
	}
	if got := strings.Join(tp.FrontierRuns(), ","); got != "engine=a gpus=2,engine=b gpus=eight" {
		t.Errorf("frontier runs %q", got)
	}
	pg := &g.Views[1]
	if pg.Name != "per_gpu" || len(pg.Series) != 1 || pg.Series[0].Points[1].Y != 2000 || len(pg.Notes) != 1 || !strings.Contains(pg.Notes[0], "2 of the group's 3 runs have no gpus label") {
		t.Errorf("per-GPU view: %+v", pg)
	}
	// TTFT: lower is better on X; c's faster first token keeps it on.
	if tt := &g.Views[2]; !tt.Series[2].Points[0].Frontier || tt.Series[0].Points[0].Frontier {
		t.Errorf("ttft view: %+v", tt.Series)
	}
	checkFrontier(t, tp)
}

// TestGroupsApartAndShapes: a stage that could not run and an interrupted
// run are set apart with their reasons; another load shape of the same
// stage is a group of its own, each noting the other; no run is in two
// places.
func TestGroupsApartAndShapes(t *testing.T) {
	ok := synthetic("ok", "engine=a", 1, [3]float64{10, 100, 5})
	failed := synthetic("failed", "engine=b", 2, [3]float64{10, 100, 5})
	failed.Stages[0].Error = "endpoint e: connection refused"
	killed := synthetic("killed", "engine=c", 3, [3]float64{10, 100, 5})
	killed.StopReason = result.StopInterrupted
	longer := synthetic("longer", "engine=d", 4, [3]float64{10, 100, 5})
	longer.Stages[0].Levels[0].Metrics["output_tokens"] = 256
	b := mustBuild(t, []Run{ok, failed, killed, longer}, Options{})
	if len(b.Apart) != 2 || b.Apart[0].Source != "failed" || !strings.Contains(b.Apart[0].Reason, "connection refused") || b.Apart[1].Source != "killed" || !strings.Contains(b.Apart[1].Reason, "interrupted") {
		t.Errorf("apart: %+v", b.Apart)
	}
	if len(b.Groups) != 2 {
		t.Fatalf("%d groups", len(b.Groups))
	}
	for _, g := range b.Groups {
		if len(g.Rows) != 1 || len(g.Notes) != 1 || !strings.Contains(g.Notes[0], "load shape is") {
			t.Errorf("group %s: rows %d notes %q", g.Shape, len(g.Rows), g.Notes)
		}
	}
	if _, err := Build(nil, Options{}); err != nil {
		t.Errorf("an empty board: %v", err)
	}
}

// TestEnergyView: the energy view (output tokens per joule against per-user
// speed) is drawn when some run measured energy, with the runs that did not
// left without points, and is not drawn at all when none did.
func TestEnergyView(t *testing.T) {
	runs := []Run{
		synthetic("a", "engine=a", 1, [3]float64{100, 1000, 10}, [3]float64{50, 4000, 30}),
		synthetic("b", "engine=b", 2, [3]float64{100, 1000, 10}),
	}
	energyOf := func(b *Board) *View {
		for i := range b.Groups[0].Views {
			if v := &b.Groups[0].Views[i]; v.Name == "energy" {
				return v
			}
		}
		return nil
	}
	if v := energyOf(mustBuild(t, runs, Options{})); v != nil {
		t.Errorf("an energy view without energy: %+v", v)
	}
	runs[0].Stages[0].Levels[0].Metrics["output_tokens_per_joule"] = 2.5
	runs[0].Stages[0].Levels[1].Metrics["output_tokens_per_joule"] = 6
	v := energyOf(mustBuild(t, runs, Options{}))
	if v == nil || len(v.Series) != 2 || len(v.Series[0].Points) != 2 || len(v.Series[1].Points) != 0 {
		t.Fatalf("energy view %+v", v)
	}
	if !v.Series[0].Points[0].Frontier || !v.Series[0].Points[1].Frontier {
		t.Errorf("a's two levels trade per-user speed for tokens per joule: both on the frontier: %+v", v.Series[0].Points)
	}
	checkFrontier(t, v)
}

// TestShapeWithoutMode: a stage of an API without output has no mode in its
// shape, whether its report says none or (an earlier version's) pinned, so
// the two group together; a chat stage keeps its mode.
func TestShapeWithoutMode(t *testing.T) {
	for _, c := range []struct{ api, mode, want string }{
		{"embeddings", "", "concurrency, embeddings"},
		{"embeddings", "pinned", "concurrency, embeddings"},
		{"score", "", "concurrency, score"},
		{"chat", "pinned", "concurrency, chat, pinned"},
		{"chat", "natural", "concurrency, chat, natural"},
		{"api-of-a-later-version", "natural", "concurrency, api-of-a-later-version, natural"},
	} {
		s := Stage{Load: "concurrency", API: c.api, Mode: c.mode}
		if got := s.Shape(); got != c.want {
			t.Errorf("%s %q: shape %q, want %q", c.api, c.mode, got, c.want)
		}
	}
}
