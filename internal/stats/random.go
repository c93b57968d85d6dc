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

// t975 holds Student's t 0.975 quantiles (the half-width factor of a 95%
// two-sided interval) for 1 to 30 degrees of freedom.
var t975 = [...]float64{
	12.706205, 4.302653, 3.182446, 2.776445, 2.570582, 2.446912, 2.364624, 2.306004, 2.262157, 2.228139,
	2.200985, 2.178813, 2.160369, 2.144787, 2.131450, 2.119905, 2.109816, 2.100922, 2.093024, 2.085963,
	2.079614, 2.073873, 2.068658, 2.063899, 2.059539, 2.055529, 2.051831, 2.048407, 2.045230, 2.042272,
}

// StudentQuantile is Student's t quantile at p with df degrees of freedom
// (see studentQuantile).
func StudentQuantile(p, df float64) float64 {
	if df < 1 {
		return math.Inf(1)
	}
	return studentQuantile(p, df)
}

// studentQuantile is Student's t quantile at p with df degrees of freedom,
// by the Cornish–Fisher expansion in the normal quantile (Abramowitz and
// Stegun 26.7.5): within 0.001 of the exact value for df ≥ 8 from the 95%
// quantile out to the 99.95% (5.041 at df = 8), which covers every
// interval Compare computes with enough samples for a verdict.
func studentQuantile(p, df float64) float64 {
	if i := int(df); p == 0.975 && float64(i) == df && i >= 1 && i <= len(t975) {
		return t975[i-1] // exact where the expansion is not (small df)
	}
	x := normalQuantile(p)
	x2 := x * x
	g1 := (x2 + 1) * x / 4
	g2 := ((5*x2+16)*x2 + 3) * x / 96
	g3 := (((3*x2+19)*x2+17)*x2 - 15) * x / 384
	g4 := ((((79*x2+776)*x2+1482)*x2-1920)*x2 - 945) * x / 92160
	return x + g1/df + g2/(df*df) + g3/(df*df*df) + g4/(df*df*df*df)
}
