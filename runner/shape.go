package runner

import (
	"context"
	"time"

	"github.com/runnerbench/runner/result"
)

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

// Level is one load level to measure.
type Level struct {
	// Spec is what the level is: its label, the whole level's concurrency or
	// rate, the requested lengths and the objectives it is judged against.
	Spec result.LevelSpec
	// Concurrency is the streams this process keeps in flight (closed
	// loop), or its in-flight cap (open loop; 0: none).
	Concurrency int
	// Requests is how many measured requests (conversations, with turns) to
	// send; 0 means until Duration ends.
	Requests int
	// Duration bounds the level by time (0: none).
	Duration time.Duration
	// Load decides when each measured request goes out.
	Load Dispatcher
	// Part is this shard's part of the level in a sharded run (nil: the
	// whole level); Concurrency, Requests and Load are already cut to it.
	Part *Part
	// Slot places the level in a scheduled run (nil: it starts when the
	// last level ended).
	Slot *Slot
}

// Dispatcher is a load shape within a level: it decides when each of the
// level's measured requests goes out (the closed loop's free worker, the open
// loop's schedule), and nothing else. It drives the level through the
// levelRun: begin (once, when the measured window opens), claim, prepare,
// send and newWorker (one per goroutine).
type Dispatcher interface {
	dispatch(ctx context.Context, lr *levelRun)
	// conns is how many requests may be in flight at once: the connections
	// to open and the warm-ups' parallelism.
	conns() int
}

// Sweep is a stage's load shape across levels: which level comes next. A
// fixed list of concurrencies or rates is one; a capacity search, which
// picks the next level from the point measured at the last, is another.
type Sweep interface {
	// Next returns the next level to measure, given the point measured at
	// the level it returned last (nil at first); false ends the stage.
	Next(last *result.Point) (Level, bool)
	// MaxConns is the most requests any of its levels keeps in flight, so
	// the connection pool can be sized once for the stage.
	MaxConns() int
	// Kind names the load for reports: "concurrency", "rate" or "trace".
	Kind() string
}
