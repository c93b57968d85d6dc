// Package shape holds the load shapes: when each of a level's requests goes
// out (a Dispatcher: the closed loop, the open loop), and which levels a
// stage measures (a Sweep: the plan's list, a capacity search, a trace
// replay). A shape drives a level through the Run the engine gives it and
// never sees a request's bytes, so a new shape is a file of its own here (or
// in any package) and needs nothing of the engine's insides.
package shape

import (
	"context"
	"time"

	"github.com/runnerbench/runner/result"
)

// Run is one level in progress, as its Dispatcher drives it: Begin (once,
// when the measured window opens), Claim, Prepare, Send and NewWorker (one
// per goroutine).
type Run interface {
	// Claim hands out the next request's sequence number, or false when
	// the level has sent all it should.
	Claim() (seq int, ok bool)
	// Prepare builds measured request seq (a conversation's first turn,
	// with turns) before its due time.
	Prepare(seq int) Prepared
	// Send sends a prepared request on w; due is when it should have gone
	// out (its dispatch lag is measured from it).
	Send(ctx context.Context, w Worker, p Prepared, due time.Time)
	// NewWorker returns a worker whose token gaps count toward the level:
	// one per sending goroutine.
	NewWorker() Worker
	// Begin opens the measured window: call it once, right before the
	// first measured request goes out (after preparing the first wave, so
	// building bodies is not inside anyone's TTFT). A scheduled level waits
	// in it for its slot's opening instant.
	Begin()
	// Start is when the measured window opened (zero before Begin).
	Start() time.Time
	// Level is the level being run.
	Level() Level
	// CapWaited counts an open-loop arrival that had to wait for a
	// max_concurrency slot.
	CapWaited()
	// CoarseSends reports whether requests are handed off when due, with
	// no precise wait (the engine's Options.CoarseSends).
	CoarseSends() bool
}

// Prepared is a request built and waiting to be sent: the engine's, opaque
// to the shape.
type Prepared interface{}

// Worker is a sending goroutine's state: the engine's, opaque to the shape.
type Worker interface{}

// Exec builds and sends request seq on w, due at due.
func Exec(ctx context.Context, r Run, w Worker, seq int, due time.Time) {
	r.Send(ctx, w, r.Prepare(seq), due)
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
	// Think is how long a user waits before each request after their first
	// (a users level; nil: no one thinks): the Dispatcher waits it before a
	// new conversation, the engine between a conversation's turns.
	Think Think
	// Part is this shard's part of the level in a sharded run (nil: the
	// whole level); Concurrency, Requests and Load are already cut to it.
	Part *Part
	// Slot places the level in a scheduled run (nil: it starts when the
	// last level ended).
	Slot *Slot
}

// Dispatcher is a load shape within a level: it decides when each of the
// level's measured requests goes out (the closed loop's free worker, the open
// loop's schedule), and nothing else. A new shape is a type in a file of its
// own that implements it, and the Sweep that returns its levels.
type Dispatcher interface {
	// Dispatch sends the level's measured requests, returning when they
	// have all finished (or ctx ended).
	Dispatch(ctx context.Context, r Run)
	// Conns is how many requests may be in flight at once: the connections
	// to open and the warm-ups' parallelism.
	Conns() int
	// Split is the shape's part for one shard of a sharded run, of a level
	// lasting dur (0: unbounded); an error when the shape cannot be split.
	// Shard i's request n is the level's request n·N+i (Run.Claim), so
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

// Err is why a sweep ended its stage early, for sweeps that can (their
// Err method); nil otherwise.
func Err(s Sweep) error {
	if es, ok := s.(interface{ Err() error }); ok {
		return es.Err()
	}
	return nil
}
