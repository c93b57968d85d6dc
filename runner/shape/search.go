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
		lvl = s.st.rateLevel(d.Next, s.st.Plan.Requests.Each, probeSeed(s.st.Plan.Seed, probe))
	} else {
		lvl = s.st.closedLevel(int(d.Next), s.st.Plan.Requests.Each)
	}
	lvl.Spec.Probe = probe
	lvl.Spec.Label = result.LevelLabel(lvl.Spec.Concurrency, lvl.Spec.Rate, probe, 0)
	return lvl, true
}

// probeSeed is a probe's arrival seed: the stage's, mixed with the probe's
// number (a 64-bit odd constant spreads consecutive numbers apart).
func probeSeed(seed int64, probe int) int64 {
	return seed ^ int64(uint64(probe)*0x9e3779b97f4a7c15)
}
