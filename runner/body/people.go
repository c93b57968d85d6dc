package body

import (
	"context"
	"math/rand/v2"

	"github.com/runnerbench/runner/protocol"
	"github.com/runnerbench/runner/runner/synth"
)

// What people do with a request, beside what it says: which of the stage's
// models it goes to (models:), whether its user gives up on it (cancel_*). Each is drawn from a stream of
// its own, keyed by the stage's seed and the request's level and sequence
// number, so it neither shifts a prompt's or a length's draws nor depends
// on which worker sent the request (nor on the shard).

// Streams of draws, one per decision, told apart in the PCG's first word.
const (
	cancelStream = 0x63616e63656c0000 // "cancel"
	modelStream  = 0x6d6f64656c000000 // "model"
)

// draws is request (level, seq)'s stream of draws for one decision.
func (s *Stage) draws(stream uint64, level, seq int) *rand.Rand {
	return rand.New(rand.NewPCG(splitmix(uint64(s.seed)^stream), uint64(level)<<32|uint64(uint32(seq))))
}

// splitmix is SplitMix64's finaliser: a seed mixed with a stream's tag
// gives well-spread, unrelated first words.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// giveUp sets when j's user gives up on it: the stage's cancel_after and
// cancel_after_tokens for its cancel_share of requests, or, with a share
// alone, after a count of token chunks drawn uniformly from 1 to
// max_tokens − 1 (a request that asks for one token cannot be cut).
func (s *Stage) giveUp(j *Job, level, seq int) {
	c := s.st.Cancel
	if c == nil {
		return
	}
	r := s.draws(cancelStream, level, seq)
	if c.Share < 1 && r.Float64() >= c.Share {
		return
	}
	if c.After > 0 || c.Tokens > 0 {
		j.GiveUpAfter, j.GiveUpTokens = c.After, c.Tokens
		return
	}
	if j.MaxTokens >= 2 {
		j.GiveUpTokens = 1 + r.IntN(j.MaxTokens-1)
	}
}

// model is the model request (level, seq) asks for: the endpoint's, or one
// of the stage's models drawn by weight (a conversation's from its own
// sequence number, so every turn goes to the same model).
func (s *Stage) modelFor(level, seq int) string {
	ms := s.st.Models
	if len(ms) == 0 {
		return s.model
	}
	total := 0.0
	for _, m := range ms {
		total += m.Share()
	}
	x := s.draws(modelStream, level, seq).Float64() * total
	for _, m := range ms {
		if x -= m.Share(); x < 0 {
			return m.Name
		}
	}
	for i := len(ms) - 1; i >= 0; i-- { // x hit the total's rounding: the last weighted model
		if ms[i].Share() > 0 {
			return ms[i].Name
		}
	}
	return s.model
}

// Probe makes probe request n of a level: a synthetic prompt of the
// stage's probe input length led by its nonce, and a pinned answer of its
// output length, whatever the stage's own prompts and mode (a probe is the
// same small request at every load). Its images, tools and batch are none.
func (s *Stage) Probe(n int) (*Job, error) {
	pr := s.st.Probe
	j := &Job{Nonce: s.nonces.Next(), MaxTokens: pr.OutputTokens}
	words := synth.ReferenceWords(pr.InputTokens)
	if s.sizer != nil {
		words = s.sizer.Words(pr.InputTokens)
	}
	b, err := s.proto.Encode(protocol.Request{
		Model: s.model, MaxTokens: j.MaxTokens, Temperature: s.temp, Pinned: true,
		Extra: s.extra, Text: synth.LeadNonce(j.Nonce, synth.Filler(words)),
	})
	if err != nil {
		return nil, err
	}
	j.Body = b
	return j, nil
}

// probeSizer calibrates the probes' prompts on the server's tokenizer when
// the stage's own prompts need no sizing (a prompt file): a probe is sized
// in the server's tokens whatever the stage sends. Its warning, if any.
func (s *Stage) probeSizer(ctx context.Context, cal *Calibrator) []string {
	if s.st.Probe == nil || s.sizer != nil {
		return nil
	}
	sz, w := cal.Sizer(ctx, s.proto, false)
	s.sizer = sz
	if w == "" {
		return nil
	}
	return []string{w}
}
