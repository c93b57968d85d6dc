package stats

import "math"

// shareDelta fills d for proportions in closed form. A bootstrap of a share
// is degenerate exactly where it matters (0 failures in 200 resamples to 0
// failures every time), so intervals come from Wilson's score interval of
// each run, combined by the method of variance estimates recovery (MOVER):
// Newcombe's hybrid score interval for the difference (Newcombe 1998, method
// 10) and MOVER-R Wilson for the ratio (Donner and Zou 2012). Fagerland,
// Lydersen and Laake (2015) recommend both among closed-form intervals for
// their coverage close to nominal at small counts and at 0 or n successes.
func shareDelta(d *Delta, base, cur Sample) {
	z := normalQuantile(1 - (1-d.Confidence)/2)
	p2, p1 := float64(base.Hits)/float64(base.Trials), float64(cur.Hits)/float64(cur.Trials)
	l2, u2 := wilson(base.Hits, base.Trials, z)
	l1, u1 := wilson(cur.Hits, cur.Trials, z)
	d.Base, d.New, d.Abs = p2, p1, p1-p2
	d.AbsCI = Interval{
		Lo: d.Abs - math.Hypot(p1-l1, u2-p2),
		Hi: d.Abs + math.Hypot(u1-p1, p2-l2),
	}
	d.Rel, d.RelCI = math.NaN(), Interval{math.NaN(), math.NaN()}
	if p2 > 0 {
		d.Rel = p1/p2 - 1
		d.RelCI = Interval{
			Lo: moverRatioLimit(p1, p2, l1, u2, false) - 1,
			Hi: moverRatioLimit(p1, p2, u1, l2, true) - 1,
		}
	}
}

// wilson is Wilson's score interval for h successes in n trials at normal
// quantile z.
func wilson(h, n int, z float64) (lo, hi float64) {
	return wilsonZ(float64(h), float64(n), z)
}

// Wilson is Wilson's score interval at two-sided confidence conf for k
// successes in n trials (k may be fractional: a share of n): unlike the
// normal approximation it stays inside [0, 1] and is honest near the ends,
// where goodput thresholds (0.95, 0.99) sit. n ≤ 0 gives [0, 1].
func Wilson(k, n, conf float64) (lo, hi float64) {
	if n <= 0 {
		return 0, 1
	}
	return wilsonZ(k, n, normalQuantile(1-(1-conf)/2))
}

func wilsonZ(k, n, z float64) (lo, hi float64) {
	p := k / n
	z2 := z * z
	centre := (p + z2/(2*n)) / (1 + z2/n)
	half := z / (1 + z2/n) * math.Sqrt(p*(1-p)/n+z2/(4*n*n))
	lo, hi = max(0, centre-half), min(1, centre+half)
	if k == 0 {
		lo = 0 // exactly, not a rounding error's 1e-17
	}
	if k == n {
		hi = 1
	}
	return lo, hi
}

// moverRatioLimit is one MOVER-R limit of θ = p1/p2: the root of
// (p1 − θ·p2)² = (p1 − a)² + θ²(b − p2)² on the side given by the pair of
// Wilson limits (a, b): (l1, u2) for the lower limit, (u1, l2) for the upper.
// Written as a·θ² − 2·p1p2·θ + c = 0 with a = b(2p2 − b) and
// c = a₁(2p1 − a₁), the limit is (p1p2 ∓ √(p1²p2² − a·c))/a, the sign that
// keeps it on its side of p1/p2. a ≤ 0 happens for the lower limit when the
// base share is small (u2 ≥ 2p2): the same root, written without the
// cancellation as c/(p1p2 + √(p1²p2² − a·c)), stays finite and continuous.
// b = 0 (l2 = 0, no base successes) has no upper limit.
func moverRatioLimit(p1, p2, a1, b float64, upper bool) float64 {
	pp := p1 * p2
	a := b * (2*p2 - b)
	c := a1 * (2*p1 - a1)
	disc := math.Sqrt(max(0, pp*pp-a*c))
	if upper {
		if a <= 0 {
			return math.Inf(1)
		}
		return (pp + disc) / a
	}
	if pp+disc == 0 {
		return 0
	}
	return c / (pp + disc)
}
