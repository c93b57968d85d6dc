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
	"github.com/runnerbench/runner/scenario"
)

// TestShare: the parts add up to the whole, differ by at most one, and the
// remainder goes to the low indexes.
func TestShare(t *testing.T) {
	for n := range 60 {
		for count := 1; count <= 7; count++ {
			sum := 0
			for i := range count {
				s := share(n, i, count)
				sum += s
				if want := n / count; s != want && s != want+1 {
					t.Fatalf("share(%d, %d, %d) = %d", n, i, count, s)
				}
				if i > 0 && s > share(n, i-1, count) {
					t.Fatalf("share(%d, %d, %d) = %d exceeds shard %d's", n, i, count, s, i-1)
				}
			}
			if sum != n {
				t.Fatalf("shares of %d over %d add up to %d", n, count, sum)
			}
		}
	}
}

// TestShardArrivalsAreThePlansSchedule: for every arrival process, the union
// of the shards' arrivals is exactly the whole level's seeded schedule, and
// shard i's k-th arrival is the schedule's (k·N+i)-th.
func TestShardArrivalsAreThePlansSchedule(t *testing.T) {
	const rate, dur = 50.0, 2 * time.Second
	for _, arr := range []struct {
		kind  scenario.Arrival
		burst float64
	}{{scenario.ArrivalPoisson, 0}, {scenario.ArrivalConstant, 0}, {scenario.ArrivalGamma, 4}} {
		whole := Schedule(7, rate, arr.kind, arr.burst, 0, dur)
		if len(whole) < 50 {
			t.Fatalf("%s: schedule of %d arrivals", arr.kind, len(whole))
		}
		for _, n := range []int{1, 2, 3, 5} {
			var union []time.Duration
			for i := range n {
				o := &openLoop{rate: rate, arrival: arr.kind, burstiness: arr.burst, seed: 7, part: result.Shard{Index: i, Count: n}}
				src := o.arrivals()
				for k := 0; ; k++ {
					off := src.next()
					if off >= dur {
						break
					}
					if g := k*n + i; g >= len(whole) || whole[g] != off {
						t.Fatalf("%s, shard %d/%d: arrival %d is at %v, the schedule's %d-th", arr.kind, i, n, k, off, g)
					}
					union = append(union, off)
				}
			}
			slices.Sort(union)
			if !slices.Equal(union, whole) {
				t.Fatalf("%s over %d shards: the union has %d arrivals, the schedule %d", arr.kind, n, len(union), len(whole))
			}
		}
	}
}

// TestShardNoncesDisjoint: shards of one run never make the same nonce, and
// every shard makes the same nonces from the same key whatever the order.
func TestShardNoncesDisjoint(t *testing.T) {
	const shards, each = 4, 20000
	seen := map[string]int{}
	for i := range shards {
		sh := &Sharding{Part: result.Shard{Index: i, Count: shards}, Key: "plan@time"}
		g := sh.nonceGen("ep")
		for range each {
			n := g.next()
			if len(n) != 12 {
				t.Fatalf("nonce %q", n)
			}
			if j, dup := seen[n]; dup {
				t.Fatalf("shards %d and %d both made nonce %s", j, i, n)
			}
			seen[n] = i
		}
	}
	again := (&Sharding{Part: result.Shard{Index: 2, Count: shards}, Key: "plan@time"}).nonceGen("ep").next()
	if seen[again] != 2 {
		t.Fatalf("shard 2 does not make the same first nonce again: %s", again)
	}
	other := (&Sharding{Part: result.Shard{Index: 2, Count: shards}, Key: "plan@later"}).nonceGen("ep").next()
	if _, dup := seen[other]; dup {
		t.Fatalf("another run's key made a nonce of this run: %s", other)
	}
}

// newShardEngine is newEngine for one shard.
func newShardEngine(t *testing.T, baseURL string, sh *Sharding) (*Engine, *collector) {
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
				e, col := newShardEngine(t, sp.URL+"/v1", &Sharding{Part: result.Shard{Index: i, Count: 3}, Key: "k"})
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
	at := time.Now().Add(300 * time.Millisecond).Round(time.Millisecond)
	type out struct {
		col  *collector
		recs []*result.LevelRecord
		err  error
	}
	outs := make([]out, 2)
	done := make(chan int)
	for i := range 2 {
		sh, err := NewSharding(result.Shard{Index: i, Count: 2}, at, 100*time.Millisecond, 100*time.Millisecond, "k", (&scenario.Plan{}).LoadPlans([]*scenario.Stage{mk()}))
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
	tt, _ := NewTimetable(at, 100*time.Millisecond, 100*time.Millisecond, (&scenario.Plan{}).LoadPlans([]*scenario.Stage{mk()}))
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

// TestCutThroughSplit: a level is cut by its shape's own Split (streams and
// cap shared out, the rate divided, an empty part flagged), and a shape
// that cannot be split ends the stage with an error naming the level.
func TestCutThroughSplit(t *testing.T) {
	part := result.Shard{Index: 2, Count: 3}
	lvl := Level{Spec: result.LevelSpec{Label: "c=7"}, Concurrency: 7, Requests: 10, Load: closedLoop{conc: 7}}
	if err := cut(&lvl, part); err != nil || lvl.Concurrency != 2 || lvl.Requests != 3 || lvl.Part.Empty || lvl.Load.Conns() != 2 {
		t.Fatalf("closed loop cut: %+v %+v, %v", lvl, lvl.Part, err)
	}
	lvl = Level{Spec: result.LevelSpec{Label: "rate=6"}, Duration: time.Second, Load: &openLoop{rate: 6, seed: 1, maxConc: 4}}
	if err := cut(&lvl, part); err != nil || lvl.Concurrency != 1 || *lvl.Part.Rate != 2 || lvl.Part.Empty {
		t.Fatalf("open loop cut: %+v %+v, %v", lvl, lvl.Part, err)
	}
	lvl = Level{Spec: result.LevelSpec{Label: "c=2"}, Concurrency: 2, Load: closedLoop{conc: 2}}
	if err := cut(&lvl, part); err != nil || !lvl.Part.Empty {
		t.Fatalf("a shard without streams is not empty: %+v, %v", lvl.Part, err)
	}
	lvl = Level{Spec: result.LevelSpec{Label: "rate=3"}, Load: &openLoop{rate: 3, times: []time.Duration{0}}}
	if err := cut(&lvl, part); err == nil || !strings.Contains(err.Error(), "level rate=3: a trace replay cannot be split") {
		t.Fatalf("replay cut: %v", err)
	}
}
