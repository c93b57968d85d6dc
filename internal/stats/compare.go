package stats

import (
	"errors"
	"fmt"
	"math"
)

// Defaults of Options.
const (
	// DefaultConfidence is the two-sided confidence of intervals.
	DefaultConfidence = 0.95
	// DefaultResamples is the bootstrap's number of resamples: enough that
	// the 2.5% tails of a 95% interval rest on 50 replicates each.
	DefaultResamples = 2000
	// maxResamples bounds the automatic raise of resamples for very high
	// confidences (see resamples).
	maxResamples = 100_000
	// minTail is the fewest replicates an interval's tail may rest on.
	minTail = 10
)

// Options tune a comparison. The zero value means: 95% confidence, no
// practical threshold, 2000 resamples, seed 0.
type Options struct {
	// Confidence is the two-sided confidence of the intervals, in (0, 1);
	// 0 means DefaultConfidence. A "worse" verdict is a one-sided test at
	// (1 − Confidence)/2. For a gated family, pass FamilyConfidence.
	Confidence float64
	// Threshold is the practical threshold as a fraction (0.05 = 5%): a
	// change whose whole interval lies within ±Threshold is "same". For a
	// share whose base is 0 it is read in share units (0.05 = 5 points).
	Threshold float64
	// Resamples is the bootstrap's B; 0 means DefaultResamples. It is raised
	// so that each tail of the interval rests on at least 10 replicates
	// (B ≥ 20/(1 − Confidence)), up to 100,000.
	Resamples int
	// Seed starts the bootstrap's random stream.
	Seed uint64
}

// Verdict is the reading of a change against its interval.
type Verdict string

// Verdicts.
const (
	// Better: the interval lies wholly on the better side of no change,
	// not within ±Threshold, and the samples are enough.
	Better Verdict = "better"
	// Worse: the interval lies wholly on the worse side of no change, not
	// within ±Threshold, and the samples are enough.
	Worse Verdict = "worse"
	// Same: the whole interval lies within ±Threshold.
	Same Verdict = "same"
	// Inconclusive: none of the above; the data cannot tell.
	Inconclusive Verdict = "inconclusive"
)

// Interval is a confidence interval [Lo, Hi].
type Interval struct {
	Lo, Hi float64
}

// Delta is the comparison of one statistic between a base and a new run.
type Delta struct {
	Statistic Statistic
	Better    Direction
	// Confidence is the two-sided confidence of the intervals.
	Confidence float64
	// Resamples is the bootstrap's B (0 for shares, which are closed-form).
	Resamples int
	// Base and New are the statistic of each run (unrounded).
	Base, New float64
	// NBase and NNew are the samples behind them: requests, or trials.
	NBase, NNew int
	// Abs is New − Base, with its interval AbsCI.
	Abs   float64
	AbsCI Interval
	// Rel is (New − Base)/|Base|, with its interval RelCI; both NaN when
	// Base is 0.
	Rel   float64
	RelCI Interval
	// KBase and KNew are the replicates behind each run, 1 for a run
	// without. When both are 2 or more, AbsCI and RelCI are the union of
	// the request interval and the replicate interval; when only one is,
	// the request interval alone (the other run says nothing about the
	// noise of whole runs), which a caller should say.
	KBase, KNew int
	// ReplicateAbsCI and ReplicateRelCI are the replicate intervals alone
	// (NaN when not computed: a run without replicates, or RelCI when Base
	// is 0). A limit of AbsCI or RelCI equal to theirs was set by the
	// disagreement of whole runs; otherwise by the spread of requests.
	ReplicateAbsCI, ReplicateRelCI Interval
	// LowSamples is set when either run has fewer samples than MinSamples,
	// or, when both have replicates, either run's smallest replicate has:
	// the verdict is then never better or worse.
	LowSamples bool
	Verdict    Verdict
	// Reason says why the verdict is inconclusive ("" otherwise).
	Reason string
}

// WorseBy is the relative change toward the worse direction: positive when
// the metric got worse (+0.1 is 10% worse), negative when it got better.
// When Base is 0 any change is unbounded relative to it: ±Inf, or 0 when
// nothing moved; NaN when a run had no samples.
func (d Delta) WorseBy() float64 {
	if math.IsNaN(d.Abs) {
		return math.NaN()
	}
	w := d.Rel
	if math.IsNaN(w) {
		switch {
		case d.Abs == 0:
			return 0
		case d.Abs > 0:
			w = math.Inf(1)
		default:
			w = math.Inf(-1)
		}
	}
	if d.Better == HigherIsBetter {
		return -w
	}
	return w
}

