// Package search is a capacity search's mind: given the probes measured so
// far, in the order they ran, it says which load to probe next, or why the
// search ends, and what the search has found. It is a pure function of the
// plan's search block and the probes' points, so the engine (which runs the
// probes it asks for) and a report recomputed from the records (which replays
// the same points) reach the same decisions.
//
// The search brackets each target's boundary (probes grow geometrically from
// min until the target fails), then bisects to the precision. A load's outcome
// for a target is confident when the 95% interval of every metric the target
// reads lies wholly on one side of the target's boundary: the target gives
// the same outcome at every corner of the box those intervals make. A load
// whose outcome is not confident, and that could still move a bracket, is
// probed again (up to repeats times) rather than decided by one noisy probe.
package search

import (
	"math"
	"slices"

	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
)

// Decision is what a search does after the probes it was given.
type Decision struct {
	// Next is the load (concurrency or rate) to probe next, when Stop is "".
	Next float64
	// Stop says why the search ends: one of result's SearchStop values, or
	// "" while it goes on.
	Stop string
	// Result is the outcome if the search ended here (a search whose records
	// end while it wanted another probe was interrupted).
	Result *result.SearchResult
}

// Decide replays the search over its probes (the stage's points in the order
// they ran; per-turn points are skipped) and decides.
func Decide(cfg *scenario.Search, points []result.Point) Decision {
	s := newState(cfg, points)
	for _, tg := range s.targets {
		for _, l := range s.loads {
			tg.v[l] = s.judge(tg.t, l)
		}
		s.bracket(tg)
	}
	next, stop := s.next()
	return Decision{Next: next, Stop: stop, Result: s.result(stop)}
}

// load is one load the search probed, with its probes in order.
type load struct {
	x      float64
	label  string
	probes []*result.Point
	nums   []int // the probes' numbers
	last   int   // when it was last probed (its latest probe's position)
}

// state is the search after its probes.
type state struct {
	cfg         *scenario.Search
	loads       []*load // by load, ascending
	probes      int
	timeS       float64
	interrupted bool
	targets     []*target
	noiseCache  map[string][2]float64
	scaleCache  map[string]float64
}

// target is one target's view of the probes.
type target struct {
	t          *scenario.Target
	v          map[*load]*verdict
	pass, fail *load // the bracket: highest decided pass below the lowest decided fail
	status     string
	// unconfirmed are the loads the status rests on that were probed only
	// once: the search probes each again before it is done with the target.
	unconfirmed []*load
	notes       []string
}

