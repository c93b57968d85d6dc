package stats

import (
	"math"
	"testing"
)

// TestRunsInterval: Student's two-sample interval with the pooled variance,
// against a computation by hand: base 1…5 and cur 3, 4, 5 have means 3 and
// 4, squares 10 and 2 about them, a pooled variance of 12/6 = 2, a standard
// error of √(2·(1/5 + 1/3)) and t(0.975, 6) = 2.446912.
func TestRunsInterval(t *testing.T) {
	base, cur := []float64{1, 2, 3, 4, 5}, []float64{3, 4, 5}
	abs, rel, ok := RunsInterval(base, cur, 0.95)
	if !ok {
		t.Fatal("no interval")
	}
	half := 2.446912 * math.Sqrt(2*(1.0/5+1.0/3))
	if math.Abs(abs.Lo-(1-half)) > 1e-5 || math.Abs(abs.Hi-(1+half)) > 1e-5 {
		t.Errorf("abs %v, want 1 ± %.6f", abs, half)
	}
	// On the log scale: the same with ln of each value.
	lb, lc := logs(base), logs(cur)
	l := mean(lc) - mean(lb)
	lh := 2.446912 * math.Sqrt(pooledVariance(lb, lc)*(1.0/5+1.0/3))
	if math.Abs(rel.Lo-math.Expm1(l-lh)) > 1e-5 || math.Abs(rel.Hi-math.Expm1(l+lh)) > 1e-5 || !(rel.Lo < 0 && rel.Hi > 0) {
		t.Errorf("rel %v, want exp(%.4f ± %.4f) − 1 around 0", rel, l, lh)
	}
	// A 12% slower window of steady runs is worse; a confidence near 1
	// widens the interval past it.
	steady := []float64{100, 101, 99, 100.5, 99.5, 100, 100.2, 99.8, 100.1, 99.9}
	win := []float64{112, 111.5, 112.4}
	if _, rel, _ := RunsInterval(steady, win, 0.95); !(rel.Lo > 0.1 && rel.Hi < 0.14) {
		t.Errorf("a 12%% step: rel %v, want within (10%%, 14%%)", rel)
	}
	if _, wide, _ := RunsInterval(steady, win, 1-1e-12); !(wide.Lo < 0.1) {
		t.Errorf("at 1 − 10⁻¹² the interval %v did not widen", wide)
	}
	// Zero base mean: no relative interval.
	if _, rel, ok := RunsInterval([]float64{-1, 1}, []float64{2, 3}, 0.95); !ok || !math.IsNaN(rel.Lo) {
		t.Errorf("zero base mean: rel %v, ok %v; want NaN", rel, ok)
	}
	if _, _, ok := RunsInterval(base[:1], cur, 0.95); ok {
		t.Error("one base run gave an interval")
	}
}
