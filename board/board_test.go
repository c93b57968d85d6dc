package board

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
)

var (
	realOnce sync.Once
	realRoot string
	realErr  string
)

// realRuns makes, once per test process, a parent directory of real result
// directories: two runs of a fast engine with the same labels, one of a
// slower engine, and a capacity search, each run against the in-process
// simulator.
func realRuns(t *testing.T) string {
	t.Helper()
	realOnce.Do(func() {
		root, err := os.MkdirTemp("", "board-real-")
		if err != nil {
			realErr = err.Error()
			return
		}
		realRoot = root
		runPlan(t, filepath.Join(root, "alpha", "night-1"), sweepPlan(1, 5), labelsOf("engine=alpha gpus=1 hardware=sim"))
		runPlan(t, filepath.Join(root, "beta", "night-1"), sweepPlan(3, 20), labelsOf("engine=beta gpus=2 hardware=sim"))
		runPlan(t, filepath.Join(root, "alpha", "night-2"), sweepPlan(1, 5), labelsOf("engine=alpha gpus=1 hardware=sim"))
		runPlan(t, filepath.Join(root, "search", "one"), searchPlan, labelsOf("engine=alpha"))
	})
	if realErr != "" {
		t.Fatal(realErr)
	}
	return realRoot
}

func TestMain(m *testing.M) {
	code := m.Run()
	if realRoot != "" {
		os.RemoveAll(realRoot)
	}
	os.Exit(code)
}

