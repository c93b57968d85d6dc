package runner

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/runner/shard"
	"github.com/runnerbench/runner/scenario"
)

// TestShardNoncesDisjoint: shards of one run never make the same nonce, and
// every shard makes the same nonces from the same key whatever the order.
func TestShardNoncesDisjoint(t *testing.T) {
	const shards, each = 4, 20000
	seen := map[string]int{}
	for i := range shards {
		sh := &shard.Sharding{Part: result.Shard{Index: i, Count: shards}, Key: "plan@time"}
		g := shardNonces(sh, "ep")
		for range each {
			n := g.Next()
			if len(n) != 12 {
				t.Fatalf("nonce %q", n)
			}
			if j, dup := seen[n]; dup {
				t.Fatalf("shards %d and %d both made nonce %s", j, i, n)
			}
			seen[n] = i
		}
	}
	again := shardNonces(&shard.Sharding{Part: result.Shard{Index: 2, Count: shards}, Key: "plan@time"}, "ep").Next()
	if seen[again] != 2 {
		t.Fatalf("shard 2 does not make the same first nonce again: %s", again)
	}
	other := shardNonces(&shard.Sharding{Part: result.Shard{Index: 2, Count: shards}, Key: "plan@later"}, "ep").Next()
	if _, dup := seen[other]; dup {
		t.Fatalf("another run's key made a nonce of this run: %s", other)
	}
}

// newShardEngine is newEngine for one shard.
func newShardEngine(t *testing.T, baseURL string, sh *shard.Sharding) (*Engine, *collector) {
	t.Helper()
	ep := defaulted(&scenario.Endpoint{Model: "sim", BaseURL: baseURL})
	e, err := NewEngine(Target{Name: "test", Endpoint: ep, BaseURL: baseURL}, Options{Logger: zerolog.Nop(), Sharding: sh})
	if err != nil {
		t.Fatal(err)
	}
	col := &collector{}
	collectors.Store(e, col)
	t.Cleanup(func() {
		collectors.Delete(e)
		e.Close()
	})
	return e, col
}

// sent maps each measured request's sequence number to what was sent for
// it: its prompt without the nonce, and its max_tokens, from the bodies the
// spy saw.
func sent(t *testing.T, sp *spy, col *collector, into map[int]string) {
	t.Helper()
	bodies := map[string]string{}
	for _, c := range sp.requests("/v1/chat/completions") {
		msgs, _ := c.body["messages"].([]any)
		if len(msgs) == 0 {
			continue
		}
		content, _ := msgs[0].(map[string]any)["content"].(string)
		nonce, prompt, _ := strings.Cut(content, "] ")
		bodies[strings.TrimPrefix(nonce, "[")] = fmt.Sprintf("model=%v max_tokens=%v prompt=%q", c.body["model"], c.body["max_tokens"], prompt)
	}
	for _, r := range col.measured() {
		if _, dup := into[r.Seq]; dup {
			t.Fatalf("sequence number %d sent twice", r.Seq)
		}
		b, ok := bodies[r.Nonce]
		if !(r.OK || r.Cancelled) || !ok {
			t.Fatalf("request %d: ok %v (%s), body seen %v", r.Seq, r.OK, r.Error, ok)
		}
		into[r.Seq] = fmt.Sprintf("%s cancelled=%v", b, r.Cancelled)
	}
}

