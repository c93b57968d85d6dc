package scenario

import (
	"math"
	"time"
)

// Traffic as people make it: requests given up on (cancel_*). Each
// setting is a stage field, validated here and compiled into the
// LoadPlan; the engine draws each request's part with the stage's seed.

// Cancel is when a stage's requests are given up on: After their send (0:
// not by time) or after Tokens token chunks (0: not by tokens), whichever
// comes first, for a Share of them drawn with the seed; with neither After
// nor Tokens, each of the Share gives up after a number of token chunks
// drawn uniformly below its max_tokens.
type Cancel struct {
	After  time.Duration
	Tokens int
	Share  float64
}

// cancel is the stage's Cancel, nil when its requests are never given up on.
func (s *Stage) cancel() *Cancel {
	if s.CancelAfter <= 0 && s.CancelAfterTokens <= 0 && s.CancelShare <= 0 {
		return nil
	}
	c := &Cancel{After: s.CancelAfter.D(), Tokens: s.CancelAfterTokens, Share: s.CancelShare}
	if c.Share <= 0 {
		c.Share = 1
	}
	return c
}

// stageCancel checks the cancel_* settings: a time, a count of token
// chunks within the token limit, a share in (0, 1]; by tokens only on a
// streamed API.
func (v *validator) stageCancel(path string, s *Stage) {
	v.nonNegDur(path+".cancel_after", s.CancelAfter)
	if v.has(path+".cancel_after") && s.CancelAfter == 0 {
		v.errf(path+".cancel_after", "%s: cancel_after must be longer than 0s (leave it out to never cancel by time)", path)
	}
	if n := s.CancelAfterTokens; n < 0 || n > MaxTokens || (n == 0 && v.has(path+".cancel_after_tokens")) {
		v.errf(path+".cancel_after_tokens", "%s: cancel_after_tokens must be between 1 and %d, got %d", path, MaxTokens, n)
	}
	if sh := s.CancelShare; v.has(path+".cancel_share") && !(sh > 0 && sh <= 1) || math.IsNaN(sh) {
		v.errf(path+".cancel_share", "%s: cancel_share must be above 0 and at most 1, got %g", path, sh)
	}
	api := s.API
	if api == "" {
		api = DefaultAPI
	}
	byTokens := s.CancelAfterTokens > 0 || (s.CancelShare > 0 && s.CancelAfter == 0)
	if byTokens && !streams(api) {
		at := path + ".cancel_after_tokens"
		if s.CancelAfterTokens == 0 {
			at = path + ".cancel_share"
		}
		v.errf(at, "%s: api %s answers in one piece, with no tokens to give up after: use cancel_after (a time)", path, api)
	}
}
