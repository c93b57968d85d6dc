package stopping

import (
	"sync"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
)

// lookEvery is how far a level's finished requests grow between two looks
// of its until: rule: by a twentieth, and at least one. The sequences are
// valid at every look, so this bounds only the cost (each look computes
// the level's point so far), to about twenty looks each time the level
// doubles.
const lookEvery = 20

// NextLook is when a level whose rule looked after done finished requests
// looks next.
func NextLook(done int) int { return max(done+1, done+done/lookEvery) }

// Live is a stage's stopping rules while it runs: it answers the engine's
// looks (a sink's runner.Looker) and judges the sweep's saturation
// (runner.SweepStopper), from the records the stage's aggregate has so far.
// A nil *Live (a stage with neither until: nor stop_at_saturation) answers
// nothing.
type Live struct {
	rules *Stage
	agg   *aggregate.Stage

	mu     sync.Mutex
	next   map[int]int // level → the finished requests at which to look next
	looks  map[int]int // level → looks so far
	last   Level
	levels int
	stop   *result.SweepStop
}

// NewLive returns the live rules of stage st, whose records agg gathers
// (it keeps their samples from now on), or nil when st has none.
func NewLive(st *scenario.Stage, agg *aggregate.Stage) *Live {
	rules := New(st)
	if rules == nil {
		return nil
	}
	agg.KeepSamples() // the intervals read every request's values
	return &Live{rules: rules, agg: agg, next: map[int]int{}, looks: map[int]int{}, levels: len(st.Concurrency) + len(st.Rate)}
}

// Look is the engine's question after done of level rec's measured
// requests finished: nil to go on, or why the level stops. Looks come from
// every worker; one at a time is taken, and a worker that finds one under
// way goes on sending (the next finished request asks again).
func (l *Live) Look(rec *result.LevelRecord, done int) *result.LevelStop {
	if l == nil || rec.Spec.Until == "" {
		return nil
	}
	if !l.mu.TryLock() {
		return nil
	}
	defer l.mu.Unlock()
	if done < l.next[rec.Level] {
		return nil
	}
	p, smp, ok := l.agg.Peek(rec)
	if !ok {
		return nil
	}
	l.looks[rec.Level]++
	rule, _ := scenario.ParseUntil(rec.Spec.Until)
	p.Anytime = l.rules.Intervals(&p, rule, smp)
	l.next[rec.Level] = NextLook(done)
	stop := l.rules.Look(rec.Level, &p, done)
	if stop != nil {
		stop.Looks = l.looks[rec.Level]
	}
	return stop
}

// Annotate completes the stop the engine recorded for a level that ran to
// a cap: the looks it had and the confidence they were at.
func (l *Live) Annotate(rec *result.LevelRecord) {
	if l == nil || rec.Stop == nil || rec.Stop.Reason != result.StopCapped {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	rec.Stop.Looks, rec.Stop.Confidence = l.looks[rec.Level], l.rules.Confidence()
}

// LevelDone judges the sweep's saturation at the level just done, its
// point p (its samples the aggregate's), against the level before it.
func (l *Live) LevelDone(p *result.Point) {
	if l == nil || p.Turn > 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	cur := Level{Point: p, Samples: l.agg.Samples(p.Label())}
	if l.stop == nil {
		l.stop = l.rules.Saturated(l.last, cur, l.levels)
	}
	l.last = cur
}

// StopSweep reports whether the sweep has reached saturation.
func (l *Live) StopSweep() bool {
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stop != nil
}

// Skipped notes the levels the sweep did not run.
func (l *Live) Skipped(specs []result.LevelSpec) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stop == nil {
		return
	}
	for _, s := range specs {
		l.stop.Skipped = append(l.stop.Skipped, s.Label)
	}
}

// SweepStop is the sweep's stop, for the stage's record (nil: none).
func (l *Live) SweepStop() *result.SweepStop {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stop
}