// TestShardsSendOneProcessRequests: three shards of a closed-loop and an
// open-loop level send, together, exactly the requests one process sends:
// the same sequence numbers, each with the same sampled lengths; and of a
// stage whose requests spread over models and give up, each to the same
// model, giving up (or not) as it does in one process.
func TestShardsSendOneProcessRequests(t *testing.T) {
	cfg := fastSim()
	cfg.LoRAModules = []string{"adapter"}
	s := startSim(t, cfg)
	plan := &scenario.Plan{Prompts: map[string]*scenario.PromptSet{
		"p": {Synthetic: &scenario.Synthetic{InputTokens: scenario.Length{Min: 20, Max: 200}, Sizing: scenario.SizingReference}},
	}}
	stages := map[string]func() *scenario.Stage{
		"closed": func() *scenario.Stage {
			st := stage(0, 4)
			st.OutputTokens = scenario.Length{Min: 2, Max: 40}
			st.Requests = scenario.PerLevel{Each: 17}
			return st
		},
		"open": func() *scenario.Stage {
			st := stage(0)
			st.Concurrency, st.Rate, st.Requests = nil, []float64{200}, scenario.PerLevel{Each: 13}
			st.OutputTokens = scenario.Length{Min: 2, Max: 40}
			return st
		},
		"models and giving up": func() *scenario.Stage {
			st := stage(0, 4)
			st.OutputTokens = scenario.Length{Min: 2, Max: 40}
			st.Requests = scenario.PerLevel{Each: 24}
			three := 3.0
			st.Models = []*scenario.ModelWeight{{Name: "sim", Weight: &three}, {Name: "adapter"}}
			st.CancelShare = 0.5
			return st
		},
	}
	for name, mk := range stages {
		t.Run(name, func(t *testing.T) {
			sp := startSpy(t, s)
			one, col := newEngine(t, sp.URL+"/v1", nil)
			runStage(t, one, plan, mk())
			want := map[int]string{}
			sent(t, sp, col, want)
			got := map[int]string{}
			for i := range 3 {
				sp := startSpy(t, s)
				e, col := newShardEngine(t, sp.URL+"/v1", &shard.Sharding{Part: result.Shard{Index: i, Count: 3}, Key: "k"})
				res := runStage(t, e, plan, mk())
				levels := 0
				for k := range res.Points {
					if !res.Points[k].Part() { // a per-model point is a part of its level
						levels++
					}
				}
				if levels != 1 {
					t.Fatalf("shard %d: %d levels", i, levels)
				}
				for _, r := range col.measured() {
					if r.Shard != i || r.Seq%3 != i {
						t.Fatalf("shard %d sent request %d marked shard %d", i, r.Seq, r.Shard)
					}
				}
				sent(t, sp, col, got)
			}
			if len(want) == 0 || !mapsEqual(got, want) {
				t.Fatalf("the shards together sent\n%v\none process sent\n%v", got, want)
			}
			if name != "models and giving up" {
				return
			}
			// The stage must have drawn both ways for the match to mean anything.
			adapter, cancelled := 0, 0
			for _, v := range want {
				if strings.Contains(v, "model=adapter ") {
					adapter++
				}
				if strings.HasSuffix(v, "cancelled=true") {
					cancelled++
				}
			}
			if adapter == 0 || adapter == len(want) || cancelled == 0 || cancelled == len(want) {
				t.Errorf("of %d requests %d went to the adapter and %d gave up: want some of each", len(want), adapter, cancelled)
			}
		})
	}
}

