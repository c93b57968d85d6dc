package dist

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestGammaMoments: the sample mean and variance of Gamma(k, 1) draws are
// k and k (within five standard errors), for shapes below and above 1.
func TestGammaMoments(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const n = 200_000
	for _, k := range []float64{0.25, 1, 4, 1000} {
		var sum, sq float64
		for range n {
			x := Gamma(r, k)
			sum += x
			sq += x * x
		}
		mean := sum / n
		variance := sq/n - mean*mean
		if se := math.Sqrt(k / n); math.Abs(mean-k) > 5*se {
			t.Errorf("k=%v: mean %v, want %v ± %v", k, mean, k, 5*se)
		}
		if math.Abs(variance-k)/k > 0.05 {
			t.Errorf("k=%v: variance %v, want %v", k, variance, k)
		}
	}
}
