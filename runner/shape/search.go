package shape

import (
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
	"github.com/runnerbench/runner/search"
)

// searchSweep is a capacity search's load shape: it asks package search,
// after every probe, which load to measure next. The decisions are a pure
// function of the probes' points, so the report, recomputed from the records,
// replays them to the same outcome.
type searchSweep struct {
	st     Stage
	cfg    *scenario.Search
	points []result.Point
}

// MaxConns is what a probe at max keeps in flight.
func (s *searchSweep) MaxConns() int {
	if s.cfg.Over == scenario.OverRate {
		return rateConns(s.cfg.Max, s.st.Plan.MaxConcurrency)
	}
	return int(s.cfg.Max)
}

// Next returns the probe the search wants after the last one's point.
func (s *searchSweep) Next(last *result.Point) (Level, bool) {
	if last != nil {
		s.points = append(s.points, *last)
	}
	d := search.Decide(s.cfg, s.points)
	if d.Stop != "" {
		return Level{}, false
	}
	probe := len(s.points) + 1
	var lvl Level
	if s.cfg.Over == scenario.OverRate {
		// Each probe draws its own arrivals (reproducibly), so a repeated
		// probe is a second sample of the load, not a replay of the first.
		lvl = s.st.rateLevel(d.Next, s.st.Plan.Requests.Each, LevelSeed(s.st.Plan.Seed, probe))
	} else {
		lvl = s.st.closedLevel(int(d.Next), s.st.Plan.Requests.Each)
	}
	lvl.Spec.Probe = probe
	lvl.Spec.Label = result.LevelLabel(lvl.Spec.Concurrency, lvl.Spec.Rate, probe, 0)
	return lvl, true
}

// LevelSeed is the arrival seed of an open loop's n-th level of a stage
// seeded seed (a listed level's index, from 0, or a probe's number, from
// 1): the stage's, mixed with n (a 64-bit odd constant spreads consecutive
// numbers apart), so the first listed level keeps the stage's seed. Each
// level draws its own arrivals: levels that replayed one pattern scaled
// would share its luck (a pattern 30% dense in its first seconds is so at
// every rate), and would not be the independent samples of the server
// that a comparison of them, or a repeated probe, takes them to be.
func LevelSeed(seed int64, n int) int64 {
	return seed ^ int64(uint64(n)*0x9e3779b97f4a7c15)
}
