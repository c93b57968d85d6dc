// Package shard makes a run several processes' work, or places its levels
// on the wall clock. Sharded runs: several processes (a Kubernetes Indexed
// Job's pods, a CI matrix's jobs) each run one shard of every level, and
// runner merge makes one result of their records. No shard waits for or talks to another: what
// a shard sends follows from the plan, its index and the shard count alone,
// and when follows from a shared wall-clock instant (--start-at) and the plan.
//
// Shard i of N takes, of every level:
//   - closed loop: concurrency/N streams, one more for each i < concurrency%N;
//     requests split the same way;
//   - open loop: arrivals i, i+N, i+2N, ... of the whole level's seeded
//     schedule, so the union of the shards' arrivals is exactly the plan's
//     schedule, whatever the arrival process; a max_concurrency cap split as
//     concurrency is;
//   - in both, the request (conversation) numbered n on the shard is the
//     level's request n·N+i: sequence numbers, which seed each request's
//     prompt and lengths, are the ones one process would have used, so the
//     union of the shards sends exactly one process's prompts.
//
// A shard whose part of a level is empty (fewer streams than shards) still
// records the level, marked skipped, so every shard's records list the same
// levels.
package shard

import (
	"errors"
	"fmt"
	"time"

	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/runner/shape"
	"github.com/runnerbench/runner/scenario"
)

// Sharding makes an engine's stages one shard of a run that several
// processes make together, or (with Part.Count 1) a run whose levels start
// at scheduled instants.
type Sharding struct {
	// Part is this process's shard (Count 1: the whole run).
	Part result.Shard
	// Timetable places every level at a wall-clock instant (nil: each level
	// starts when the last one ended).
	Timetable *Timetable
	// Key is the same on every shard of a run (the plan's hash and
	// --start-at) and keys the prompts' nonces, so the shards' nonces are
	// distinct by construction (see nonceGen).
	Key string
}

// NewSharding checks that stages can run as shard part of a sharded run,
// their levels scheduled from startAt (zero: not scheduled), with slots of
// warmup + each stage's duration + drain, and returns what the engines need.
// It returns nil for a whole, unscheduled run. A sharded run must be
// scheduled: shards agree on when each level runs only through the clock.
func NewSharding(part result.Shard, startAt time.Time, warmup, drain time.Duration, key string, stages []*scenario.LoadPlan) (*Sharding, error) {
	if part.Count < 1 || part.Count > MaxShards || part.Index < 0 || part.Index >= part.Count {
		return nil, fmt.Errorf("shard %d/%d: want an index from 0 to count-1 and a count from 1 to %d", part.Index, part.Count, MaxShards)
	}
	if part.Count == 1 && startAt.IsZero() {
		return nil, nil
	}
	if startAt.IsZero() {
		return nil, errors.New("a sharded run needs --start-at: shards start each level together only at an instant they all know, and never talk to each other")
	}
	tt, err := NewTimetable(startAt, warmup, drain, stages)
	if err != nil {
		return nil, err
	}
	for _, st := range stages {
		if c := st.MaxConcurrency; c > 0 && c < part.Count {
			return nil, fmt.Errorf("stage %s: max_concurrency %d cannot be split over %d shards (each shard needs a cap of at least 1)", st.Name, c, part.Count)
		}
		if st.Probe != nil && part.Count > 1 {
			return nil, fmt.Errorf("stage %s sends probe requests: a sharded run cannot send them (each shard would probe a server the others load, and their probes would not add up to one stream); run the probes unsharded, or leave probe: out of the sharded plan", st.Name)
		}
	}
	return &Sharding{Part: part, Timetable: tt, Key: key}, nil
}

// MaxShards bounds a run's shard count.
const MaxShards = 1000

// Sharded reports whether s splits levels (more than one shard).
func (s *Sharding) Sharded() bool { return s != nil && s.Part.Count > 1 }

// Timetable places the levels of a scheduled run on the wall clock. Every
// level has a slot: its warm-up allowance (connections, warm-up requests and
// the first counter read), its stage's duration (the measured window), then
// its drain bound (requests still in flight are cut at the slot's end). The
// first slot begins at StartAt and each next one where the last ends, so
// every instant follows from the plan and three settings, which every shard
// has: no shard waits for another.
type Timetable struct {
	StartAt       time.Time
	Warmup, Drain time.Duration
	first         map[string]time.Time // each stage's first slot
	slot          map[string]time.Duration
	levels        map[string]int
	end           time.Time
}

// NewTimetable lays out stages' levels from startAt. Every stage must be
// bounded by duration and list its levels (concurrency or rate), or its
// slots could not be known in advance.
func NewTimetable(startAt time.Time, warmup, drain time.Duration, stages []*scenario.LoadPlan) (*Timetable, error) {
	if warmup < 0 || drain < 0 {
		return nil, errors.New("the slot's warm-up allowance and drain bound must not be negative")
	}
	s := &Timetable{StartAt: startAt, Warmup: warmup, Drain: drain,
		first: map[string]time.Time{}, slot: map[string]time.Duration{}, levels: map[string]int{}}
	at := startAt
	for _, st := range stages {
		if err := untilRefused(st); err != nil {
			return nil, err
		}
		d := st.Duration
		if d <= 0 {
			return nil, fmt.Errorf("stage %s has no duration: a sharded or scheduled (--start-at) run starts each level at an instant fixed in advance, so every level must be bounded by duration", st.Name)
		}
		if st.Replicates > 1 {
			return nil, fmt.Errorf("stage %s runs %d replicates a level: a sharded or scheduled (--start-at) run gives each level one window fixed in advance; run replicates unsharded and unscheduled", st.Name, st.Replicates)
		}
		n := len(st.Concurrency) + len(st.Rate) + len(st.Users)
		if st.Series != nil {
			n = 1 // a series is one level of its own length
		}
		if n == 0 {
			return nil, fmt.Errorf("stage %s lists no levels (concurrency, rate or users): a scheduled run must know every level in advance", st.Name)
		}
		s.first[st.Name], s.slot[st.Name], s.levels[st.Name] = at, warmup+d+drain, n
		at = at.Add(time.Duration(n) * (warmup + d + drain))
	}
	s.end = at
	return s, nil
}

