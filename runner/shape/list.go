package shape

import (
	"strconv"
	"time"

	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
)

// Stage is what a stage's sweep needs of it, compiled by the engine.
type Stage struct {
	// Plan is the stage as the plan compiled it.
	Plan *scenario.LoadPlan
	// Spec is the spec of a level of the stage at conc streams (or cap) or
	// rate: the engine's, since lengths, turns and objectives are the
	// stage's, not the shape's.
	Spec func(label string, conc int, rate *float64) result.LevelSpec
	// Replay is a trace replay's schedule (nil: the stage is no replay).
	Replay *Replay
}

// Replay is a trace replay's schedule and summary.
type Replay struct {
	// Times are the requests' send times on the replay's clock, in order.
	Times   []time.Duration
	Summary *result.TraceSummary
}

// For is the stage's load shape across levels: a trace replay's one level,
// a capacity search, a series' one level, or the plan's list of
// concurrencies, rates or users. It is the one place that picks a shape.
func For(st Stage) Sweep {
	switch {
	case st.Replay != nil:
		return &replaySweep{st: st}
	case st.Plan.Search != nil:
		return &searchSweep{st: st, cfg: st.Plan.Search}
	case st.Plan.Series != nil:
		return &seriesSweep{st: st}
	}
	return &listSweep{st: st}
}

// listSweep measures a stage's levels as the plan lists them: its
// concurrencies (closed loop), its rates (open loop) or its users, in order.
type listSweep struct {
	st   Stage
	next int
}

// MaxConns is the largest level's in-flight requests.
func (s *listSweep) MaxConns() int {
	st := s.st.Plan
	n := st.MaxConcurrency
	for _, c := range st.Concurrency {
		n = max(n, c)
	}
	for _, r := range st.Rate {
		n = max(n, rateConns(r, st.MaxConcurrency))
	}
	for _, u := range st.Users {
		n = max(n, u)
	}
	return n
}

// Next returns the next listed level; it does not look at the last point.
func (s *listSweep) Next(*result.Point) (Level, bool) {
	st := s.st.Plan
	i := s.next
	s.next++
	var lvl Level
	switch {
	case len(st.Rate) > 0 && i < len(st.Rate):
		lvl = s.st.rateLevel(st.Rate[i], st.Requests.At(i), LevelSeed(st.Seed, i))
	case len(st.Users) > 0 && i < len(st.Users):
		lvl = s.st.usersLevel(st.Users[i], st.Requests.At(i), i)
	case len(st.Rate) == 0 && len(st.Users) == 0 && i < len(st.Concurrency):
		lvl = s.st.closedLevel(st.Concurrency[i], st.Requests.At(i))
	default:
		return Level{}, false
	}
	if r := st.UntilAt(i); !r.Fixed() {
		untilLevel(&lvl, r, st.MaxRequests.At(i), st.MaxDuration)
	}
	return lvl, true
}

// untilLevel makes lvl run until rule r: at most maxRequests (0: no count
// cap) for at most maxDuration (0: no time cap), the engine's sink asked
// after each batch whether the rule is met.
func untilLevel(lvl *Level, r scenario.UntilRule, maxRequests int, maxDuration time.Duration) {
	lvl.Spec.Until = r.String()
	lvl.Requests, lvl.Duration = maxRequests, maxDuration
}

// usersLevel is level idx of a users stage: users people sending requests
// conversations (the stage's count for the level; by default one each,
// unless a duration bounds the level), thinking as the stage says.
func (s Stage) usersLevel(users, requests, idx int) Level {
	st := s.Plan
	spec := s.Spec(result.UsersLabel(users), 0, nil)
	spec.Users = users
	var think Think
	if t := st.Think; t != nil {
		think = Thinker(*t, st.Seed, idx)
		spec.ThinkMs = float64(t.Nominal()) / float64(time.Millisecond)
	}
	if requests <= 0 && st.Duration <= 0 {
		requests = users
	}
	return Level{
		Spec:        spec,
		Concurrency: users,
		Requests:    requests,
		Duration:    st.Duration,
		Load:        Users(users, st.Ramp, think),
		Think:       think,
	}
}

// closedLevel is a closed-loop level of conc streams sending requests (the
// stage's count for the level), or by default the reference's single wave
// of conc requests (one a replicate) unless a duration bounds the level.
func (s Stage) closedLevel(conc, requests int) Level {
	st := s.Plan
	spec := s.Spec("c="+strconv.Itoa(conc), conc, nil)
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
		Load:        Closed(conc, st.Ramp),
	}
}

// rateLevel is an open-loop level at rate requests/s sending requests (the
// stage's count for the level; 0: rate × duration), capped at the stage's
// max_concurrency, its arrivals drawn from seed.
func (s Stage) rateLevel(rate float64, requests int, seed int64) Level {
	st := s.Plan
	return Level{
		Spec:        s.Spec("rate="+strconv.FormatFloat(rate, 'g', -1, 64), st.MaxConcurrency, &rate),
		Concurrency: st.MaxConcurrency,
		Requests:    rateLevelTotal(requests, st.Duration, rate),
		Duration:    st.Duration,
		Load:        Open(rate, st.Arrival, st.Burstiness, seed, st.MaxConcurrency),
	}
}
