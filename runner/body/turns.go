package body

import (
	"github.com/runnerbench/runner/protocol"
	"github.com/runnerbench/runner/runner/synth"
	"github.com/runnerbench/runner/scenario"
)

// Conversation is one multi-turn conversation in progress.
type Conversation struct {
	// Seq is the conversation's claimed sequence number.
	Seq int
	// Nonce leads the conversation's history: its own turns may share a
	// cached prefix, never another conversation's.
	Nonce string
	// Model is the model every turn asks for ("": the endpoint's).
	Model   string
	history []scenario.Message
}

// Conversation starts conversation seq (a claimed sequence number) of a
// level, with a nonce of its own, and its model when the stage spreads its
// requests over several.
func (s *Stage) Conversation(level, seq int) *Conversation {
	c := &Conversation{Seq: seq, Nonce: s.nonces.Next()}
	if len(s.st.Models) > 0 {
		c.Model = s.modelFor(level, seq)
	}
	return c
}

// Answer adds the assistant's reply, read from its captured response by
// the stage's protocol (the plan loader allows turns only on a
// conversational one), to c's history.
func (s *Stage) Answer(c *Conversation, response []byte) {
	reply := s.proto.(protocol.Conversational).Reply(response)
	c.history = append(c.history, scenario.Message{Role: "assistant", Content: reply})
}

// TurnSeq numbers turn t (1-based) of conversation conv.
func (s *Stage) TurnSeq(conv, turn int) int { return conv*s.turns + turn - 1 }

// userTurn returns the new user message of a conversation's turn (the
// first turn's carrying the conversation's nonce) and its max_tokens.
// Synthetic prompts draw a fresh prompt of the stage's length (the first
// turn's after the group's prefix, with shared prefixes); supplied prompts
// take the set's prompts in order, conversation c turn t using prompt
// (c·K + t − 1) mod n, so a file of n prompts is read through as n/K
// conversations. A chat-format prompt opens a conversation with all its
// messages; after the first turn only its last user message is used.
func (s *Stage) userTurn(level int, c *Conversation, turn int) (text string, opening []scenario.Message, maxTokens int) {
	seq := s.TurnSeq(c.Seq, turn)
	r := s.rng(level, seq)
	if s.synthetic {
		if turn == 1 {
			text = s.synthText(r, c.Seq, c.Nonce)
		} else {
			text = synth.Filler(s.sizer.Words(s.input.Sample(r)))
		}
		return text, nil, s.output.Sample(r)
	}
	p := s.loaded[seq%len(s.loaded)]
	maxTokens = p.MaxTokens
	if maxTokens <= 0 {
		maxTokens = s.output.Sample(r)
	}
	switch {
	case len(p.Messages) == 0 && turn == 1:
		return synth.LeadNonce(c.Nonce, p.Text), nil, maxTokens
	case len(p.Messages) == 0:
		return p.Text, nil, maxTokens
	case turn == 1:
		opening = append([]scenario.Message(nil), p.Messages...)
		opening[0].Content = synth.LeadNonce(c.Nonce, opening[0].Content)
		return "", opening, maxTokens
	}
	for i := len(p.Messages) - 1; i >= 0; i-- {
		if p.Messages[i].Role == "user" {
			return p.Messages[i].Content, nil, maxTokens
		}
	}
	return p.Messages[len(p.Messages)-1].Content, nil, maxTokens
}

// Turn builds turn t of conversation c: the history so far plus the
// turn's new user message.
func (s *Stage) Turn(level int, c *Conversation, turn int) (*Job, error) {
	text, opening, maxTokens := s.userTurn(level, c, turn)
	j := &Job{Nonce: c.Nonce, MaxTokens: maxTokens, Model: c.Model}
	switch {
	case turn == 1 && opening != nil:
		c.history = opening
	case turn == 1:
		c.history = []scenario.Message{{Role: "user", Content: text}}
	default:
		c.history = append(c.history, scenario.Message{Role: "user", Content: text})
	}
	if err := s.encode(j, "", c.history, nil, nil, nil); err != nil {
		return nil, err
	}
	s.giveUp(j, level, s.TurnSeq(c.Seq, turn))
	return j, nil
}
