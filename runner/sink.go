package runner

import "github.com/runnerbench/runner/result"

// Sink receives what a stage produces: its records. The engine measures;
// everything computed from the records (points, checks, reports) is the
// sink's business, so the engine imports none of it.
type Sink interface {
	// StageStarted is called once the stage is compiled, before its first level.
	StageStarted(st *result.StageRecord)
	// LevelStarted is called before a level's first request, with the
	// record's identity and spec filled in.
	LevelStarted(rec *result.LevelRecord)
	// Request receives every finished request, warm-ups included (Warmup
	// set). It is called concurrently from the workers and must be quick.
	Request(r *result.Request)
	// LevelDone receives the level's record once every request of the level
	// has finished, and returns the level's point, which adaptive load
	// shapes (a capacity search) decide their next level by.
	LevelDone(rec *result.LevelRecord) result.Point
}

// Looker is a Sink that can end a level of a stage with until: before its
// cap: it is asked as the level's measured requests finish (LevelSpec.Until
// set), and a stop it returns ends the level. The engine then claims no
// more requests; those in flight finish and are recorded, and the stop
// goes into the level's record.
type Looker interface {
	// Look is asked after done of level rec's measured requests finished
	// (rec holds the level so far: its spec and window). It is called from
	// the workers, concurrently, and must be quick when it does not look.
	Look(rec *result.LevelRecord, done int) *result.LevelStop
}

// SweepStopper is a Sink that can end a stage's sweep before its last
// level (a stage with stop_at_saturation): asked after each level, and
// told which levels the sweep then skipped.
type SweepStopper interface {
	StopSweep() bool
	Skipped(specs []result.LevelSpec)
}
