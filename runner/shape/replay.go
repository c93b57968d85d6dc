package shape

import (
	"math"
	"strconv"

	"github.com/runnerbench/runner/result"
)

// replaySweep is a replay stage's one level: the trace's window, sent on its
// clock.
type replaySweep struct {
	st   Stage
	done bool
}

// MaxConns is the level's in-flight cap, or about its busiest second's arrivals.
func (s *replaySweep) MaxConns() int {
	return rateConns(float64(s.st.Replay.Summary.PeakRate1s), s.st.Plan.MaxConcurrency)
}

// Next returns the replay's level once.
func (s *replaySweep) Next(*result.Point) (Level, bool) {
	if s.done {
		return Level{}, false
	}
	s.done = true
	return s.st.replayLevel(), true
}

// replayLevel is the open-loop level that replays the trace: its target
// rate is the window's mean rate, its lengths the trace's means.
func (s Stage) replayLevel() Level {
	rp, st := s.Replay, s.Plan
	sum := rp.Summary
	rate := sum.MeanRate
	spec := s.Spec("rate="+strconv.FormatFloat(rate, 'f', -1, 64), st.MaxConcurrency, &rate)
	spec.InputTokens = int(math.Round(sum.InputTokens.Mean))
	spec.OutputTokens = int(math.Round(sum.OutputTokens.Mean))
	// A trace that shares prefixes is cached on purpose: no warning that
	// the nonce did not defeat caching.
	spec.ExpectPrefixHits = sum.ImpliedPrefixHitRate != nil && *sum.ImpliedPrefixHitRate > 0
	return Level{
		Spec:        spec,
		Concurrency: st.MaxConcurrency,
		Requests:    len(rp.Times),
		Load:        Replayed(rp.Times, float64(sum.PeakRate1s), st.MaxConcurrency),
	}
}
