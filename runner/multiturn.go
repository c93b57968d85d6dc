package runner

import (
	"context"
	"time"

	"github.com/runnerbench/runner/protocol"
	"github.com/runnerbench/runner/runner/synth"
	"github.com/runnerbench/runner/runner/wire"
	"github.com/runnerbench/runner/scenario"
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
// history the server never produced. A level's duration bounds when
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

// conversation is one multi-turn conversation in progress.
type conversation struct {
	idx     int // the claimed sequence number
	nonce   string
	history []scenario.Message
}

// reply is the assistant's text in a captured response, by the stage's
// protocol (the plan loader allows turns only on a conversational one).
func (sp *stagePlan) reply(body []byte) string {
	return sp.proto.(protocol.Conversational).Reply(body)
}

// turnSeq numbers turn t (1-based) of conversation conv.
func (sp *stagePlan) turnSeq(conv, turn int) int { return conv*sp.turns + turn - 1 }

// userTurn returns the new user message of a conversation's turn (the
// first turn's carrying the conversation's nonce) and its max_tokens.
// Synthetic prompts draw a fresh prompt of the stage's length (the first
// turn's after the group's prefix, with shared prefixes); supplied prompts
// take the set's prompts in order, conversation c turn t using prompt
// (c·K + t − 1) mod n, so a file of n prompts is read through as n/K
// conversations. A chat-format prompt opens a conversation with all its
// messages; after the first turn only its last user message is used.
func (sp *stagePlan) userTurn(level int, c *conversation, turn int) (text string, opening []scenario.Message, maxTokens int) {
	seq := sp.turnSeq(c.idx, turn)
	r := sp.rng(level, seq)
	if sp.synthetic {
		if turn == 1 {
			text = sp.synthText(r, c.idx, c.nonce)
		} else {
			text = synth.Filler(sp.sizer.Words(sp.input.Sample(r)))
		}
		return text, nil, sp.output.Sample(r)
	}
	p := sp.loaded[seq%len(sp.loaded)]
	maxTokens = p.MaxTokens
	if maxTokens <= 0 {
		maxTokens = sp.output.Sample(r)
	}
	switch {
	case len(p.Messages) == 0 && turn == 1:
		return synth.LeadNonce(c.nonce, p.Text), nil, maxTokens
	case len(p.Messages) == 0:
		return p.Text, nil, maxTokens
	case turn == 1:
		opening = append([]scenario.Message(nil), p.Messages...)
		opening[0].Content = synth.LeadNonce(c.nonce, opening[0].Content)
		return "", opening, maxTokens
	}
	for i := len(p.Messages) - 1; i >= 0; i-- {
		if p.Messages[i].Role == "user" {
			return p.Messages[i].Content, nil, maxTokens
		}
	}
	return p.Messages[len(p.Messages)-1].Content, nil, maxTokens
}

// buildTurn builds turn t of conversation c: the history so far plus the
// turn's new user message.
func (sp *stagePlan) buildTurn(level int, c *conversation, turn int) (*job, error) {
	text, opening, maxTokens := sp.userTurn(level, c, turn)
	j := &job{nonce: c.nonce, maxTokens: maxTokens}
	switch {
	case turn == 1 && opening != nil:
		c.history = opening
	case turn == 1:
		c.history = []scenario.Message{{Role: "user", Content: text}}
	default:
		c.history = append(c.history, scenario.Message{Role: "user", Content: text})
	}
	if err := sp.encode(j, "", c.history, nil, nil, nil); err != nil {
		return nil, err
	}
	return j, nil
}

// conversations is the unit of a multi-turn stage: each claimed request is
// a whole conversation, its later turns sent one after another on the same
// worker, each turn's reply copied as the wire reads it (wire.Capture).
type conversations struct{}

// prepare builds the first turn of conversation seq.
func (conversations) prepare(lr *LevelRun, seq int) *prepared {
	c := &conversation{idx: seq, nonce: lr.sp.nonces.Next()}
	rec := lr.newRecord(lr.sp.turnSeq(seq, 1))
	rec.Turn = 1
	rec.Nonce = c.nonce
	j, err := lr.sp.buildTurn(lr.idx, c, 1)
	return &prepared{rec: rec, job: j, err: err, conv: c}
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
		if !p.rec.OK || turn == lr.sp.turns || ctx.Err() != nil {
			return
		}
		c.history = append(c.history, scenario.Message{Role: "assistant", Content: lr.sp.reply(buf.Bytes())})
		rec := lr.newRecord(lr.sp.turnSeq(c.idx, turn+1))
		rec.Turn, rec.Nonce = turn+1, c.nonce
		j, err := lr.sp.buildTurn(lr.idx, c, turn+1)
		p = &prepared{rec: rec, job: j, err: err, conv: c}
		due = time.Now() // no think time: the next turn is due when the reply is in
	}
}
