package search

import "github.com/runnerbench/runner/internal/stats"

// The small statistics a search decides with, from the shared statistics
// package: the Wilson score interval of a proportion and Student's t quantile
// for 95% two-sided intervals.

// wilson is the 95% Wilson score interval of k successes in n trials.
func wilson(k, n float64) (lo, hi float64) { return stats.Wilson(k, n, 0.95) }

// tQuantile is Student's t 0.975 quantile for dof degrees of freedom (the
// half-width factor of a 95% interval).
func tQuantile(dof float64) float64 { return stats.StudentQuantile(0.975, dof) }