func newState(cfg *scenario.Search, points []result.Point) *state {
	s := &state{cfg: cfg, noiseCache: map[string][2]float64{}, scaleCache: map[string]float64{}}
	byX := map[float64]*load{}
	for i := range points {
		p := &points[i]
		if p.Part() {
			continue
		}
		s.probes++
		s.timeS += p.DurationS
		s.interrupted = s.interrupted || p.Interrupted
		if p.Interrupted {
			continue // its numbers cover part of a probe: they decide nothing
		}
		x := s.loadOf(p)
		l := byX[x]
		if l == nil {
			l = &load{x: x, label: s.label(x)}
			byX[x] = l
			s.loads = append(s.loads, l)
		}
		l.probes = append(l.probes, p)
		l.nums = append(l.nums, p.Probe)
		l.last = s.probes
	}
	slices.SortFunc(s.loads, func(a, b *load) int { return cmpFloat(a.x, b.x) })
	for _, t := range cfg.Targets {
		s.targets = append(s.targets, &target{t: t, v: map[*load]*verdict{}})
	}
	return s
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// loadOf is the load a probe ran at.
func (s *state) loadOf(p *result.Point) float64 {
	if s.cfg.Over == scenario.OverRate && p.Rate != nil {
		return *p.Rate
	}
	return float64(p.Concurrency)
}

// label names a load as a level's label does.
func (s *state) label(x float64) string {
	if s.cfg.Over == scenario.OverRate {
		return result.LevelLabel(0, &x, 0, 0)
	}
	return result.LevelLabel(int(x), nil, 0, 0)
}

// bracket finds the target's bracket among the loads decided for it, and
// whether the target is resolved.
func (s *state) bracket(tg *target) {
	for _, l := range s.loads {
		if v := tg.v[l]; v.decided && !v.passed {
			tg.fail = l
			break
		}
	}
	for _, l := range s.loads {
		v := tg.v[l]
		if !v.decided || !v.passed {
			continue
		}
		if tg.fail == nil || l.x < tg.fail.x {
			tg.pass = l
		} else {
			tg.notes = append(tg.notes, l.label+" passed although "+tg.fail.label+", below it, failed: the target is not monotone in load there; the bracket ends at the lowest load that failed")
		}
	}
	var ends []*load
	switch {
	case tg.fail != nil && tg.fail.x <= s.cfg.Min:
		tg.status, ends = result.SearchBelowMin, []*load{tg.fail}
	case tg.pass != nil && tg.pass.x >= s.cfg.Max:
		tg.status, ends = result.SearchAboveMax, []*load{tg.pass}
	case tg.pass != nil && tg.fail != nil && s.precise(tg.pass.x, tg.fail.x):
		tg.status, ends = result.SearchFound, []*load{tg.pass, tg.fail}
	}
	for _, l := range ends {
		if len(l.probes) < confirmProbes && *s.cfg.Repeats > 0 && !tg.v[l].exact() {
			tg.unconfirmed = append(tg.unconfirmed, l)
		}
	}
}

// confirmProbes is how many probes a load an outcome rests on needs: one
// probe thrown far off by an accident (a stalled client) looks clear, and
// would decide a capacity alone; a second probe there does not repeat the
// accident, and the two then disagree, which the noise model sees.
const confirmProbes = 2

// precise reports whether a bracket is within the search's precision.
func (s *state) precise(lo, hi float64) bool {
	if s.cfg.Over == scenario.OverRate {
		return hi <= lo*(1+s.cfg.Step)*(1+1e-9)
	}
	return hi-lo <= s.cfg.Step
}

// next is the load to probe next, or why the search stops. Targets are
// resolved in the plan's order, so a budget that runs out leaves the later
// tiers unresolved, not all of them half done.
func (s *state) next() (float64, string) {
	switch {
	case s.interrupted:
		return 0, result.SearchStopInterrupted
	case !slices.ContainsFunc(s.targets, (*target).open):
		return 0, result.SearchStopDone
	case s.probes >= s.cfg.Budget.Probes:
		return 0, result.SearchStopProbeBudget
	case s.cfg.Budget.Time > 0 && s.timeS >= s.cfg.Budget.Time.D().Seconds():
		return 0, result.SearchStopTimeBudget
	}
	// An unclear load that could still move a bracket is probed again
	// before anything new, the latest first (it is nearest the boundary).
	var again *load
	for _, l := range s.loads {
		if s.pending(l) && (again == nil || l.last > again.last) {
			again = l
		}
	}
	if again != nil {
		return again.x, ""
	}
	for _, tg := range s.targets {
		switch {
		case tg.status == "":
			return s.want(tg), ""
		case len(tg.unconfirmed) > 0:
			return tg.unconfirmed[0].x, ""
		}
	}
	return 0, result.SearchStopDone
}

// open reports whether the search is not done with a target: it is not
// resolved, or the loads its outcome rests on are not confirmed.
func (tg *target) open() bool { return tg.status == "" || len(tg.unconfirmed) > 0 }

// pending reports whether an undecided load lies inside the open bracket of
// a target not yet resolved: its outcome could move that bracket.
func (s *state) pending(l *load) bool {
	for _, tg := range s.targets {
		if tg.status != "" || tg.v[l].decided {
			continue
		}
		if (tg.pass == nil || l.x > tg.pass.x) && (tg.fail == nil || l.x < tg.fail.x) {
			return true
		}
	}
	return false
}

// want is the load that narrows a target's bracket: min first, then twice
// the highest pass until something fails, then the middle of the bracket.
func (s *state) want(tg *target) float64 {
	switch {
	case tg.pass == nil:
		return s.cfg.Min
	case tg.fail == nil:
		return s.grow(tg.pass.x)
	}
	return s.mid(tg.pass.x, tg.fail.x)
}

// grow doubles a load, up to max (a rate to three significant digits).
func (s *state) grow(x float64) float64 {
	g := min(s.cfg.Max, 2*x)
	if r := roundSig(g, 3); s.cfg.Over == scenario.OverRate && r > x && r <= s.cfg.Max {
		g = r
	}
	return g
}

// mid splits a bracket: halfway for concurrency (precision is in streams),
// the geometric middle for rate (precision is relative), to three
// significant digits where that stays inside.
func (s *state) mid(lo, hi float64) float64 {
	if s.cfg.Over != scenario.OverRate {
		return math.Floor((lo + hi) / 2)
	}
	g := math.Sqrt(lo * hi)
	if r := roundSig(g, 3); r > lo && r < hi {
		return r
	}
	return g
}

// roundSig rounds x to n significant digits, so probe labels stay readable.
func roundSig(x float64, n int) float64 {
	if x == 0 {
		return 0
	}
	scale := math.Pow(10, float64(n)-math.Ceil(math.Log10(math.Abs(x))))
	return math.Round(x*scale) / scale
}
