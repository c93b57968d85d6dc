package shape

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/runnerbench/runner/runner/clock"
	"github.com/runnerbench/runner/scenario"
)

// Users is a closed loop of people (a stage's users: [...]): each of n users
// holds one conversation at a time (the engine's unit: a claimed request),
// and waits a think time before each request after their first: before a
// new conversation here, between a conversation's turns in the engine
// (Level.Think). Their starts are spread over ramp, as a closed loop's
// streams are. It splits as the closed loop does: shard i of N runs n/N users.
func Users(n int, ramp time.Duration, think Think) Dispatcher {
	return closedLoop{conc: n, ramp: ramp, think: think}
}

// Think is how long a user waits before turn (from 1) of conversation seq:
// a pure function of the stage's seed, the level and the conversation, so
// which worker or shard sends it does not change it.
type Think interface {
	Pause(seq, turn int) time.Duration
}

// Thinker is the Think of a plan's think time for level idx of a stage
// seeded seed.
func Thinker(tt scenario.ThinkTime, seed int64, idx int) Think {
	return thinker{tt: tt, seed: seed, level: idx}
}

// thinker draws a plan's think time on a stream of its own ("think"), so the
// draws share nothing with the prompts, lengths or arrivals.
type thinker struct {
	tt    scenario.ThinkTime
	seed  int64
	level int
}

func (t thinker) Pause(seq, turn int) time.Duration {
	if t.tt.IsFixed() {
		return t.tt.Fixed.D()
	}
	// Conversations are at most scenario.MaxRequests and turns at most
	// scenario.MaxTurns: seq·128 + turn fits the second word's low half.
	key := uint64(t.level)<<32 | uint64(uint32(seq*128+turn))
	return t.tt.Draw(rand.New(rand.NewPCG(uint64(t.seed)^0x7468696e6b000000, key)))
}

// pause waits out a user's think time before conversation seq, counted
// from free (when their last conversation ended), and returns when the
// request is due; false when the level's window closes first (the user
// does not come back in it) or ctx ends.
func (c closedLoop) pause(ctx context.Context, r Run, seq int, free time.Time) (time.Time, bool) {
	due := free.Add(c.think.Pause(seq, 1))
	if d := r.Level().Duration; d > 0 && !due.Before(r.Start().Add(d)) {
		return due, false
	}
	return due, clock.SleepUntil(ctx, due)
}
