package shape

import (
	"math/rand/v2"
	"time"

	"github.com/runnerbench/runner/internal/dist"
)

// gamma is a renewal process of gamma-distributed gaps: Gamma(k, θ) with
// k = 1/burstiness and θ = 1/(rate·k), so the mean gap is 1/rate and the
// gaps' squared coefficient of variation is the burstiness (above 1
// burstier than Poisson, below 1 more regular). The first arrival is at once.
type gamma struct {
	rng        *rand.Rand
	rate, k, t float64 // t: the last offset, seconds
	started    bool
}

// newGamma is the gamma process at p; burstiness 1 (or none) is the
// exponential, drawn as the Poisson process draws it.
func newGamma(p Pace) Arrivals {
	b := p.Burstiness
	if !(b > 0) || b == 1 {
		return newPoisson(p)
	}
	return &gamma{rng: p.rng(), rate: p.Rate, k: 1 / b}
}

func (a *gamma) Next() (time.Duration, bool) {
	if !a.started {
		a.started = true
		return 0, true
	}
	a.t += dist.Gamma(a.rng, a.k) / (a.rate * a.k)
	return offset(a.t), true
}
