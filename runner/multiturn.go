package runner

import (
	"context"
	"time"

	"github.com/runnerbench/runner/runner/body"
	"github.com/runnerbench/runner/runner/clock"
	"github.com/runnerbench/runner/runner/wire"
)

// Multi-turn conversations (a prompt set's turns: K > 1).
//
// A claimed request of the level is a whole conversation: its first turn is
// sent when the load shape says (the closed loop's free worker, the open
// loop's schedule), and each later turn as soon as the previous reply has
// arrived, resending the history: every earlier user turn and the
// assistant's actual reply to it. The conversation keeps its first turn's
// nonce at the head of the history, so its own turns may share a cached
// prefix (as real chat traffic does) but never another conversation's; the
// level therefore expects prefix-cache hits and does not warn about them.
//
// A failed turn ends its conversation: the later turns would resend a
// history the server never produced; so does a turn its user gave up on.
// On a users level (shape.Users) each turn after the first waits the user's
// think time from the reply's arrival (the next turn's body is built while
// they think), and a turn that would come after a duration-bounded level's
// window is not sent: the conversation ends there. A level's duration bounds when
// conversations start; one under way finishes its turns (within the
// level's grace), and requests counts conversations. Records are numbered Seq = conversation
// × K + turn − 1 and carry Turn (1-based).
//
// Results: the level's Point covers every turn (what checks usually read),
// and one Point per turn (Point.Turn set) follows it in the stage's points,
// so the table and JSON show how latency grows with the history. Per-turn
// points have no ITL distribution (token gaps are recorded once, into the
// level), no server counters (those are read around the whole level), and
// their throughputs are over the level's wall time.

// conversations is the unit of a multi-turn stage: each claimed request is
// a whole conversation, its later turns sent one after another on the same
// worker, each turn's reply copied as the wire reads it (wire.Capture).
type conversations struct{}

// prepare builds the first turn of conversation seq.
func (conversations) prepare(lr *LevelRun, seq int) *prepared {
	c := lr.sp.body.Conversation(lr.idx, seq)
	return lr.turn(c, 1)
}

// turn builds turn t of conversation c.
func (lr *LevelRun) turn(c *body.Conversation, t int) *prepared {
	p := lr.newPrepared(lr.sp.body.TurnSeq(c.Seq, t))
	p.rec.Turn, p.rec.Nonce, p.conv = t, c.Nonce, c
	p.job, p.err = lr.sp.body.Turn(lr.idx, c, t)
	p.rec.Model = c.Model
	lr.session(p, c.Nonce)
	return p
}

// think waits for a user's next turn, due at due; false when it would come
// after the level's window (a duration-bounded level) or ctx ends.
func (lr *LevelRun) think(ctx context.Context, due time.Time) (time.Time, bool) {
	if !lr.stopAt.IsZero() && !due.Before(lr.stopAt) {
		return due, false
	}
	return due, clock.SleepUntil(ctx, due)
}

// send sends a conversation's turns on w, starting with the prepared first
// turn (due at due), each later turn as soon as the previous reply is in.
func (conversations) send(ctx context.Context, lr *LevelRun, w *worker, p *prepared, due time.Time) {
	if w.reply == nil {
		w.reply = &wire.Capture{}
	}
	buf := w.reply
	c := p.conv
	for turn := 1; ; turn++ {
		buf.Reset()
		lr.sendOne(ctx, w, p, due, buf)
		// A failed turn ends its conversation, and so does one its user
		// gave up on: neither has a reply to answer.
		if !p.rec.OK || turn == lr.sp.body.Turns() || ctx.Err() != nil {
			return
		}
		free := time.Now() // the reply is in: the next turn is due now, or after its think time
		lr.sp.body.Answer(c, buf.Bytes())
		p = lr.turn(c, turn+1)
		due = time.Now()
		if th := lr.lvl.Think; th != nil {
			var ok bool
			if due, ok = lr.think(ctx, free.Add(th.Pause(c.Seq, turn+1))); !ok {
				return // the user would come back after the level's window: the conversation ends
			}
		} // no think time: the next turn is due when the reply is in
	}
}
