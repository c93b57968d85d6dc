package runner

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
)

// recordSink is a test sink that also keeps each level's record.
type recordSink struct {
	testSink
	mu   sync.Mutex
	recs []*result.LevelRecord
}

func (s *recordSink) LevelDone(rec *result.LevelRecord) result.Point {
	s.mu.Lock()
	s.recs = append(s.recs, rec)
	s.mu.Unlock()
	return s.testSink.LevelDone(rec)
}

// runReplicated runs st on the fast simulator and returns its one level's
// record, point and measured requests in dispatch order.
func runReplicated(t *testing.T, st *scenario.Stage) (*result.LevelRecord, result.Point, []*result.Request) {
	t.Helper()
	s := startSim(t, fastSim())
	e, col := newEngine(t, s.URL(), nil)
	plan := synthPlan(16, "reference")
	(&scenario.Plan{Prompts: plan.Prompts, Stages: []*scenario.Stage{st}}).ApplyDefaults()
	sink := &recordSink{testSink: testSink{Stage: aggregate.NewStage(0), col: col}}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := e.RunStage(ctx, plan.LoadPlan(st), sink); err != nil {
		t.Fatalf("RunStage: %v", err)
	}
	res := sink.Result()
	if len(sink.recs) != 1 || len(res.Points) != 1 {
		t.Fatalf("%d level records, %d points, want 1", len(sink.recs), len(res.Points))
	}
	return sink.recs[0], res.Points[0], col.measured()
}

// checkWindows: the record holds one window a replicate, in order and not
// overlapping (a replicate starts after the last one's last completion); the
// record spans them and its wall is their sum; every request was sent inside
// its replicate's window.
func checkWindows(t *testing.T, rec *result.LevelRecord, reqs []*result.Request, k int) {
	t.Helper()
	if len(rec.Windows) != k {
		t.Fatalf("%d windows, want %d", len(rec.Windows), k)
	}
	var sum int64
	for i, w := range rec.Windows {
		sum += w.WallNs
		if w.WallNs <= 0 || w.End.Before(w.Start) {
			t.Errorf("window %d: %+v", i, w)
		}
		if i > 0 && w.Start.Before(rec.Windows[i-1].End) {
			t.Errorf("window %d opens at %v, before window %d closed at %v", i, w.Start, i-1, rec.Windows[i-1].End)
		}
	}
	if rec.WallNs != sum || !rec.Start.Equal(rec.Windows[0].Start) || !rec.End.Equal(rec.Windows[k-1].End) {
		t.Errorf("record window %v..%v wall %d, windows' %v..%v sum %d", rec.Start, rec.End, rec.WallNs, rec.Windows[0].Start, rec.Windows[k-1].End, sum)
	}
	for _, r := range reqs {
		w := rec.Windows[r.Replicate]
		if r.Start.Before(w.Start) || r.Start.After(w.End) {
			t.Errorf("request %d of replicate %d sent at %v, outside its window %v..%v", r.Seq, r.Replicate, r.Start, w.Start, w.End)
		}
	}
}

// TestReplicatesShareRequests: a level of 22 requests in 3 replicates runs
// 8, 7 and 7, numbered on from one replicate to the next (no prompt or
// nonce repeats, so no replicate hits another's prefix cache), each replicate
// a closed loop of its own; the point pools them over the summed wall.
func TestReplicatesShareRequests(t *testing.T) {
	t.Parallel()
	st := stage(4, 4)
	st.Requests = scenario.PerLevel{Each: 22}
	st.Replicates = 3
	rec, p, reqs := runReplicated(t, st)
	if rec.Spec.Replicates != 3 || p.Replicates != 3 {
		t.Errorf("spec replicates %d, point %d, want 3", rec.Spec.Replicates, p.Replicates)
	}
	checkWindows(t, rec, reqs, 3)
	per, nonces := map[int]int{}, map[string]bool{}
	for i, r := range reqs {
		if r.Seq != i {
			t.Fatalf("request %d has seq %d: sequence numbers must run on across replicates", i, r.Seq)
		}
		want := 0
		if i >= 8 {
			want = 1 + (i-8)/7
		}
		if r.Replicate != want {
			t.Errorf("seq %d in replicate %d, want %d", r.Seq, r.Replicate, want)
		}
		if nonces[r.Nonce] {
			t.Errorf("nonce %s sent twice", r.Nonce)
		}
		nonces[r.Nonce] = true
		per[r.Replicate]++
	}
	if len(reqs) != 22 || per[0] != 8 || per[1] != 7 || per[2] != 7 {
		t.Errorf("%d requests, by replicate %v, want 8, 7, 7", len(reqs), per)
	}
	if p.NRequests != 22 || p.Completed != 22 || p.DurationS != result.Round(time.Duration(rec.WallNs).Seconds(), 3) {
		t.Errorf("point: %d requests (%d ok) over %v s; record wall %v", p.NRequests, p.Completed, p.DurationS, time.Duration(rec.WallNs))
	}
	if p.MaxInFlight == nil || *p.MaxInFlight != 4 {
		t.Errorf("max in flight %v, want 4: replicates must not overlap", p.MaxInFlight)
	}
}

// TestReplicatesShareDuration: a level bounded by duration gives each of
// its replicates an equal part of it, and sequence numbers still never
// repeat.
func TestReplicatesShareDuration(t *testing.T) {
	t.Parallel()
	st := stage(4, 2)
	st.Duration = scenario.Duration(300 * time.Millisecond)
	st.Replicates = 2
	rec, _, reqs := runReplicated(t, st)
	checkWindows(t, rec, reqs, 2)
	seen, per := map[int]bool{}, map[int]int{}
	for _, r := range reqs {
		if seen[r.Seq] {
			t.Errorf("seq %d sent twice", r.Seq)
		}
		seen[r.Seq] = true
		per[r.Replicate]++
	}
	for i, w := range rec.Windows {
		// Each replicate stops sending at 150 ms and drains for a request's
		// length (4 tokens, some milliseconds).
		if d := time.Duration(w.WallNs); d < 150*time.Millisecond || d > 1500*time.Millisecond {
			t.Errorf("window %d lasted %v, want its 150 ms share plus the drain", i, d)
		}
		if per[i] < 2 {
			t.Errorf("replicate %d sent %d requests", i, per[i])
		}
	}
}
