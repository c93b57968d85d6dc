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

// TestTrafficShards: what a sharded run splits of people's traffic and
// what it refuses. A users stage's levels are scheduled like any listed
// level's, and its users are shared out as streams are; probe requests are
// refused with one error naming the stage; unsharded and scheduled, they
// run; a series is one slot, its streams shared out. (Models and giving up
// split by sequence number: runner's TestShardsSendOneProcessRequests.)
func TestTrafficShards(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	users := &scenario.Stage{Name: "u", Users: []int{5, 8}, Duration: scenario.Duration(time.Second)}
	tt, err := NewTimetable(at, 0, 0, (&scenario.Plan{}).LoadPlans([]*scenario.Stage{users}))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tt.Slot("u", 1); !ok {
		t.Error("no slot for a users stage's second level")
	}
	lvl := shape.Level{Spec: result.LevelSpec{Label: "users=5", Users: 5}, Concurrency: 5, Load: shape.Users(5, 0, nil), Duration: time.Second}
	if err := cut(&lvl, result.Shard{Index: 0, Count: 2}); err != nil || lvl.Concurrency != 3 || lvl.Load.Conns() != 3 {
		t.Errorf("shard 0 of 2 of 5 users: %d users (%v)", lvl.Concurrency, err)
	}
	probed := &scenario.Stage{Name: "p", Concurrency: []int{4}, Duration: scenario.Duration(time.Second), Probe: &scenario.Probe{Rate: 1}}
	plans := (&scenario.Plan{}).LoadPlans([]*scenario.Stage{probed})
	if _, err := NewSharding(result.Shard{Index: 0, Count: 2}, at, 0, 0, "k", plans); err == nil || !strings.Contains(err.Error(), "stage p sends probe requests") {
		t.Errorf("a sharded stage with probes: %v", err)
	}
	if _, err := NewSharding(result.Shard{Index: 0, Count: 1}, at, 0, 0, "k", plans); err != nil {
		t.Errorf("a scheduled, unsharded stage with probes: %v", err)
	}
	// A series is one level as long as its pieces, its streams shared out:
	// steps of 1, 3 and 5 streams, a second each; of 2 shards, shard 0
	// runs streams 0, 2 and 4, shard 1 streams 1 and 3.
	series := &scenario.Stage{Name: "s", Series: &scenario.Series{Over: scenario.OverConcurrency,
		Steps: &scenario.SeriesSteps{From: 1, To: 5, Step: 2, Duration: scenario.Duration(time.Second)}}}
	sp := (&scenario.Plan{}).LoadPlans([]*scenario.Stage{series})
	tt, err = NewTimetable(at, 0, 0, sp)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tt.Slot("s", 1); ok || !tt.End().Equal(at.Add(3*time.Second)) {
		t.Errorf("a series of 3 s: a second level %v, the timetable ends at %v", ok, tt.End())
	}
	spec := func(label string, conc int, rate *float64) result.LevelSpec {
		return result.LevelSpec{Label: label, Concurrency: conc, Rate: rate}
	}
	for i, want := range []int{3, 2} {
		whole, _ := shape.For(shape.Stage{Plan: sp[0], Spec: spec}).Next(nil)
		if err := cut(&whole, result.Shard{Index: i, Count: 2}); err != nil || whole.Concurrency != want || whole.Load.Conns() != want {
			t.Errorf("shard %d of 2 of a series of up to 5 streams: %d streams (%v)", i, whole.Concurrency, err)
		}
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
