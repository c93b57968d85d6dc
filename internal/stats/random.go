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