func mapsEqual(a, b map[int]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestScheduledShardRun runs two shards of a stage of two levels at their
// scheduled instants: no measured request leaves before its level's window
// opens, none is claimed after its duration, each record is late by what it
// says, and the shard with no part of the smaller level records it as
// skipped.
//
// A busy machine can make a window open late, even after its duration has
// run out (warm-ups and a counter read under -race on two held cores took
// 200-700 ms): the record says how late and the level's point warns. What it
// cannot do is move a request before the opening, or let a worker claim one
// after the duration: the first wave (claimed before the window opens, one
// per stream) is due when the window opens, every later request when its
// worker claimed it.
func TestScheduledShardRun(t *testing.T) {
	s := startSim(t, fastSim())
	plan := synthPlan(16, "reference")
	const dur, warmup, drain = 300 * time.Millisecond, 300 * time.Millisecond, 100 * time.Millisecond
	mk := func() *scenario.Stage {
		st := stage(4, 1, 3)
		st.Duration = scenario.Duration(dur)
		return st
	}
	// A second for both engines to start and calibrate before the first
	// slot, and a warm-up allowance of 300 ms (the warm-ups, the counter
	// read and the first wave's bodies): on a quiet machine both windows
	// open on time, so the late path below is the exception.
	at := time.Now().Add(time.Second).Round(time.Millisecond)
	type out struct {
		col    *collector
		recs   []*result.LevelRecord
		points []result.Point
		err    error
	}
	outs := make([]out, 2)
	done := make(chan int)
	for i := range 2 {
		sh, err := shard.NewSharding(result.Shard{Index: i, Count: 2}, at, warmup, drain, "k", (&scenario.Plan{}).LoadPlans([]*scenario.Stage{mk()}))
		if err != nil {
			t.Fatal(err)
		}
		e, col := newShardEngine(t, s.URL(), sh)
		st := mk()
		(&scenario.Plan{Prompts: plan.Prompts, Stages: []*scenario.Stage{st}}).ApplyDefaults()
		go func() {
			defer func() { done <- i }()
			rs := &recSink{testSink: testSink{Stage: aggregate.NewStage(0), col: col}}
			outs[i] = out{col: col, err: e.RunStage(context.Background(), plan.LoadPlan(st), rs)}
			outs[i].recs, outs[i].points = rs.recs, rs.points
		}()
	}
	<-done
	<-done
	tt, _ := shard.NewTimetable(at, warmup, drain, (&scenario.Plan{}).LoadPlans([]*scenario.Stage{mk()}))
	for i, o := range outs {
		if o.err != nil || len(o.recs) != 2 {
			t.Fatalf("shard %d: %v, %d levels", i, o.err, len(o.recs))
		}
		for j, rec := range o.recs {
			checkScheduledLevel(t, tt, dur, i, rec, o.points[j], o.col.measured())
		}
	}
	if outs[1].recs[0].ShardConcurrency != 0 || outs[0].recs[1].ShardConcurrency != 2 || outs[1].recs[1].ShardConcurrency != 1 {
		t.Fatalf("parts: concurrencies %d, %d, %d", outs[1].recs[0].ShardConcurrency, outs[0].recs[1].ShardConcurrency, outs[1].recs[1].ShardConcurrency)
	}
	for _, r := range outs[1].col.reqs {
		if r.Level == 0 {
			t.Fatalf("shard 1 sent a request of the level it skipped: %+v", r)
		}
	}
}

// checkScheduledLevel checks shard i's record and point of one scheduled
// level of duration dur, and its measured requests of that level (reqs
// holds all levels', by level and sequence number).
func checkScheduledLevel(t *testing.T, tt *shard.Timetable, dur time.Duration, i int, rec *result.LevelRecord, p result.Point, reqs []*result.Request) {
	t.Helper()
	slot, _ := tt.Slot("s", rec.Level)
	if rec.Shard == nil || *rec.Shard != (result.Shard{Index: i, Count: 2}) {
		t.Fatalf("shard %d level %d: record's shard %v", i, rec.Level, rec.Shard)
	}
	if rec.Skipped {
		if i != 1 || rec.Level != 0 {
			t.Fatalf("shard %d skipped level %d", i, rec.Level)
		}
		return
	}
	late := rec.Start.Sub(slot.Open)
	if late < 0 || rec.LateStartMs != result.Round(float64(late)/1e6, 3) {
		t.Fatalf("shard %d level %d opened %v after its slot opened, recorded %.3f ms late", i, rec.Level, late, rec.LateStartMs)
	}
	warned := slices.ContainsFunc(p.Warnings, func(w string) bool { return strings.Contains(w, "after its scheduled instant") })
	if limit := aggregate.ShardSkewLimit(rec.Wall()); warned != (time.Duration(rec.LateStartMs*float64(time.Millisecond)) > limit) {
		t.Errorf("shard %d level %d opened %v late (limit %v), late-window warning %t: %q", i, rec.Level, late, limit, warned, p.Warnings)
	}
	stopAt := slot.Open.Add(dur)
	var sent int
	for _, r := range reqs {
		if r.Level != rec.Level {
			continue
		}
		// A request is due when its worker claims it; on a busy machine it
		// leaves a scheduling delay later, which its dispatch lag records.
		// The first wave, one request per stream, is claimed before the
		// window opens and due when it opens.
		due := r.Start.Add(-time.Duration(r.DispatchLagMs * float64(time.Millisecond)))
		first := sent < rec.ShardConcurrency
		sent++
		switch {
		case r.Start.Before(slot.Open) || due.Before(rec.Start.Add(-time.Microsecond)):
			t.Fatalf("shard %d level %d: request %d due at %v (left %v), before its window opened at %v (scheduled %v)", i, rec.Level, r.Seq, due, r.Start, rec.Start, slot.Open)
		case !first && !due.Before(stopAt.Add(time.Microsecond)):
			t.Fatalf("shard %d level %d: request %d due at %v (left %v), claimed after its window's duration ended at %v", i, rec.Level, r.Seq, due, r.Start, stopAt)
		}
	}
	// A window that opened after its duration ran out sends at most its
	// first wave. One that opened and closed inside its slot sent all of
	// it: the drain bound's cut, which may stop a first wave that has not
	// left yet, strikes only at the slot's end.
	end := rec.Start.Add(rec.Wall())
	switch {
	case !rec.Start.Before(stopAt) && sent > rec.ShardConcurrency:
		t.Errorf("shard %d level %d opened %v late, after its duration, and sent %d requests, more than its first wave of %d", i, rec.Level, late, sent, rec.ShardConcurrency)
	case end.Before(slot.End) && sent < rec.ShardConcurrency:
		t.Errorf("shard %d level %d ran inside its slot (opened %v late, closed %v before its end) but sent %d requests, fewer than its %d streams", i, rec.Level, late, slot.End.Sub(end), sent, rec.ShardConcurrency)
	}
	if sent == 0 && !end.Before(slot.End) {
		t.Logf("shard %d level %d opened %v late and its slot's cut stopped its first wave: the machine was too busy for it to send anything", i, rec.Level, late)
	}
}

// recSink keeps the level records a stage hands its sink.
type recSink struct {
	testSink
	recs   []*result.LevelRecord
	points []result.Point
}

func (s *recSink) LevelDone(rec *result.LevelRecord) result.Point {
	s.recs = append(s.recs, rec)
	p := s.testSink.LevelDone(rec)
	s.points = append(s.points, p)
	return p
}
