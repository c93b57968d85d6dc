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
// loop's schedule), and nothing else. It drives the level through its
// LevelRun: Begin (once, when the measured window opens), Claim, Prepare,
// Send and NewWorker (one per goroutine). A new shape is a type in a file of
// its own that implements it, and the Sweep that returns its levels.
type Dispatcher interface {
	// Dispatch sends the level's measured requests, returning when they
	// have all finished (or ctx ended).
	Dispatch(ctx context.Context, lr *LevelRun)
	// Conns is how many requests may be in flight at once: the connections
	// to open and the warm-ups' parallelism.
	Conns() int
	// Split is the shape's part for one shard of a sharded run, of a level
	// lasting dur (0: unbounded); an error when the shape cannot be split.
	// Shard i's request n is the level's request n·N+i (LevelRun.Claim), so
	// the union of the shards' parts sends exactly what one process would.
	Split(shard result.Shard, dur time.Duration) (Share, error)
}

// Share is a shard's part of a level's load shape.
type Share struct {
	// Load sends the shard's part.
	Load Dispatcher
	// Concurrency is the shard's streams (closed loop) or its part of the
	// in-flight cap (open loop; 0: none).
	Concurrency int
	// Rate is the shard's mean arrival rate (open loop; nil otherwise).
	Rate *float64
	// Empty: the shard has nothing of the level to send.
	Empty bool
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
}
