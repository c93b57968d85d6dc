// Package dist draws from the probability distributions Runner samples:
// open-loop arrival gaps (gamma) and the statistics' resampling (gamma,
// beta), from the caller's seeded generator, so every draw is reproducible.
package dist

import (
	"math"
	"math/rand/v2"
)

// Gamma draws from Gamma(k, 1) by Marsaglia and Tsang's squeeze (ACM TOMS
// 26(3), 2000): one normal and one uniform per try, more than 95% of tries
// accepted for every shape, so a draw costs the same for k = 2 as for
// k = 10⁷. For k < 1 it draws Gamma(k+1, 1)·U^(1/k), the standard boost.
func Gamma(r *rand.Rand, k float64) float64 {
	if k < 1 {
		u := r.Float64()
		for u == 0 {
			u = r.Float64()
		}
		return Gamma(r, k+1) * math.Pow(u, 1/k)
	}
	d := k - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := r.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}
