package runner

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
)

// scriptedSink stops each until level once stopAt of its requests have
// finished, and the sweep after stopAfter levels, recording what the
// engine asked and told it.
type scriptedSink struct {
	*aggregate.Stage
	stopAt, stopAfter int

	mu      sync.Mutex
	looks   int
	recs    []*result.LevelRecord
	skipped []result.LevelSpec
}

func (s *scriptedSink) Look(rec *result.LevelRecord, done int) *result.LevelStop {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.looks++
	if rec.Spec.Until == "" || rec.Start.IsZero() || rec.WallNs <= 0 {
		panic("a look without the level's rule or window")
	}
	if done < s.stopAt {
		return nil
	}
	return &result.LevelStop{Rule: rec.Spec.Until, Reason: result.StopDecided, Requests: done}
}

func (s *scriptedSink) LevelDone(rec *result.LevelRecord) result.Point {
	s.mu.Lock()
	s.recs = append(s.recs, rec)
	s.mu.Unlock()
	return s.Stage.LevelDone(rec)
}

func (s *scriptedSink) StopSweep() bool { return s.stopAfter > 0 && len(s.recs) >= s.stopAfter }

func (s *scriptedSink) Skipped(specs []result.LevelSpec) { s.skipped = specs }

// TestUntilLevels: an until level stops claiming once a look stops it (the
// requests in flight then finish), records the stop, and a level that no
// look stops runs to its cap and says which; a fixed level of the list is
// never looked at; a sweep whose sink says it is saturated ends there and
// names the levels it skipped.
func TestUntilLevels(t *testing.T) {
	s := startSim(t, fastSim())
	e, _ := newEngine(t, s.URL(), nil)
	st := stage(4, 1, 4, 2, 8)
	st.Until = scenario.UntilRules{List: []string{"fixed", "decided", "decided", "decided"}}
	st.Requests = scenario.PerLevel{Each: 6}
	st.MaxRequests = scenario.PerLevel{List: []int{10, 200, 12, 20}}
	st.StopAtSaturation = true
	plan := synthPlan(20, "reference")
	(&scenario.Plan{Prompts: plan.Prompts, Stages: []*scenario.Stage{st}}).ApplyDefaults()
	sink := &scriptedSink{Stage: aggregate.NewStage(0), stopAt: 30, stopAfter: 3}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.RunStage(ctx, plan.LoadPlan(st), sink); err != nil {
		t.Fatal(err)
	}
	res := sink.Result()
	if len(res.Points) != 3 || len(sink.skipped) != 1 || sink.skipped[0].Label != "c=8" || sink.skipped[0].Until != "decided" {
		t.Fatalf("%d levels ran, skipped %+v", len(res.Points), sink.skipped)
	}
	fixed, stopped, capped := sink.recs[0], sink.recs[1], sink.recs[2]
	if fixed.Stop != nil || fixed.Spec.Until != "" || res.Points[0].NRequests != 6 {
		t.Errorf("fixed level: stop %+v, rule %q, %d requests", fixed.Stop, fixed.Spec.Until, res.Points[0].NRequests)
	}
	if s := stopped.Stop; s == nil || s.Reason != result.StopDecided || s.Requests < 30 {
		t.Fatalf("c=4: stop %+v", s)
	}
	// Four streams: at most three were still in flight at the look.
	if n := res.Points[1].NRequests; n < stopped.Stop.Requests || n > stopped.Stop.Requests+3 {
		t.Errorf("c=4 sent %d, stopped at %d finished", n, stopped.Stop.Requests)
	}
	if s := capped.Stop; s == nil || s.Reason != result.StopCapped || s.Cap != "max_requests" || res.Points[2].NRequests != 12 {
		t.Errorf("c=2: stop %+v, %d requests", s, res.Points[2].NRequests)
	}
	if !slices.ContainsFunc(sink.recs, func(r *result.LevelRecord) bool { return r.Spec.Until == "decided" }) || sink.looks < 30 {
		t.Errorf("%d looks", sink.looks)
	}
}

// TestUntilDuration: an until level capped by max_duration alone runs
// until then and says so.
func TestUntilDuration(t *testing.T) {
	s := startSim(t, fastSim())
	e, _ := newEngine(t, s.URL(), nil)
	st := stage(4, 2)
	st.Until = scenario.UntilRules{Each: "decided"}
	st.MaxDuration = scenario.Duration(300 * time.Millisecond)
	plan := synthPlan(20, "reference")
	(&scenario.Plan{Prompts: plan.Prompts, Stages: []*scenario.Stage{st}}).ApplyDefaults()
	sink := &scriptedSink{Stage: aggregate.NewStage(0), stopAt: 1 << 30}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.RunStage(ctx, plan.LoadPlan(st), sink); err != nil {
		t.Fatal(err)
	}
	rec := sink.recs[0]
	if s := rec.Stop; s == nil || s.Reason != result.StopCapped || s.Cap != "max_duration" || rec.Wall() < 300*time.Millisecond {
		t.Errorf("stop %+v after %s", s, rec.Wall())
	}
}
