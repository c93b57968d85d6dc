package runner

import (
	"strconv"

	"github.com/runnerbench/runner/result"
)

// listSweep measures a stage's levels as the plan lists them: its
// concurrencies (closed loop) or its rates (open loop), in order.
type listSweep struct {
	sp   *stagePlan
	next int
}

func newListSweep(sp *stagePlan) *listSweep { return &listSweep{sp: sp} }

// MaxConns is the largest level's in-flight requests.
func (s *listSweep) MaxConns() int {
	st := s.sp.st
	n := st.MaxConcurrency
	for _, c := range st.Concurrency {
		n = max(n, c)
	}
	for _, r := range st.Rate {
		n = max(n, rateConns(r, st.MaxConcurrency))
	}
	return n
}

// Next returns the next listed level; it does not look at the last point.
func (s *listSweep) Next(*result.Point) (Level, bool) {
	st := s.sp.st
	i := s.next
	s.next++
	if rates := st.Rate; len(rates) > 0 {
		if i >= len(rates) {
			return Level{}, false
		}
		return s.sp.rateLevel(rates[i], st.Requests.At(i), s.sp.seed), true
	}
	if i >= len(st.Concurrency) {
		return Level{}, false
	}
	return s.sp.closedLevel(st.Concurrency[i], st.Requests.At(i)), true
}

// closedLevel is a closed-loop level of conc streams sending requests (the
// stage's count for the level), or by default the reference's single wave
// of conc requests (one a replicate) unless a duration bounds the level.
func (sp *stagePlan) closedLevel(conc, requests int) Level {
	st := sp.st
	spec := sp.levelSpec("c="+strconv.Itoa(conc), conc, nil)
	if st.Replicates > 1 {
		spec.Replicates = st.Replicates
	}
	if requests <= 0 && st.Duration <= 0 {
		requests = conc * max(1, spec.Replicates)
	}
	return Level{
		Spec:        spec,
		Concurrency: conc,
		Requests:    requests,
		Duration:    st.Duration,
		Load:        closedLoop{conc: conc, ramp: st.Ramp},
	}
}

// rateLevel is an open-loop level at rate requests/s sending requests (the
// stage's count for the level; 0: rate × duration), capped at the stage's
// max_concurrency, its arrivals drawn from seed.
func (sp *stagePlan) rateLevel(rate float64, requests int, seed int64) Level {
	st := sp.st
	return Level{
		Spec:        sp.levelSpec("rate="+strconv.FormatFloat(rate, 'g', -1, 64), st.MaxConcurrency, &rate),
		Concurrency: st.MaxConcurrency,
		Requests:    rateLevelTotal(requests, st.Duration, rate),
		Duration:    st.Duration,
		Load: &openLoop{rate: rate, arrival: st.Arrival, burstiness: st.Burstiness,
			seed: seed, maxConc: st.MaxConcurrency},
	}
}

// levelSpec is the spec of a level of this stage: what was requested, and
// the objectives its metrics are judged against.
func (sp *stagePlan) levelSpec(label string, conc int, rate *float64) result.LevelSpec {
	spec := result.LevelSpec{
		Label:        label,
		Concurrency:  conc,
		Rate:         rate,
		OutputTokens: sp.output.Nominal(),
		Pinned:       sp.pinned,
		Turns:        sp.turns,
		// Shared prefixes and multi-turn histories are cached on purpose.
		ExpectPrefixHits: sp.shared != nil || sp.turns > 1,
		SliceNs:          int64(sp.st.Slices),
		Tools:            len(sp.tools) > 0,
	}
	if sp.synthetic {
		spec.InputTokens = sp.input.Nominal()
	}
	if slo := sp.st.SLO; slo != nil {
		spec.SLO = &result.SLO{TTFTMs: slo.TTFTMs, TPOTMs: slo.TPOTMs, E2EMs: slo.E2EMs}
	}
	return spec
}
