package stats

import "math"

// Trend is the least-squares line through (x, y) points: the slope, its
// two-sided interval at the confidence asked, and the fitted value at the
// mean of x.
type Trend struct {
	Slope   float64
	SlopeCI Interval
	// Intercept is the fitted value at x = 0; the line is Intercept + Slope·x.
	Intercept float64
	// N is the points fitted; the interval has N − 2 degrees of freedom.
	N int
}

// At is the fitted value at x.
func (t Trend) At(x float64) float64 { return t.Intercept + t.Slope*x }

// FitTrend fits y = a + b·x by ordinary least squares and gives b's
// Student-t interval at two-sided confidence conf: b ± t(1−(1−conf)/2, n−2)
// · s/√Σ(x−x̄)², s² the residuals' Σ/(n−2). It needs 3 points and two
// distinct x (ok is false otherwise). The interval assumes independent
// residuals of equal spread; a series whose neighbours move together (time
// slices a request spans) has a narrower interval than it should, which is
// why the steadiness judgement also asks for a practical threshold.
func FitTrend(x, y []float64, conf float64) (Trend, bool) {
	n := len(x)
	if n != len(y) || n < 3 || !(conf > 0 && conf < 1) {
		return Trend{}, false
	}
	mx, my := mean(x), mean(y)
	var sxx, sxy float64
	for i := range x {
		dx := x[i] - mx
		sxx += dx * dx
		sxy += dx * (y[i] - my)
	}
	if sxx == 0 {
		return Trend{}, false
	}
	b := sxy / sxx
	a := my - b*mx
	var sse float64
	for i := range x {
		r := y[i] - (a + b*x[i])
		sse += r * r
	}
	df := float64(n - 2)
	se := math.Sqrt(sse / df / sxx)
	h := StudentQuantile(1-(1-conf)/2, df) * se
	return Trend{Slope: b, SlopeCI: Interval{b - h, b + h}, Intercept: a, N: n}, true
}

// PredictionInterval is the two-sided interval at confidence conf in which
// one more draw from the population of ys is expected (ys's mean ± t(n−1)
// · s·√(1 + 1/n)): how far a single value may lie from the rest by chance.
// It needs 2 values (ok is false otherwise).
func PredictionInterval(ys []float64, conf float64) (Interval, bool) {
	n := len(ys)
	if n < 2 || !(conf > 0 && conf < 1) {
		return Interval{}, false
	}
	m := mean(ys)
	s := math.Sqrt(meanVariance(ys) * float64(n))
	h := StudentQuantile(1-(1-conf)/2, float64(n-1)) * s * math.Sqrt(1+1/float64(n))
	return Interval{m - h, m + h}, true
}
