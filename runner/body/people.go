package body

import (
	"math/rand/v2"
)

// What people do with a request, beside what it says: whether its user
// gives up on it (the stage's cancel_*). Each is drawn from a stream of
// its own, keyed by the stage's seed and the request's level and sequence
// number, so it neither shifts a prompt's or a length's draws nor depends
// on which worker sent the request (nor on the shard).

// Streams of draws, one per decision, told apart in the PCG's first word.
const (
	cancelStream = 0x63616e63656c0000 // "cancel"
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
