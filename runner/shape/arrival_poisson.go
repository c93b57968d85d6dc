package shape

import (
	"math/rand/v2"
	"time"
)

// poisson is the Poisson process: exponential gaps of mean 1/rate, the
// first arrival at once.
type poisson struct {
	rng     *rand.Rand
	rate, t float64 // t: the last offset, seconds
	started bool
}

func newPoisson(p Pace) Arrivals { return &poisson{rng: p.rng(), rate: p.Rate} }

func (a *poisson) Next() (time.Duration, bool) {
	if !a.started {
		a.started = true
		return 0, true
	}
	a.t += a.rng.ExpFloat64() / a.rate
	return offset(a.t), true
}
