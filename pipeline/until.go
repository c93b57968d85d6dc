package pipeline

import (
	"sync"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
	"github.com/runnerbench/runner/stopping"
)

// lookEvery is how far a level's finished requests grow between two looks
// of its until: rule: by a twentieth, and at least one. The sequences are
// valid at every look, so this bounds only the cost (each look computes
// the level's point so far), to about twenty looks each time the level
// doubles.
const lookEvery = 20

// looker is a stage's until: rules while it runs: it answers the engine's
// looks and judges the sweep's saturation, from the records the stage's
// aggregate has so far. Nil when the stage has neither until: nor
// stop_at_saturation.
type looker struct {
	rules *stopping.Stage
	agg   *aggregate.Stage
	plan  *scenario.Stage

	mu     sync.Mutex
	next   map[int]int // level → the finished requests at which to look next
	looks  map[int]int // level → looks so far
	last   stopping.Level
	levels int
	stop   *result.SweepStop
}

func newLooker(st *scenario.Stage, agg *aggregate.Stage) *looker {
	rules := stopping.New(st)
	if rules == nil {
		return nil
	}
	agg.KeepSamples() // the intervals read every request's values
	return &looker{rules: rules, agg: agg, plan: st, next: map[int]int{}, looks: map[int]int{}, levels: len(st.Concurrency) + len(st.Rate)}
}

// look is the engine's question after done of level rec's measured
// requests finished: nil to go on, or why the level stops. Looks come from
// every worker; one at a time is taken, and a worker that finds one under
// way goes on sending (the next finished request asks again).
func (l *looker) look(rec *result.LevelRecord, done int) *result.LevelStop {
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
	l.next[rec.Level] = max(done+1, done+done/lookEvery)
	stop := l.rules.Look(rec.Level, &p, done)
	if stop != nil {
		stop.Looks = l.looks[rec.Level]
	}
	return stop
}

// annotate completes the stop the engine recorded for a level that ran to
// a cap: the looks it had and the confidence they were at.
func (l *looker) annotate(rec *result.LevelRecord) {
	if l == nil || rec.Stop == nil || rec.Stop.Reason != result.StopCapped {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	rec.Stop.Looks, rec.Stop.Confidence = l.looks[rec.Level], l.rules.Confidence()
}

// levelDone judges the sweep's saturation at the level just done (its
// point p, label's samples), against the level before it.
func (l *looker) levelDone(p *result.Point) {
	if l == nil || p.Turn > 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	cur := stopping.Level{Point: p, Samples: l.agg.Samples(p.Label())}
	if l.stop == nil {
		l.stop = l.rules.Saturated(l.last, cur, l.levels)
	}
	l.last = cur
}

// stopSweep reports whether the sweep has reached saturation.
func (l *looker) stopSweep() bool {
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stop != nil
}

// skipped notes the levels the sweep did not run.
func (l *looker) skipped(specs []result.LevelSpec) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stop == nil {
		return
	}
	for _, s := range specs {
		l.stop.Skipped = append(l.stop.Skipped, s.Label)
	}
}

// sweepStop is the sweep's stop, for the stage's record (nil: none).
func (l *looker) sweepStop() *result.SweepStop {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stop
}

// finishStops completes the stage's points for the report from its
// records: each until level's intervals and stop (stopping.Finish), and
// the sweep's recorded stop.
func finishStops(res *result.Stage, sr stageResult) {
	rules := stopping.New(sr.plan)
	if rules == nil {
		return
	}
	res.SweepStop = sr.sweepStop
	idx := 0
	for i := range res.Points {
		p := &res.Points[i]
		if p.Turn > 0 {
			continue
		}
		rules.Finish(idx, p, sr.agg.Samples(p.Label()))
		idx++
	}
}
