package search

import "math"

// The small statistics a search decides with: the Wilson score interval of a
// proportion and Student's t quantile for 95% two-sided intervals. (A shared
// statistics package may take these over; they are kept here so the search
// depends on nothing else.)

// z95 is the standard normal quantile of a 95% two-sided interval.
const z95 = 1.959963984540054

// wilson is the 95% Wilson score interval of k successes in n trials: unlike
// the normal approximation it stays inside [0, 1] and is honest near the
// ends, where goodput thresholds (0.95, 0.99) sit.
func wilson(k, n float64) (lo, hi float64) {
	if n <= 0 {
		return 0, 1
	}
	p := k / n
	z2 := z95 * z95
	den := 1 + z2/n
	mid := (p + z2/(2*n)) / den
	half := z95 * math.Sqrt(p*(1-p)/n+z2/(4*n*n)) / den
	return max(0, mid-half), min(1, mid+half)
}

// t975 holds Student's t 0.975 quantiles for 1 to 30 degrees of freedom.
var t975 = [...]float64{
	12.706205, 4.302653, 3.182446, 2.776445, 2.570582, 2.446912, 2.364624, 2.306004, 2.262157, 2.228139,
	2.200985, 2.178813, 2.160369, 2.144787, 2.131450, 2.119905, 2.109816, 2.100922, 2.093024, 2.085963,
	2.079614, 2.073873, 2.068658, 2.063899, 2.059539, 2.055529, 2.051831, 2.048407, 2.045230, 2.042272,
}

// tQuantile is Student's t 0.975 quantile for dof degrees of freedom (the
// half-width factor of a 95% interval); past the table, the Cornish–Fisher
// expansion, within 1e-4 of the exact value there.
func tQuantile(dof float64) float64 {
	if dof < 1 {
		return math.Inf(1)
	}
	if i := int(dof); float64(i) == dof && i <= len(t975) {
		return t975[i-1]
	}
	z := z95
	g1 := (z*z*z + z) / 4
	g2 := (5*math.Pow(z, 5) + 16*z*z*z + 3*z) / 96
	return z + g1/dof + g2/(dof*dof)
}
