package stats

import (
	"math"
	"testing"
)

// TestFitTrendKnown: the least-squares line and slope interval of a small
// textbook set, worked by hand. x = 1..5, y = 2 4 5 4 5: x̄ = 3, ȳ = 4,
// Sxx = 10, Sxy = 6, so b = 0.6 and a = 2.2; residuals −0.8 0.6 1 −0.6
// −0.2, SSE = 2.4, s² = 0.8, se(b) = √(0.8/10); t(0.975, 3) = 3.182446305.
func TestFitTrendKnown(t *testing.T) {
	tr, ok := FitTrend([]float64{1, 2, 3, 4, 5}, []float64{2, 4, 5, 4, 5}, 0.95)
	if !ok {
		t.Fatal("no fit")
	}
	h := 3.182446305284263 * math.Sqrt(0.08)
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %.12g, want %.12g", name, got, want)
		}
	}
	near("slope", tr.Slope, 0.6)
	near("intercept", tr.Intercept, 2.2)
	near("lo", tr.SlopeCI.Lo, 0.6-h)
	near("hi", tr.SlopeCI.Hi, 0.6+h)
	near("at(5)", tr.At(5), 5.2)
	if tr.N != 5 {
		t.Errorf("n = %d", tr.N)
	}
	// An exact line has a zero-width interval at its slope.
	tr, _ = FitTrend([]float64{0, 1, 2, 3}, []float64{7, 4, 1, -2}, 0.99)
	near("exact slope", tr.Slope, -3)
	near("exact lo", tr.SlopeCI.Lo, -3)
	near("exact hi", tr.SlopeCI.Hi, -3)
	// Too few points, or one x only, give no fit.
	if _, ok := FitTrend([]float64{1, 2}, []float64{1, 2}, 0.95); ok {
		t.Error("two points fitted")
	}
	if _, ok := FitTrend([]float64{1, 1, 1}, []float64{1, 2, 3}, 0.95); ok {
		t.Error("one x fitted")
	}
}

// TestPredictionIntervalKnown: ys = 10 12 14: mean 12, s = 2, t(0.975, 2) =
// 4.302652730, √(1 + 1/3).
func TestPredictionIntervalKnown(t *testing.T) {
	pi, ok := PredictionInterval([]float64{10, 12, 14}, 0.95)
	h := 4.302652729749464 * 2 * math.Sqrt(4.0/3)
	if !ok || math.Abs(pi.Lo-(12-h)) > 1e-9 || math.Abs(pi.Hi-(12+h)) > 1e-9 {
		t.Fatalf("interval %+v, want 12 ± %.9g", pi, h)
	}
	if _, ok := PredictionInterval([]float64{1}, 0.95); ok {
		t.Error("one value gave an interval")
	}
}

// TestFitTrendCoverage: on lines with independent normal noise, the 95%
// slope interval covers the true slope about 95% of the time (a
// statistical property: 2000 fits, the bound is 4 standard errors wide).
func TestFitTrendCoverage(t *testing.T) {
	r := newRand(11)
	const fits = 2000
	covered := 0
	x := []float64{0, 1, 2, 3, 4, 5, 6, 7}
	y := make([]float64, len(x))
	for range fits {
		for i := range x {
			y[i] = 3 - 0.5*x[i] + r.NormFloat64()
		}
		tr, _ := FitTrend(x, y, 0.95)
		if tr.SlopeCI.Lo <= -0.5 && -0.5 <= tr.SlopeCI.Hi {
			covered++
		}
	}
	se := math.Sqrt(0.95 * 0.05 / fits)
	if got := float64(covered) / fits; math.Abs(got-0.95) > 4*se {
		t.Fatalf("coverage %.3f, want 0.95 ± %.3f", got, 4*se)
	}
}
