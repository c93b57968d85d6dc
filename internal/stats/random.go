package stats

import (
	"math"
	"math/rand/v2"

	"github.com/runnerbench/runner/internal/dist"
)

// rng is the generator of one comparison: PCG seeded from the options, so
// the same inputs and seed give the same interval on every machine and in
// every call order (each Compare starts its own stream). pcg is the same
// source as Rand's, for callers that want raw words without the interface.
type rng struct {
	pcg *rand.PCG
	*rand.Rand
}

func newRand(seed uint64) *rng {
	pcg := rand.NewPCG(seed, 0x9e3779b97f4a7c15)
	return &rng{pcg: pcg, Rand: rand.New(pcg)}
}

// betaDraw draws from Beta(a, b), a, b ≥ 1, as X/(X+Y) with X ~ Gamma(a)
// and Y ~ Gamma(b).
func betaDraw(r *rng, a, b float64) float64 {
	x := dist.Gamma(r.Rand, a)
	y := dist.Gamma(r.Rand, b)
	return x / (x + y)
}

// normalQuantile is Φ⁻¹(p), the standard normal quantile.
func normalQuantile(p float64) float64 {
	return math.Sqrt2 * math.Erfinv(2*p-1)
}

// studentQuantile is Student's t quantile at p with df degrees of freedom,
// by the Cornish–Fisher expansion in the normal quantile (Abramowitz and
// Stegun 26.7.5): within 0.001 of the exact value for df ≥ 8 from the 95%
// quantile out to the 99.95% (5.041 at df = 8), which covers every
// interval Compare computes with enough samples for a verdict.
func studentQuantile(p, df float64) float64 {
	x := normalQuantile(p)
	x2 := x * x
	g1 := (x2 + 1) * x / 4
	g2 := ((5*x2+16)*x2 + 3) * x / 96
	g3 := (((3*x2+19)*x2+17)*x2 - 15) * x / 384
	g4 := ((((79*x2+776)*x2+1482)*x2-1920)*x2 - 945) * x / 92160
	return x + g1/df + g2/(df*df) + g3/(df*df*df) + g4/(df*df*df*df)
}