// untilRefused is why a stage whose levels run until: or whose sweep stops
// at saturation cannot run sharded or scheduled. Sharing the decision would
// need the shards to pool their requests while they run, and they never
// talk: each would judge its part alone and stop at another request than
// the others, so the merged level would be no level the rule chose. And a
// scheduled level's slot, fixed in advance, cannot end when its answer is
// known.
func untilRefused(st *scenario.LoadPlan) error {
	for i := range len(st.Concurrency) + len(st.Rate) {
		if !st.UntilAt(i).Fixed() {
			return fmt.Errorf("stage %s runs its levels until: (%s): a sharded or scheduled (--start-at) run refuses it: each shard sees only its part of a level's requests and the shards never talk while they run, so none can know when the whole level is decided, and every slot is fixed in advance; run the stage unsharded and unscheduled, or give it requests or duration in place of until", st.Name, st.UntilAt(i))
		}
	}
	if st.StopAtSaturation {
		return fmt.Errorf("stage %s has stop_at_saturation: a sharded or scheduled (--start-at) run refuses it: each shard would judge saturation on its part of the load alone, and the timetable has a slot for every level; run the stage unsharded and unscheduled, or leave stop_at_saturation out", st.Name)
	}
	return nil
}

// Slot is level idx of stage's slot; false for a level the schedule does
// not have.
func (s *Timetable) Slot(stage string, idx int) (shape.Slot, bool) {
	first, ok := s.first[stage]
	if !ok || idx < 0 || idx >= s.levels[stage] {
		return shape.Slot{}, false
	}
	length := s.slot[stage]
	start := first.Add(time.Duration(idx) * length)
	return shape.Slot{Start: start, Open: start.Add(s.Warmup), End: start.Add(length)}, true
}

// End is when the last slot ends.
func (s *Timetable) End() time.Time { return s.end }

// Coordinate wraps a stage's sweep so that each level it gives is sh's
// part, at its scheduled instant; the sweep is returned as it is for a
// whole, unscheduled run (a nil sh).
func Coordinate(sh *Sharding, stage string, inner shape.Sweep) shape.Sweep {
	if sh == nil {
		return inner
	}
	return &shardSweep{inner: inner, sh: sh, stage: stage}
}

// shardSweep is a Sweep's levels as one shard runs them: each level cut to
// the shard's part (Level.Part) and placed in its slot (Level.Slot). The
// level's Spec keeps the whole level's values and label, so levels match
// across shards.
type shardSweep struct {
	inner shape.Sweep
	sh    *Sharding
	stage string
	idx   int
	err   error
}

// MaxConns is the largest shard's part of the inner sweep's.
func (s *shardSweep) MaxConns() int {
	n := s.inner.MaxConns()
	if s.sh.Sharded() {
		n = shape.ShareOf(n, 0, s.sh.Part.Count)
	}
	return n
}

// Next is the inner sweep's next level, cut and scheduled. A level the
// schedule has no slot for, or a load shape that cannot be split, ends the
// stage with an error (Err).
func (s *shardSweep) Next(last *result.Point) (shape.Level, bool) {
	lvl, ok := s.inner.Next(last)
	if !ok || s.err != nil {
		return shape.Level{}, false
	}
	idx := s.idx
	s.idx++
	if tt := s.sh.Timetable; tt != nil {
		slot, ok := tt.Slot(s.stage, idx)
		if !ok {
			s.err = fmt.Errorf("level %d (%s) has no slot in the timetable", idx, lvl.Spec.Label)
			return shape.Level{}, false
		}
		lvl.Slot = &slot
	}
	if s.sh.Sharded() {
		if err := cut(&lvl, s.sh.Part); err != nil {
			s.err = err
			return shape.Level{}, false
		}
	}
	return lvl, true
}

// Err is why the sweep ended early, if it did.
func (s *shardSweep) Err() error { return s.err }

// cut makes lvl shard part's part of it: its load shape splits itself, and
// its request count is shared out as the closed loop's streams are.
func cut(lvl *shape.Level, part result.Shard) error {
	sh, err := lvl.Load.Split(part, lvl.Duration)
	if err != nil {
		return fmt.Errorf("level %s: %w", lvl.Spec.Label, err)
	}
	p := &shape.Part{Shard: part, Concurrency: sh.Concurrency, Rate: sh.Rate, Empty: sh.Empty}
	lvl.Load, lvl.Concurrency = sh.Load, sh.Concurrency
	if lvl.Requests > 0 {
		lvl.Requests = shape.ShareOf(lvl.Requests, part.Index, part.Count)
		p.Empty = p.Empty || lvl.Requests == 0
	}
	lvl.Part = p
	return nil
}
