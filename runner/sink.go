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
