package stats

import (
	"math"
	"sort"
)

// Anytime-valid confidence sequences: intervals that may be looked at after
// every request of a level, as often as wanted, and still cover the true
// value at every look together with probability at least the confidence
// (Ville's inequality on a nonnegative supermartingale). A level that runs
// "until its checks are decided" looks after each batch of requests and
// stops at the first look where an interval lies wholly on one side of a
// threshold; with fixed-sample intervals those repeated looks would inflate
// the rate of wrong decisions without bound (docs/statistics.md, "Stopping
// when the answer is known", has the methods, the reasons and the study).
//
//   - Percentiles: the beta-binomial mixture confidence sequence for a
//     quantile (Howard and Ramdas, "Sequential estimation of quantiles with
//     applications to A/B-testing and best-arm identification", Bernoulli
//     28(3), 2022). Distribution-free: exact for any continuous
//     distribution, whatever its shape or tail.
//   - Shares (goodput, the failed share): the beta-binomial mixture for a
//     Bernoulli mean, exact at every n.
//   - Means: the asymptotic confidence sequence of Waudby-Smith, Arnold, Wu,
//     Howard and Ramdas ("Time-uniform central limit theory and asymptotic
//     confidence sequences", Annals of Statistics 52(6), 2024): Robbins'
//     normal mixture with the running standard deviation. Valid as n grows
//     (no finite-sample guarantee exists for a mean of unbounded latencies);
//     it needs MinAnytimeMeanSamples requests. until: does not decide by it
//     (result.Metric.UntilSpec): on latencies measured on a busy machine,
//     whose tail a stalled request stretches, it decided wrongly far more
//     often than it promised (bench/cmd/untilstudy, docs/statistics.md).
//
// Rates and ratios (throughput over a wall, prefill tokens over TTFT) have
// none here: their wall is not a sum of independent per-request parts.

// MinAnytimeMeanSamples is the fewest values a mean's confidence sequence
// is given for: below it the running standard deviation, which the
// sequence trusts as if known, is itself too uncertain.
const MinAnytimeMeanSamples = 30

// The mixtures' tuning, fixed in advance (choosing it from the data would
// void the guarantee); every sequence is valid at every n whatever the
// tuning, which only moves where it is tightest. docs/statistics.md has
// the widths and the first decidable counts these give.
const (
	// quantilePrior is the weight, in requests, of the Beta(r·p, r·(1−p))
	// mixing a quantile's alternatives. A light prior (10) lets a p95 be
	// decided from 81 requests (a fixed-size interval needs 59) and a p99
	// from 334 (299), and costs under 1% of width at 1,000 requests
	// against a prior of 250, tuned for large samples (measured).
	quantilePrior = 10
	// shareA, shareB: Jeffreys' Beta(1/2, 1/2) mixing a share's
	// alternatives, which favours none.
	shareA = 0.5
	shareB = 0.5
	// meanTuneN is where a mean's sequence is tightest.
	meanTuneN = 100
)

// AnytimeInterval is the anytime-valid interval of statistic st over
// sample s at two-sided confidence conf (a percentile needs sorted Values),
// and false when st has no confidence sequence (a rate, a ratio) or s is too
// small for one (no values; a mean of fewer than MinAnytimeMeanSamples). A
// limit the data cannot bound is infinite (a p99's upper limit from 50
// requests).
func AnytimeInterval(st Statistic, s Sample, conf float64) (Interval, bool) {
	if !(conf > 0 && conf < 1) {
		return Interval{}, false
	}
	switch st.Kind {
	case KindPercentile:
		if len(s.Values) == 0 || !(st.P > 0 && st.P < 1) {
			return Interval{}, false
		}
		return QuantileSequence(s.Values, st.P, conf), true
	case KindShare:
		if s.Trials <= 0 {
			return Interval{}, false
		}
		lo, hi := ShareSequence(s.Hits, s.Trials, conf)
		return Interval{lo, hi}, true
	case KindMean:
		if len(s.Values) < MinAnytimeMeanSamples {
			return Interval{}, false
		}
		return MeanSequence(s.Values, conf), true
	}
	return Interval{}, false
}

