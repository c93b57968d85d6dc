package shape

import (
	"time"

	"github.com/runnerbench/runner/result"
)

// series is an arrival process whose rate follows a series over the level
// (a stage's series: over rate): the plan's process (Poisson, constant,
// gamma) drawn at one arrival a second, each offset taken as a count of
// expected arrivals and mapped onto the series' time through the inverse of
// its integral (time rescaling: a Poisson process at rate 1 mapped through
// Λ⁻¹ is the non-homogeneous Poisson process of rate λ(t); constant
// arrivals land where the expected count reaches each whole number). The
// process ends with the series.
type series struct {
	unit Arrivals // the plan's process at one arrival a second
	s    *result.Series
}

// newSeries is the process kind at p, its rate following p.Series.
func newSeries(kind func(Pace) Arrivals, p Pace) Arrivals {
	unit := p
	unit.Rate, unit.Series = 1, nil
	return &series{unit: kind(unit), s: p.Series}
}

func (a *series) Next() (time.Duration, bool) {
	x, ok := a.unit.Next()
	if !ok {
		return 0, false
	}
	t, ok := a.s.Inverse(x.Seconds())
	if !ok || t >= a.s.Duration() {
		return 0, false // the series is over: its level ends there
	}
	return t, true
}
