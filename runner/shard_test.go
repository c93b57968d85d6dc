package runner

import (
	"context"
	"fmt"
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
		bodies[strings.TrimPrefix(nonce, "[")] = fmt.Sprintf("max_tokens=%v prompt=%q", c.body["max_tokens"], prompt)
	}
	for _, r := range col.measured() {
		if _, dup := into[r.Seq]; dup {
			t.Fatalf("sequence number %d sent twice", r.Seq)
		}
		b, ok := bodies[r.Nonce]
		if !r.OK || !ok {
			t.Fatalf("request %d: ok %v (%s), body seen %v", r.Seq, r.OK, r.Error, ok)
		}
		into[r.Seq] = b
	}
}

// TestShardsSendOneProcessRequests: three shards of a closed-loop and an
// open-loop level send, together, exactly the requests one process sends:
// the same sequence numbers, each with the same sampled lengths.
func TestShardsSendOneProcessRequests(t *testing.T) {
	s := startSim(t, fastSim())
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
				if len(res.Points) != 1 {
					t.Fatalf("shard %d: %d points", i, len(res.Points))
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
// opens or falls due after its duration, each record is late by what it says, and the
// shard with no part of the smaller level records it as skipped.
func TestScheduledShardRun(t *testing.T) {
	s := startSim(t, fastSim())
	plan := synthPlan(16, "reference")
	mk := func() *scenario.Stage {
		st := stage(4, 1, 3)
		st.Duration = scenario.Duration(300 * time.Millisecond)
		return st
	}
	// A second for both engines to start and calibrate before the first
	// slot: on a busy machine 300 ms left them little room.
	at := time.Now().Add(time.Second).Round(time.Millisecond)
	type out struct {
		col  *collector
		recs []*result.LevelRecord
		err  error
	}
	outs := make([]out, 2)
	done := make(chan int)
	for i := range 2 {
		sh, err := shard.NewSharding(result.Shard{Index: i, Count: 2}, at, 100*time.Millisecond, 100*time.Millisecond, "k", (&scenario.Plan{}).LoadPlans([]*scenario.Stage{mk()}))
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
			outs[i].recs = rs.recs
		}()
	}
	<-done
	<-done
	tt, _ := shard.NewTimetable(at, 100*time.Millisecond, 100*time.Millisecond, (&scenario.Plan{}).LoadPlans([]*scenario.Stage{mk()}))
	for i, o := range outs {
		if o.err != nil || len(o.recs) != 2 {
			t.Fatalf("shard %d: %v, %d levels", i, o.err, len(o.recs))
		}
		for _, rec := range o.recs {
			slot, _ := tt.Slot("s", rec.Level)
			if rec.Shard == nil || *rec.Shard != (result.Shard{Index: i, Count: 2}) {
				t.Fatalf("shard %d level %d: record's shard %v", i, rec.Level, rec.Shard)
			}
			if rec.Skipped {
				if i != 1 || rec.Level != 0 {
					t.Fatalf("shard %d skipped level %d", i, rec.Level)
				}
				continue
			}
			late := rec.Start.Sub(slot.Open)
			if late < 0 || rec.LateStartMs != result.Round(float64(late)/1e6, 3) {
				t.Fatalf("shard %d level %d opened %v after its slot opened, recorded %.3f ms late", i, rec.Level, late, rec.LateStartMs)
			}
		}
		for _, r := range o.col.measured() {
			// A request is due when its worker claims it; on a busy machine
			// it leaves a scheduling delay later, which its dispatch lag
			// records. The window bounds when requests are due.
			slot, _ := tt.Slot("s", r.Level)
			due := r.Start.Add(-time.Duration(r.DispatchLagMs * float64(time.Millisecond)))
			if r.Start.Before(slot.Open) || !due.Before(slot.Open.Add(300*time.Millisecond+time.Microsecond)) {
				t.Fatalf("shard %d level %d: request %d due at %v (left %v), outside its window [%v, +300ms)", i, r.Level, r.Seq, due, r.Start, slot.Open)
			}
		}
	}
	if n := len(outs[1].col.measured()); n == 0 || outs[1].recs[0].ShardConcurrency != 0 || outs[0].recs[1].ShardConcurrency != 2 || outs[1].recs[1].ShardConcurrency != 1 {
		t.Fatalf("parts: shard 1 sent %d; concurrencies %d, %d, %d", n, outs[1].recs[0].ShardConcurrency, outs[0].recs[1].ShardConcurrency, outs[1].recs[1].ShardConcurrency)
	}
	for _, r := range outs[1].col.reqs {
		if r.Level == 0 {
			t.Fatalf("shard 1 sent a request of the level it skipped: %+v", r)
		}
	}
}

// recSink keeps the level records a stage hands its sink.
type recSink struct {
	testSink
	recs []*result.LevelRecord
}

func (s *recSink) LevelDone(rec *result.LevelRecord) result.Point {
	s.recs = append(s.recs, rec)
	return s.testSink.LevelDone(rec)
}
