package stats

import "math"

// StudentQuantile is Student's t quantile at p with df degrees of freedom
// (see studentQuantile); df below 1 gives +Inf.
func StudentQuantile(p, df float64) float64 {
	if df < 1 {
		return math.Inf(1)
	}
	return studentQuantile(p, df)
}

// cornishFisherDF is the df from which studentQuantile uses the
// Cornish–Fisher expansion: within 1e-9 of the exact quantile there out to
// p = 1 − 10⁻⁵. Below it the expansion is not good enough for the few
// degrees of freedom of a replicate interval: at df = 3 its 99.96% quantile
// (a family of 60 comparisons at 95%) is 13.28 against 13.94, an interval
// 5% too narrow.
const cornishFisherDF = 300

// studentQuantile is Student's t quantile at p with df ≥ 1 degrees of
// freedom, df not necessarily an integer (Welch–Satterthwaite's is not).
// From cornishFisherDF on it is the Cornish–Fisher expansion in the normal
// quantile (Abramowitz and Stegun 26.7.5); below, the root of
// P(T > t) = 1 − p found by bisection on the exact tail, to about 1e-12
// relative (a test checks the closed forms at df = 1 and 2).
func studentQuantile(p, df float64) float64 {
	switch {
	case p < 0.5:
		return -studentQuantile(1-p, df)
	case p == 0.5:
		return 0
	case p >= 1:
		return math.Inf(1)
	case df >= cornishFisherDF:
		x := normalQuantile(p)
		x2 := x * x
		g1 := (x2 + 1) * x / 4
		g2 := ((5*x2+16)*x2 + 3) * x / 96
		g3 := (((3*x2+19)*x2+17)*x2 - 15) * x / 384
		g4 := ((((79*x2+776)*x2+1482)*x2-1920)*x2 - 945) * x / 92160
		return x + g1/df + g2/(df*df) + g3/(df*df*df) + g4/(df*df*df*df)
	}
	q := 1 - p
	hi := 1.0
	for studentTail(hi, df) > q && !math.IsInf(hi, 1) {
		hi *= 2
	}
	lo := hi / 2
	if hi == 1 {
		lo = 0
	}
	for range 64 { // the bracket [hi/2, hi] halves to 2⁻⁶⁴ of hi
		mid := lo + (hi-lo)/2
		if studentTail(mid, df) > q {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo + (hi-lo)/2
}

// studentTail is P(T > t) for t ≥ 0 with df degrees of freedom:
// I_x(df/2, 1/2)/2 with x = df/(df + t²).
func studentTail(t, df float64) float64 {
	return regIncBeta(df/2, 0.5, df/(df+t*t)) / 2
}

// regIncBeta is the regularized incomplete beta function I_x(a, b), by its
// continued fraction (Numerical Recipes, 6.4), evaluated directly where it
// converges fast and through I_x(a, b) = 1 − I_{1−x}(b, a) elsewhere. For
// a t tail past t² = 3·df/(df+2) (tails below about 10%) it takes the
// direct branch, so small tails keep their relative precision.
func regIncBeta(a, b, x float64) float64 {
	if x <= 0 {
		return 0
	}
	if x >= 1 {
		return 1
	}
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	front := math.Exp(lab - la - lb + a*math.Log(x) + b*math.Log1p(-x))
	if x < (a+1)/(a+b+2) {
		return front * betaFraction(a, b, x) / a
	}
	return 1 - front*betaFraction(b, a, 1-x)/b
}

// betaFraction evaluates the continued fraction of I_x(a, b) by the
// modified Lentz method.
func betaFraction(a, b, x float64) float64 {
	const eps, tiny = 1e-15, 1e-300
	guard := func(v float64) float64 {
		if math.Abs(v) < tiny {
			return tiny
		}
		return v
	}
	c, d := 1.0, 1/guard(1-(a+b)*x/(a+1))
	h := d
	for m := 1.0; m <= 10_000; m++ {
		aa := m * (b - m) * x / ((a - 1 + 2*m) * (a + 2*m)) // even step
		d = 1 / guard(1+aa*d)
		c = guard(1 + aa/c)
		h *= d * c
		aa = -(a + m) * (a + b + m) * x / ((a + 2*m) * (a + 1 + 2*m)) // odd step
		d = 1 / guard(1+aa*d)
		c = guard(1 + aa/c)
		del := d * c
		h *= del
		if math.Abs(del-1) < eps {
			break
		}
	}
	return h
}
