package shard

import (
	"strings"
	"testing"
	"time"

	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/runner/shape"
	"github.com/runnerbench/runner/scenario"
)

// TestTimetable lays out slots stage after stage and refuses a stage whose
// levels are not bounded by duration.
func TestTimetable(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	a := &scenario.Stage{Name: "a", Concurrency: []int{1, 2}, Duration: scenario.Duration(time.Second)}
	b := &scenario.Stage{Name: "b", Rate: []float64{3}, Duration: scenario.Duration(2 * time.Second)}
	tt, err := NewTimetable(at, 500*time.Millisecond, 250*time.Millisecond, (&scenario.Plan{}).LoadPlans([]*scenario.Stage{a, b}))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		stage            string
		idx              int
		start, open, end time.Duration // from at
	}{
		{"a", 0, 0, 500 * time.Millisecond, 1750 * time.Millisecond},
		{"a", 1, 1750 * time.Millisecond, 2250 * time.Millisecond, 3500 * time.Millisecond},
		{"b", 0, 3500 * time.Millisecond, 4000 * time.Millisecond, 6250 * time.Millisecond},
	} {
		s, ok := tt.Slot(c.stage, c.idx)
		if !ok || !s.Start.Equal(at.Add(c.start)) || !s.Open.Equal(at.Add(c.open)) || !s.End.Equal(at.Add(c.end)) {
			t.Errorf("%s level %d: slot %+v, %v", c.stage, c.idx, s, ok)
		}
	}
	if _, ok := tt.Slot("b", 1); ok {
		t.Error("a slot for a level the plan does not have")
	}
	if !tt.End().Equal(at.Add(6250 * time.Millisecond)) {
		t.Errorf("end %v", tt.End())
	}
	unbounded := &scenario.Stage{Name: "c", Concurrency: []int{1}, Requests: scenario.PerLevel{Each: 5}}
	if _, err := NewTimetable(at, 0, 0, (&scenario.Plan{}).LoadPlans([]*scenario.Stage{a, unbounded})); err == nil || !strings.Contains(err.Error(), "stage c has no duration") {
		t.Errorf("unbounded stage: %v", err)
	}
	if _, err := NewSharding(result.Shard{Index: 1, Count: 2}, time.Time{}, 0, 0, "k", (&scenario.Plan{}).LoadPlans([]*scenario.Stage{a})); err == nil || !strings.Contains(err.Error(), "--start-at") {
		t.Errorf("sharded without --start-at: %v", err)
	}
	capped := &scenario.Stage{Name: "d", Rate: []float64{5}, MaxConcurrency: 2, Duration: scenario.Duration(time.Second)}
	if _, err := NewSharding(result.Shard{Index: 0, Count: 3}, at, 0, 0, "k", (&scenario.Plan{}).LoadPlans([]*scenario.Stage{capped})); err == nil || !strings.Contains(err.Error(), "max_concurrency 2") {
		t.Errorf("a cap smaller than the shard count: %v", err)
	}
	if sh, err := NewSharding(result.Shard{Index: 0, Count: 1}, time.Time{}, 0, 0, "k", (&scenario.Plan{}).LoadPlans([]*scenario.Stage{unbounded})); sh != nil || err != nil {
		t.Errorf("a whole unscheduled run: %v, %v", sh, err)
	}
}

// TestCutThroughSplit: a level is cut by its shape's own Split (streams and
// cap shared out, the rate divided, an empty part flagged), and a shape
// that cannot be split ends the stage with an error naming the level.
func TestCutThroughSplit(t *testing.T) {
	part := result.Shard{Index: 2, Count: 3}
	lvl := shape.Level{Spec: result.LevelSpec{Label: "c=7"}, Concurrency: 7, Requests: 10, Load: shape.Closed(7, 0)}
	if err := cut(&lvl, part); err != nil || lvl.Concurrency != 2 || lvl.Requests != 3 || lvl.Part.Empty || lvl.Load.Conns() != 2 {
		t.Fatalf("closed loop cut: %+v %+v, %v", lvl, lvl.Part, err)
	}
	lvl = shape.Level{Spec: result.LevelSpec{Label: "rate=6"}, Duration: time.Second, Load: shape.Open(6, "", 0, 1, 4)}
	if err := cut(&lvl, part); err != nil || lvl.Concurrency != 1 || *lvl.Part.Rate != 2 || lvl.Part.Empty {
		t.Fatalf("open loop cut: %+v %+v, %v", lvl, lvl.Part, err)
	}
	lvl = shape.Level{Spec: result.LevelSpec{Label: "c=2"}, Concurrency: 2, Load: shape.Closed(2, 0)}
	if err := cut(&lvl, part); err != nil || !lvl.Part.Empty {
		t.Fatalf("a shard without streams is not empty: %+v, %v", lvl.Part, err)
	}
	lvl = shape.Level{Spec: result.LevelSpec{Label: "rate=3"}, Load: shape.Replayed([]time.Duration{0}, 3, 0)}
	if err := cut(&lvl, part); err == nil || !strings.Contains(err.Error(), "level rate=3: a trace replay cannot be split") {
		t.Fatalf("replay cut: %v", err)
	}
}

// TestUntilRefused: a stage whose levels run until:, or whose sweep stops
// at saturation, is refused by a sharded or scheduled run, saying why.
func TestUntilRefused(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	until := &scenario.Stage{Name: "u", Concurrency: []int{1, 2}, Until: scenario.UntilRules{List: []string{"fixed", "decided"}},
		MaxRequests: scenario.PerLevel{Each: 100}, Duration: scenario.Duration(time.Second)}
	sat := &scenario.Stage{Name: "s", Concurrency: []int{1, 2}, StopAtSaturation: true, Duration: scenario.Duration(time.Second)}
	for _, c := range []struct {
		st   *scenario.Stage
		want string
	}{
		{until, "stage u runs its levels until: (decided): a sharded or scheduled (--start-at) run refuses it: each shard sees only its part"},
		{sat, "stage s has stop_at_saturation: a sharded or scheduled (--start-at) run refuses it"},
	} {
		for _, part := range []result.Shard{{Index: 0, Count: 2}, {Index: 0, Count: 1}} {
			_, err := NewSharding(part, at, 0, 0, "k", (&scenario.Plan{}).LoadPlans([]*scenario.Stage{c.st}))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s, %d shards: %v", c.st.Name, part.Count, err)
			}
		}
	}
}