func mustBuild(t *testing.T, runs []Run, o Options) *Board {
	t.Helper()
	b, err := Build(runs, o)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func groupOf(t *testing.T, b *Board, plan string) *Group {
	t.Helper()
	for i := range b.Groups {
		if b.Groups[i].Plan == plan {
			return &b.Groups[i]
		}
	}
	t.Fatalf("no group of plan %s in %d groups", plan, len(b.Groups))
	return nil
}

// TestBoardOfRealRuns: a parent directory of real runs gives one group per
// plan's stage, rows named by the labels that differ (and by start time
// where they do not), ranked by the best output_tps_total of each run.
func TestBoardOfRealRuns(t *testing.T) {
	root := realRuns(t)
	runs, skips, err := Load([]string{root}, LoadOptions{})
	if err != nil || len(skips) != 0 || len(runs) != 4 {
		t.Fatalf("Load: %d runs, skips %v, err %v", len(runs), skips, err)
	}
	b := mustBuild(t, runs, Options{})
	if len(b.Groups) != 2 || len(b.Apart) != 0 || b.Runs != 4 {
		t.Fatalf("groups %d apart %v runs %d", len(b.Groups), b.Apart, b.Runs)
	}
	g := groupOf(t, b, "board-sweep")
	if g.Stage != "sweep" || g.Shape != "concurrency, chat, pinned, in 32, out 16" || g.Rank != "output_tps_total" {
		t.Errorf("group %s/%s shape %q rank %q", g.Plan, g.Stage, g.Shape, g.Rank)
	}
	if g.Common.String() != "hardware=sim" {
		t.Errorf("common labels %q", g.Common.String())
	}
	var names []string
	for i, r := range g.Rows {
		names = append(names, r.Name)
		if r.Place != i+1 || r.Key == nil {
			t.Fatalf("row %d: place %d key %v", i, r.Place, r.Key)
		}
		if i > 0 && *r.Key > *g.Rows[i-1].Key {
			t.Errorf("row %d's key %v beats row %d's %v", i, *r.Key, i-1, *g.Rows[i-1].Key)
		}
		best := bestOf(t, runs, r.Source, "output_tps_total")
		if *r.Key != best || *r.Values[0] != best {
			t.Errorf("%s: key %v, value %v; its best output_tps_total is %v", r.Name, *r.Key, *r.Values[0], best)
		}
	}
	alpha, beta := 0, 0
	for _, n := range names {
		switch {
		case strings.HasPrefix(n, "engine=alpha gpus=1 20"):
			alpha++ // the two alpha runs, told apart by their start times
		case n == "engine=beta gpus=2":
			beta++
		}
	}
	if alpha != 2 || beta != 1 {
		t.Errorf("row names %q", names)
	}
	if len(g.Views) != 3 || g.Views[1].Name != "per_gpu" {
		t.Fatalf("views %d", len(g.Views))
	}
	for _, v := range g.Views {
		checkFrontier(t, &v)
		if n := len(v.Series[0].Points) + len(v.Series[1].Points) + len(v.Series[2].Points); n != 9 {
			t.Errorf("view %s: %d points, want the 3 runs' 3 levels each", v.Name, n)
		}
	}
	s := groupOf(t, b, "board-search")
	if s.Rank != "capacity:interactive" || len(s.Rows) != 1 || s.Rows[0].Key == nil || *s.Rows[0].Key != 8 || s.Rows[0].Level != "probe 4 c=8" {
		t.Errorf("search group: rank %q rows %+v", s.Rank, s.Rows)
	}
}

// bestOf is the highest value of a metric over the levels of a run.
func bestOf(t *testing.T, runs []Run, source, metric string) float64 {
	t.Helper()
	for _, r := range runs {
		if r.Source == source {
			best := -1.0
			for _, l := range r.Stages[0].Levels {
				best = max(best, l.Metrics[metric])
			}
			return best
		}
	}
	t.Fatalf("no run %s", source)
	return 0
}

// checkFrontier: no frontier point is beaten on both axes by any point,
// and every other point is.
func checkFrontier(t *testing.T, v *View) {
	t.Helper()
	beats := func(a, b ViewPoint) bool {
		ge := func(x, y float64, higher bool) bool {
			if higher {
				return x >= y
			}
			return x <= y
		}
		return ge(a.X, b.X, v.X.Higher) && ge(a.Y, b.Y, v.Y.Higher) && (a.X != b.X || a.Y != b.Y)
	}
	var all []ViewPoint
	for _, s := range v.Series {
		all = append(all, s.Points...)
	}
	n := 0
	for _, p := range all {
		beaten := slices.ContainsFunc(all, func(q ViewPoint) bool { return beats(q, p) })
		if p.Frontier == beaten {
			t.Errorf("view %s: point %s (%v, %v): frontier %v, beaten %v", v.Name, p.Level, p.X, p.Y, p.Frontier, beaten)
		}
		if p.Frontier {
			n++
		}
	}
	if n == 0 || n != len(v.Frontier) {
		t.Errorf("view %s: %d frontier points marked, %d listed, %d points", v.Name, n, len(v.Frontier), len(all))
	}
}

// TestRankConditions: a condition limits the levels a run is ranked on;
// a lower-is-better metric ranks ascending; a condition no level meets
// leaves every row unranked, saying so.
func TestRankConditions(t *testing.T) {
	runs, _, err := Load([]string{realRuns(t)}, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := ParseRank("output_tps_total at concurrency <= 4")
	if err != nil {
		t.Fatal(err)
	}
	g := groupOf(t, mustBuild(t, runs, Options{Rank: r}), "board-sweep")
	for _, row := range g.Rows {
		if row.Level != "c=1" && row.Level != "c=4" {
			t.Errorf("%s ranked on %s, past the condition", row.Name, row.Level)
		}
	}
	r, _ = ParseRank("ttft_p95_ms at concurrency == 8")
	g = groupOf(t, mustBuild(t, runs, Options{Rank: r, Metrics: []string{"ttft_p95_ms"}}), "board-sweep")
	for i := 1; i < len(g.Rows); i++ {
		if *g.Rows[i].Key < *g.Rows[i-1].Key {
			t.Errorf("ttft_p95_ms ranks descending: %v before %v", *g.Rows[i-1].Key, *g.Rows[i].Key)
		}
	}
	r, _ = ParseRank("output_tps_total at ttft_p95_ms < 0")
	b := mustBuild(t, runs, Options{Rank: r})
	for _, g := range b.Groups {
		for _, row := range g.Rows {
			if row.Place != 0 || row.Key != nil || row.Note != "no level meets ttft_p95_ms < 0" {
				t.Errorf("%s/%s: place %d note %q", g.Plan, row.Name, row.Place, row.Note)
			}
		}
	}
	r, _ = ParseRank("capacity:interactive")
	b = mustBuild(t, runs, Options{Rank: r})
	if g := groupOf(t, b, "board-sweep"); g.Rows[0].Key != nil || !strings.Contains(g.Rows[0].Note, "not a capacity search") {
		t.Errorf("capacity rank of a sweep: %+v", g.Rows[0])
	}
	for _, bad := range []string{"throughput", "output_tps_total at ttft_p95 < 5", "output_tps_total at baseline == nil", "errors_by_kind", "capacity:", "output_tps_total at concurrency + 1"} {
		if _, err := ParseRank(bad); err == nil {
			t.Errorf("ParseRank(%q) accepted", bad)
		} else if strings.Contains(err.Error(), "\n") {
			t.Errorf("ParseRank(%q): a multi-line error: %v", bad, err)
		}
	}
	// The condition's errors carry the plan loader's hints.
	if _, err := ParseRank("output_tps_total at ttft_p95_ms < 300ms"); err == nil || !strings.Contains(err.Error(), "write 300 for 300ms") {
		t.Errorf("a condition with a unit: %v", err)
	}
	if _, err := Build(runs, Options{Metrics: []string{"ttft_p95"}}); err == nil || !strings.Contains(err.Error(), "ttft_p95_ms") {
		t.Errorf("unknown metric: %v", err)
	}
}

// TestRecomputedEqualsStored: the board drawn from the records alone equals
// the one drawn from the report.json files beside them.
func TestRecomputedEqualsStored(t *testing.T) {
	root := realRuns(t)
	a, _, err := Load([]string{root}, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := Load([]string{root}, LoadOptions{Recompute: true})
	if err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(mustBuild(t, a, Options{}))
	jb, _ := json.Marshal(mustBuild(t, b, Options{}))
	if string(ja) != string(jb) {
		t.Error("the board recomputed from the records differs from the one read from report.json")
	}
	if !reflect.DeepEqual(a, b) {
		t.Error("the runs recomputed from the records differ from the ones read from report.json")
	}
}

// TestBuildIsOrderFree: the same runs in another order give the same board.
func TestBuildIsOrderFree(t *testing.T) {
	runs, _, err := Load([]string{realRuns(t)}, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rev := slices.Clone(runs)
	slices.Reverse(rev)
	ja, _ := json.Marshal(mustBuild(t, runs, Options{}))
	jb, _ := json.Marshal(mustBuild(t, rev, Options{}))
	if string(ja) != string(jb) {
		t.Error("the board depends on the order of its runs")
	}
}