// QuantileSequence is the anytime-valid interval of the p-quantile of a
// continuous distribution from the sorted sample x, at confidence conf.
//
// For the true quantile q, the count of values ≤ q after n draws is
// Binomial(n, p); the mixture over θ ~ Beta(r·p, r·(1−p)) (r =
// quantilePrior) of the likelihood
// ratios of Binomial(n, θ) against Binomial(n, p) is a martingale with mean
// 1, which reaches 1/α at some n with probability at most α. The counts k
// that keep it below 1/α form an interval [kLo, kHi] (its logarithm is
// convex in k); the quantile lies in [x(kLo), x(kHi+1)], order statistics
// counted from 1, −∞ and +∞ past the ends.
func QuantileSequence(x []float64, p, conf float64) Interval {
	n := len(x)
	a, b := quantilePrior*p, quantilePrior*(1-p)
	bound := math.Log(1 / (1 - conf))
	logM := func(k int) float64 { return betaBinomialLogRatio(k, n, p, a, b) }
	// The martingale's minimum over k is near n·p; the accepted counts
	// reach out from it on both sides.
	mode := min(n, max(0, int(math.Round(float64(n)*p))))
	for mode > 0 && logM(mode-1) < logM(mode) {
		mode--
	}
	for mode < n && logM(mode+1) < logM(mode) {
		mode++
	}
	if logM(mode) >= bound {
		return Interval{math.Inf(-1), math.Inf(1)} // cannot happen: the mixture at its minimum is ≤ 1
	}
	// The accepted counts: logM falls to its minimum at mode and rises
	// after it, so each end is a bisection (sort.Search) on its side.
	kLo := sort.Search(mode, func(k int) bool { return logM(k) < bound })
	kHi := mode + sort.Search(n-mode, func(j int) bool { return logM(mode+j+1) >= bound })
	out := Interval{math.Inf(-1), math.Inf(1)}
	if kLo >= 1 {
		out.Lo = x[kLo-1]
	}
	if kHi < n {
		out.Hi = x[kHi]
	}
	return out
}

// ShareSequence is the anytime-valid interval of a success probability
// from k successes in n trials, at confidence conf: the θ at which the
// mixture over Jeffreys' prior of the likelihood ratios against θ stays
// below 1/α (its logarithm is convex in θ, lowest at k/n).
func ShareSequence(k, n int, conf float64) (lo, hi float64) {
	bound := math.Log(1 / (1 - conf))
	// The mixture's part does not depend on θ: computed once.
	kf, mf := float64(k), float64(n-k)
	mix := logBeta(shareA+kf, shareB+mf) - logBeta(shareA, shareB)
	logM := func(theta float64) float64 { return mix - xlogy(kf, theta) - xlogy(mf, 1-theta) }
	centre := kf / float64(n)
	// One side at a time: the crossing between the centre and the edge.
	cross := func(edge float64) float64 {
		if logM(edge) < bound {
			return edge
		}
		in, out := centre, edge
		for range 60 {
			mid := (in + out) / 2
			if logM(mid) < bound {
				in = mid
			} else {
				out = mid
			}
		}
		return in
	}
	return cross(0), cross(1)
}

// betaBinomialLogRatio is the logarithm of the Beta(a, b) mixture of the
// likelihood ratios of Binomial(n, θ′) against Binomial(n, theta) at k
// successes: ln B(a+k, b+n−k) − ln B(a, b) − k ln θ − (n−k) ln(1−θ). At
// theta 0 or 1 a count it forbids gives +Inf. (1−θ is exact enough here:
// θ is never within 1e-16 of 1 but at 1 itself.)
func betaBinomialLogRatio(k, n int, theta, a, b float64) float64 {
	kf, mf := float64(k), float64(n-k)
	return logBeta(a+kf, b+mf) - logBeta(a, b) - xlogy(kf, theta) - xlogy(mf, 1-theta)
}

// xlogy is x·ln y, 0 when x is 0 (whatever y), −Inf for a positive x at
// y ≤ 0.
func xlogy(x, y float64) float64 {
	switch {
	case x == 0:
		return 0
	case y <= 0:
		return math.Inf(-1)
	}
	return x * math.Log(y)
}

func logBeta(a, b float64) float64 {
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	return la + lb - lab
}

// MeanSequence is the asymptotic anytime-valid interval of the mean of x at
// confidence conf: mean ± s·√(2(nρ²+1)/(n²ρ²) · ln(√(nρ²+1)/α)), s the
// sample standard deviation, ρ² chosen so the width is least at
// meanTuneN values (Waudby-Smith et al. 2024, Theorem 2.2 with their
// choice of ρ).
func MeanSequence(x []float64, conf float64) Interval {
	n := float64(len(x))
	mean, ss := 0.0, 0.0
	for i, v := range x { // Welford: one pass, no cancellation
		d := v - mean
		mean += d / float64(i+1)
		ss += d * (v - mean)
	}
	sd := 0.0
	if n > 1 {
		sd = math.Sqrt(ss / (n - 1))
	}
	half := sd * meanSequenceRadius(n, 1-conf)
	return Interval{mean - half, mean + half}
}

// meanSequenceRadius is the mean's half-width per unit of standard
// deviation after n values at error alpha.
func meanSequenceRadius(n, alpha float64) float64 {
	l := -2 * math.Log(alpha)
	rho2 := (l + math.Log(l+1)) / meanTuneN
	v := n*rho2 + 1
	return math.Sqrt(2 * v / (n * n * rho2) * math.Log(math.Sqrt(v)/alpha))
}

// StoppedGrowing reports whether d, the change of a throughput from one
// load to a higher one (Compare with HigherIsBetter), shows that it no
// longer grows: on enough samples, the upper limit of its relative change's
// interval is below growth (0.10: less than 10% more). A throughput whose
// interval is too wide to tell is not called stopped: the sweep that asks
// goes on. This is the one definition of "throughput stopped growing
// within its interval" (package stopping's saturation stop).
func StoppedGrowing(d Delta, growth float64) bool {
	return !d.LowSamples && !math.IsNaN(d.RelCI.Hi) && d.RelCI.Hi < growth
}