// Fails is the gate's rule: the verdict is Worse (at the confidence the
// Delta was computed with, a family's one for gated metrics) and the point
// estimate of the change is worse by more than failAbove, a fraction
// (0.05 for --fail-above 5). The interval guards against noise, the
// threshold against changes too small to matter.
func (d Delta) Fails(failAbove float64) bool {
	return d.Verdict == Worse && d.WorseBy() > failAbove
}

// FamilyConfidence is the Bonferroni confidence for each of m comparisons
// such that, with probability at least conf, all m intervals cover together;
// so the chance that any of m unchanged metrics is called worse is at most
// (1 − conf)/2. m < 1 counts as 1.
func FamilyConfidence(conf float64, m int) float64 {
	if m <= 1 {
		return conf
	}
	return 1 - (1-conf)/float64(m)
}

// Compare compares one statistic between base and cur, the new run.
//
// The verdict, with [lo, hi] the interval of the relative change turned so
// that positive is worse and T the threshold, is the first that holds of:
//
//  1. same: −T ≤ lo and hi ≤ T;
//  2. inconclusive: a run has too few samples (EnoughSamples is false);
//  3. worse: lo > 0;
//  4. better: hi < 0;
//  5. inconclusive.
//
// "Worse" is thus a one-sided test at (1 − Confidence)/2 that the metric
// got worse at all; whether it got worse by enough to fail a gate is
// Fails. When Base is 0 there is no relative change and the rules read the
// absolute interval, with T in share units for a share and 0 otherwise.
// A run without samples gives NaN estimates and an inconclusive verdict.
// The error reports invalid options or samples, never the data's verdict.
func Compare(base, cur Sample, st Statistic, better Direction, opts Options) (Delta, error) {
	conf, err := check(base, cur, st, better, opts)
	if err != nil {
		return Delta{}, err
	}
	d := Delta{Statistic: st, Better: better, Confidence: conf, NBase: base.size(st.Kind), NNew: cur.size(st.Kind),
		KBase: replicateCount(base), KNew: replicateCount(cur)}
	if d.NBase == 0 || d.NNew == 0 {
		nan := math.NaN()
		d.Base, d.New, d.Abs, d.Rel = nan, nan, nan, nan
		d.AbsCI, d.RelCI = Interval{nan, nan}, Interval{nan, nan}
		d.ReplicateAbsCI, d.ReplicateRelCI = d.AbsCI, d.RelCI
		d.Verdict, d.Reason = Inconclusive, "no samples in new"
		if d.NBase == 0 {
			d.Reason = "no samples in base"
		}
		return d, nil
	}
	if st.Kind == KindShare {
		shareDelta(&d, base, cur)
	} else {
		d.Resamples = resamples(opts.Resamples, conf)
		bootstrapDelta(&d, base, cur, opts.Seed)
	}
	replicateDelta(&d, base, cur)
	d.LowSamples, d.Reason = lowSamples(base, cur, st)
	decide(&d, opts.Threshold)
	return d, nil
}

// resamples is B: the requested count (or the default), raised so that each
// tail of the interval holds minTail replicates, and capped.
func resamples(b int, conf float64) int {
	if b == 0 {
		b = DefaultResamples
	}
	need := int(math.Ceil(2*minTail/(1-conf))) - 1
	return min(max(b, need), maxResamples)
}

// EnoughSamples reports whether both runs have the samples the statistic
// needs for a better or worse verdict (MinSamples, and for a closed loop's
// rate three waves; when both runs have replicates, in every replicate as
// well). A gate's family counts only such comparisons: the
// others can never be worse, so they spend none of its error rate.
func EnoughSamples(base, cur Sample, st Statistic) bool {
	low, _ := lowSamples(base, cur, st)
	return !low
}

// lowSamples applies MinSamples, and for a rate whose wall moves with its
// requests, MinWaves, to the pooled samples and then to the replicates
// (lowReplicates): the reason is for Delta.Reason.
func lowSamples(base, cur Sample, st Statistic) (bool, string) {
	need := MinSamples(st)
	nb, nn := base.size(st.Kind), cur.size(st.Kind)
	if nb < need || nn < need {
		return true, fmt.Sprintf("too few samples: %s needs %d, base has %d, new %d", st, need, nb, nn)
	}
	if st.Kind == KindRate {
		for _, s := range []Sample{base, cur} {
			if s.Costs != nil && len(s.Values) < MinWaves*max(1, s.Workers) {
				return true, fmt.Sprintf("too few waves: a closed loop's rate needs %d waves, %d requests on %d workers", MinWaves, len(s.Values), s.Workers)
			}
		}
	}
	return lowReplicates(base, cur, st)
}

