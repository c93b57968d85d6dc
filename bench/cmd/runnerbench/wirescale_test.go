package main

import (
	"math"
	"testing"
)

// The median's interval is the order statistics the binomial distribution
// names, with their exact confidence.
func TestMedianInterval(t *testing.T) {
	x := []float64{15, 3, 9, 1, 12, 7, 5, 14, 2, 11, 8, 4, 13, 10, 6} // 1..15
	lo, hi, conf := medianInterval(x)
	// n = 15: P(B <= 3) = 576/32768 <= 0.025 < P(B <= 4): the 4th smallest
	// and the 4th largest.
	if lo != 4 || hi != 12 || math.Abs(conf-(1-2*576.0/32768)) > 1e-12 {
		t.Errorf("n=15: got %v–%v at %v, want 4–12 at %v", lo, hi, conf, 1-2*576.0/32768)
	}
	// n = 6: only the whole range reaches 95% (1 - 2/64).
	lo, hi, conf = medianInterval([]float64{6, 1, 5, 2, 4, 3})
	if lo != 1 || hi != 6 || math.Abs(conf-(1-2.0/64)) > 1e-12 {
		t.Errorf("n=6: got %v–%v at %v, want 1–6 at %v", lo, hi, conf, 1-2.0/64)
	}
	// n = 5: not even the whole range does; it is given with its confidence.
	if _, _, conf = medianInterval([]float64{1, 2, 3, 4, 5}); conf >= medianConf {
		t.Errorf("n=5: confidence %v, want below %v", conf, medianConf)
	}
}
