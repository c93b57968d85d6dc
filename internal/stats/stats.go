// Package stats decides whether a metric of one load level changed between
// two runs, from the two runs' request-level samples: the change, its
// confidence interval, and a verdict (better, worse, same, inconclusive)
// that a regression gate can act on without crying wolf.
//
// It is pure: samples in, a Delta out; no I/O, no clock, no global state.
// Every interval is reproducible: the bootstrap draws from a PCG stream
// seeded by Options.Seed, started afresh in each call.
//
// Methods (docs/statistics.md has the reasoning and the measured false-alarm,
// detection and coverage rates):
//
//   - Percentiles: percentile bootstrap over requests. A resample's k-th
//     order statistic is drawn exactly in O(1) as the sorted sample's element
//     at floor(n·U), U ~ Beta(k+1, n−k), so the cost does not grow with n.
//   - Means, ratios of sums and rates: bootstrap over requests, widened to
//     Student's tails for small samples (Hesterberg's expanded percentile
//     interval); past MaxResampleSize requests, resamples of that size whose
//     deviations are shrunk by √(m/n) (the m-out-of-n bootstrap of a smooth
//     statistic). A closed loop's rate moves its wall with its requests:
//     the wall of a resample scales with its makespan on the loop's workers.
//   - Shares (proportions): Wilson intervals per run, Newcombe's hybrid score
//     interval for the difference and MOVER-R Wilson for the ratio.
//   - Noise of whole runs: when both runs ran as replicates, a Welch
//     t interval from the replicates' disagreement (the method of
//     independent replications), on the log scale for a relative change;
//     the Delta's intervals are its union with the request interval.
//
// The relative change is New/Base − 1 with its equal-tailed interval at
// Options.Confidence; the verdict reads that interval against the metric's
// better direction and the practical threshold (see Compare). For a family
// of gated comparisons, FamilyConfidence gives the Bonferroni confidence that
// keeps the chance of any false "worse" at (1 − confidence)/2.
package stats

import (
	"fmt"
	"math"

	"github.com/runnerbench/runner/internal/hist"
)

// Direction says which way a metric improves.
type Direction int

// Directions. The zero value is invalid, so a forgotten direction is an
// error rather than a silent guess.
const (
	LowerIsBetter Direction = iota + 1
	HigherIsBetter
)

// String names the direction.
func (d Direction) String() string {
	switch d {
	case LowerIsBetter:
		return "lower is better"
	case HigherIsBetter:
		return "higher is better"
	}
	return fmt.Sprintf("Direction(%d)", int(d))
}

// Kind is the form of a statistic.
type Kind int

// Kinds of statistic.
const (
	// KindPercentile is the project's percentile of per-request values: sort,
	// take index PercentileIndex(P, n).
	KindPercentile Kind = iota + 1
	// KindMean is the mean of per-request values.
	KindMean
	// KindShare is the proportion Hits/Trials (goodput, the failed share).
	KindShare
	// KindRate is Σ Values / Wall (output_tps_total, request_tps).
	KindRate
	// KindRatio is Σ Values / Σ Costs (prefill_tps: input tokens over TTFT).
	KindRatio
)

// Statistic is what is compared: a kind and, for a percentile, its fraction.
type Statistic struct {
	Kind Kind
	// P is the percentile as a fraction in (0, 1] (0.95 for p95); only for
	// KindPercentile.
	P float64
}

// Percentile is the p-th quantile by the project's rule (p = 0.95 for p95).
func Percentile(p float64) Statistic { return Statistic{Kind: KindPercentile, P: p} }

// Mean is the mean of per-request values.
func Mean() Statistic { return Statistic{Kind: KindMean} }

// Share is a proportion of successes in trials.
func Share() Statistic { return Statistic{Kind: KindShare} }

// Rate is a sum of per-request values over the run's wall time.
func Rate() Statistic { return Statistic{Kind: KindRate} }

// Ratio is a sum of per-request values over a sum of per-request costs.
func Ratio() Statistic { return Statistic{Kind: KindRatio} }

// String is a short label: p95, p99.9, mean, share, rate, ratio.
func (s Statistic) String() string {
	switch s.Kind {
	case KindPercentile:
		return "p" + fmt.Sprint(math.Round(s.P*1e6)/1e4)
	case KindMean:
		return "mean"
	case KindShare:
		return "share"
	case KindRate:
		return "rate"
	case KindRatio:
		return "ratio"
	}
	return fmt.Sprintf("Kind(%d)", int(s.Kind))
}

// Sample is one run's data behind one metric of one level. Which fields are
// read depends on the statistic:
//
//   - KindPercentile, KindMean: Values, one per request (e.g. TTFT in ms of
//     each successful request).
//   - KindShare: Hits and Trials (e.g. requests within the SLO, and all
//     measured requests).
//   - KindRatio: Values and Costs, paired by index (input tokens and TTFT in
//     seconds for prefill_tps); Σ Costs must be positive.
//   - KindRate: Values (e.g. output tokens per request, 0 for a failure) and
//     Wall, the run's measured wall time in the unit the rate wants. Without
//     Costs the wall is held fixed and only Σ Values varies: right when the
//     schedule, not the server, set the wall (an open loop below
//     saturation). With Costs (the time each request held its worker: its
//     E2E, failures included) and Workers (the closed loop's concurrency),
//     a resample's wall moves with its requests: they are dealt to Workers
//     workers in turn and the wall scales with the makespan. In pinned mode
//     every success has the same token count, so the wall is the whole
//     uncertainty of a closed loop's throughput; holding it fixed would make
//     the interval a point.
//
// Values and Costs must be finite, Costs non-negative; Compare neither
// keeps nor modifies them. Sorted Values save a percentile its sort.
//
// Replicates is the same sample split by replicate, when the level ran as
// k replicates back to back (each restarting the load): each a Sample of
// the same kind for its own window (its requests' Values and Costs, its
// own Wall and Workers; or its Hits and Trials), their union the pooled
// sample, so their sizes add up to its size (and their hits to its hits).
// Nil, or fewer than 2, means the run had no replicates. When both runs
// have them, Compare adds the replicates' interval, which holds the noise
// of whole runs (see replicateDelta); Values sorted within each replicate
// save a percentile its selection.
type Sample struct {
	Values     []float64
	Costs      []float64
	Wall       float64
	Workers    int
	Hits       int
	Trials     int
	Replicates []Sample
}

// size is the number of samples behind the statistic.
func (s Sample) size(k Kind) int {
	if k == KindShare {
		return s.Trials
	}
	return len(s.Values)
}

// MinSamples is the project's low-confidence rule: a p50 needs 5 samples, a
// p90 10, a p95 20 and anything further in the tail 100, because below these
// counts the chosen sample is one of the few largest and says little about
// the tail it names. Means, shares, rates and ratios need 5, the p50's
// count: below that one request moves the statistic too far for a
// resampling interval to mean much.
func MinSamples(s Statistic) int {
	if s.Kind != KindPercentile {
		return hist.MinSamples(0.5)
	}
	return hist.MinSamples(s.P)
}

// PercentileIndex is the project's percentile index into n sorted samples:
// round_half_even(p·(n−1)), clamped to [0, n−1]. The product is the same
// IEEE multiplication Python does, so a product that lands on .5 exactly
// goes to the even neighbour (it is hist.Index, the rule aggregate applies).
func PercentileIndex(p float64, n int) int { return hist.Index(p, n) }