// MinWaves is the fewest waves (requests per worker) a closed loop's rate
// needs for a verdict. The wall of a single wave is its slowest request,
// and the bootstrap of a maximum is inconsistent (a resample holds the
// observed maximum 63% of the time), so its 95% interval covered 86% in the
// study; with two waves 93%, with three 94%, as a mean of 32 does.
const MinWaves = 3

// decide sets the verdict as Compare documents it.
func decide(d *Delta, threshold float64) {
	lo, hi, band := d.RelCI.Lo, d.RelCI.Hi, threshold
	if math.IsNaN(d.Rel) {
		lo, hi, band = d.AbsCI.Lo, d.AbsCI.Hi, 0
		if d.Statistic.Kind == KindShare {
			band = threshold
		}
	}
	if d.Better == HigherIsBetter {
		lo, hi = -hi, -lo
	}
	switch {
	case lo >= -band && hi <= band:
		d.Verdict, d.Reason = Same, ""
	case d.LowSamples:
		d.Verdict = Inconclusive // Reason says which rule
	case lo > 0:
		d.Verdict = Worse
	case hi < 0:
		d.Verdict = Better
	default:
		d.Verdict = Inconclusive
		d.Reason = "the interval includes no change"
		if band > 0 {
			d.Reason = fmt.Sprintf("the interval includes no change and reaches past ±%g%%", band*100)
		}
	}
}

// check validates the inputs and returns the confidence to use.
func check(base, cur Sample, st Statistic, better Direction, opts Options) (float64, error) {
	conf := opts.Confidence
	if conf == 0 {
		conf = DefaultConfidence
	}
	var errs []error
	if !(conf > 0 && conf < 1) {
		errs = append(errs, fmt.Errorf("confidence %v is not between 0 and 1", opts.Confidence))
	}
	if !(opts.Threshold >= 0) || math.IsInf(opts.Threshold, 0) {
		errs = append(errs, fmt.Errorf("threshold %v is not a non-negative fraction", opts.Threshold))
	}
	if opts.Resamples < 0 {
		errs = append(errs, fmt.Errorf("resamples %d is negative", opts.Resamples))
	}
	if better != LowerIsBetter && better != HigherIsBetter {
		errs = append(errs, fmt.Errorf("direction %v is not set", better))
	}
	switch st.Kind {
	case KindPercentile:
		if !(st.P > 0 && st.P <= 1) {
			errs = append(errs, fmt.Errorf("percentile %v is not in (0, 1]", st.P))
		}
	case KindMean, KindShare, KindRate, KindRatio:
	default:
		errs = append(errs, fmt.Errorf("unknown statistic %v", st))
	}
	if len(errs) == 0 {
		errs = append(errs, checkSample("base", base, st.Kind), checkSample("new", cur, st.Kind),
			checkReplicates("base", base, st.Kind), checkReplicates("new", cur, st.Kind))
	}
	return conf, errors.Join(errs...)
}

// checkSample validates one run's sample for the statistic's kind.
func checkSample(which string, s Sample, k Kind) error {
	if k == KindShare {
		if s.Trials < 0 || s.Hits < 0 || s.Hits > s.Trials {
			return fmt.Errorf("%s: %d hits in %d trials", which, s.Hits, s.Trials)
		}
		return nil
	}
	for i, v := range s.Values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%s: value %d is %v", which, i, v)
		}
	}
	if k == KindRatio && s.Costs == nil && len(s.Values) > 0 {
		return fmt.Errorf("%s: a ratio needs costs", which)
	}
	if s.Costs != nil {
		if len(s.Costs) != len(s.Values) {
			return fmt.Errorf("%s: %d costs for %d values", which, len(s.Costs), len(s.Values))
		}
		sum := 0.0
		for i, c := range s.Costs {
			if !(c >= 0) || math.IsInf(c, 0) {
				return fmt.Errorf("%s: cost %d is %v", which, i, c)
			}
			sum += c
		}
		if sum <= 0 && len(s.Costs) > 0 {
			return fmt.Errorf("%s: costs sum to 0", which)
		}
	}
	if k == KindRate && len(s.Values) > 0 && !(s.Wall > 0 && !math.IsInf(s.Wall, 0)) {
		return fmt.Errorf("%s: wall time %v is not positive", which, s.Wall)
	}
	if s.Workers < 0 {
		return fmt.Errorf("%s: %d workers", which, s.Workers)
	}
	if s.Workers > 0 && s.Costs == nil {
		return fmt.Errorf("%s: workers without costs", which)
	}
	return nil
}
