package stats

import (
	"fmt"
	"math"
	"slices"
)

// Replicates: the method of independent replications (Law and Kelton,
// Simulation Modeling and Analysis, "independent replications"). A level
// run as k replicates back to back, each restarting the load, gives k
// independent draws of whatever settles for a whole run (a closed loop's
// batching rhythm, a neighbour on the machine), which no resampling of
// requests can see. The replicates' disagreement estimates that run-level
// variance: θ_j, the statistic on replicate j alone, has a sample variance
// s² whose s²/k is the variance of the run's estimate, request noise and
// run noise together, with k − 1 degrees of freedom. Compare's replicate
// interval is the Welch interval of the change built on it, centred on the
// pooled estimates (the report's numbers).
//
// Not a cluster bootstrap (resampling whole replicates): with k = 4–8
// clusters its variance is low by (k−1)/k and its distribution has at most
// a few dozen distinct values, so its tails cannot hold a family's 99.9%;
// Student's t with the replicates' degrees of freedom accounts for how
// little k replicates say about a variance.

// replicated reports whether a run had replicates: two or more.
func replicated(s Sample) bool { return len(s.Replicates) >= 2 }

// replicateCount is Delta's KBase or KNew: the run's replicates, 1 without.
func replicateCount(s Sample) int {
	if replicated(s) {
		return len(s.Replicates)
	}
	return 1
}

// replicateStat is the statistic on one replicate alone, computed as the
// pooled one is (the point of its bootstrap replicator: a percentile by
// PercentileIndex, a mean, Σv/Σc, Σv/Wall of the replicate's own window; a
// share's Hits/Trials); ok is false for a replicate without samples.
func replicateStat(s Sample, st Statistic) (theta float64, ok bool) {
	if s.size(st.Kind) == 0 {
		return 0, false
	}
	if st.Kind == KindShare {
		return float64(s.Hits) / float64(s.Trials), true
	}
	return newReplicator(s, st).point, true
}

// replicateStats is θ_j of every replicate that has samples.
func replicateStats(s Sample, st Statistic) []float64 {
	thetas := make([]float64, 0, len(s.Replicates))
	for _, r := range s.Replicates {
		if theta, ok := replicateStat(r, st); ok {
			thetas = append(thetas, theta)
		}
	}
	return thetas
}

// replicateDelta fills d's replicate intervals when both runs have two or
// more replicates with samples, and widens AbsCI and RelCI to their union
// with them. The union is right under either assumption: the request
// interval under "no run-level effect" (the replicates then add only noise
// to the variance estimate, which the union does not let narrow the
// interval), the replicate interval under "replicates are independent
// draws of a run, the statistic near normal across them" (the request
// interval is then too narrow, and the union takes the replicates' width).
// A worse verdict needs both to exclude no change, so its rate under no
// change is at most the smaller of the two; and where every replicate
// agrees by chance (every replicate had 0 failures, or landed in the same
// rhythm) the request interval keeps the floor that the replicates' zero
// variance would remove.
func replicateDelta(d *Delta, base, cur Sample) {
	nan := Interval{math.NaN(), math.NaN()}
	d.ReplicateAbsCI, d.ReplicateRelCI = nan, nan
	if !replicated(base) || !replicated(cur) {
		return
	}
	tb, tn := replicateStats(base, d.Statistic), replicateStats(cur, d.Statistic)
	if len(tb) < 2 || len(tn) < 2 {
		return
	}
	p := 1 - (1-d.Confidence)/2
	mb, mn := mean(tb), mean(tn)
	vb, vn := meanVariance(tb), meanVariance(tn)
	half := welchT(p, vn, len(tn), vb, len(tb)) * math.Sqrt(vn+vb)
	d.ReplicateAbsCI = Interval{mn - mb - half, mn - mb + half}
	switch {
	case math.IsNaN(d.Rel) || mb == 0:
	case allPositive(tb) && allPositive(tn):
		d.ReplicateRelCI = logRelInterval(tb, tn, p)
	default:
		// The delta method on the linear scale: R = (N − B)/|B| has
		// ∂R/∂N = 1/|B| and |∂R/∂B| = |N|/B².
		an, ab := vn/(mb*mb), vb*mn*mn/(mb*mb*mb*mb)
		half := welchT(p, an, len(tn), ab, len(tb)) * math.Sqrt(an+ab)
		r := (mn - mb) / math.Abs(mb)
		d.ReplicateRelCI = Interval{r - half, r + half}
	}
	d.AbsCI = union(d.AbsCI, d.ReplicateAbsCI)
	if !math.IsNaN(d.Rel) && !math.IsNaN(d.ReplicateRelCI.Lo) {
		d.RelCI = union(d.RelCI, d.ReplicateRelCI)
	}
}

// logRelInterval is the replicate interval of the relative change on the
// log scale, where a ratio of latencies or rates is near symmetric:
// exp(L ± t·SE) − 1 with L the difference of the runs' mean ln θ_j and SE²
// the sum over the runs of var(ln θ_j)/k.
func logRelInterval(tb, tn []float64, p float64) Interval {
	lb, ln := make([]float64, len(tb)), make([]float64, len(tn))
	for i, v := range tb {
		lb[i] = math.Log(v)
	}
	for i, v := range tn {
		ln[i] = math.Log(v)
	}
	vb, vn := meanVariance(lb), meanVariance(ln)
	half := welchT(p, vn, len(tn), vb, len(tb)) * math.Sqrt(vn+vb)
	l := mean(ln) - mean(lb)
	return Interval{math.Expm1(l - half), math.Expm1(l + half)}
}

func mean(x []float64) float64 { return sum(x) / float64(len(x)) }

// meanVariance is s²/k, the variance of the mean of k values estimated from
// their sample variance (divisor k − 1), in two passes for precision.
func meanVariance(x []float64) float64 {
	k, m := float64(len(x)), mean(x)
	ss := 0.0
	for _, v := range x {
		ss += (v - m) * (v - m)
	}
	return ss / (k - 1) / k
}

// welchT is Student's quantile at p with the Welch–Satterthwaite degrees of
// freedom of a sum of two variance estimates a (from ka values) and b (from
// kb): (a + b)²/(a²/(ka−1) + b²/(kb−1)), between min(ka, kb) − 1 and
// ka + kb − 2. Both zero make any factor right; it returns 0.
func welchT(p, a float64, ka int, b float64, kb int) float64 {
	if a+b == 0 {
		return 0
	}
	df := (a + b) * (a + b) / (a*a/float64(ka-1) + b*b/float64(kb-1))
	return StudentQuantile(p, df)
}

func allPositive(x []float64) bool {
	return !slices.ContainsFunc(x, func(v float64) bool { return !(v > 0) })
}

// union is the smallest interval holding both.
func union(a, b Interval) Interval {
	return Interval{min(a.Lo, b.Lo), max(a.Hi, b.Hi)}
}

// checkReplicates validates a run's replicates: each a sample of the same
// kind as the pooled one (checkSample), none with replicates of its own, a
// rate's all with costs or all without as the pooled sample, and together
// as many samples (and for a share as many hits) as the pooled sample.
func checkReplicates(which string, s Sample, k Kind) error {
	if s.Replicates == nil {
		return nil
	}
	total, hits := 0, 0
	for j, r := range s.Replicates {
		name := fmt.Sprintf("%s replicate %d", which, j+1)
		if r.Replicates != nil {
			return fmt.Errorf("%s: has replicates of its own", name)
		}
		if err := checkSample(name, r, k); err != nil {
			return err
		}
		if k == KindRate && len(r.Values) > 0 && (r.Costs == nil) != (s.Costs == nil) {
			return fmt.Errorf("%s: a closed loop's rate needs costs in the pooled sample and in every replicate, or in none", name)
		}
		total += r.size(k)
		hits += r.Hits
	}
	if total != s.size(k) {
		return fmt.Errorf("%s: its replicates hold %d samples, the pooled sample %d", which, total, s.size(k))
	}
	if k == KindShare && hits != s.Hits {
		return fmt.Errorf("%s: its replicates hold %d hits, the pooled sample %d", which, hits, s.Hits)
	}
	return nil
}

// lowReplicates applies the low-confidence rule to the smallest replicate
// of each run when both have replicates, since the replicate interval then
// rests on each replicate's own statistic: MinSamples, and for a closed
// loop's rate MinWaves in every replicate. The reason is for Delta.Reason.
func lowReplicates(base, cur Sample, st Statistic) (bool, string) {
	if !replicated(base) || !replicated(cur) {
		return false, ""
	}
	need := MinSamples(st)
	mb, mn := smallestReplicate(base, st.Kind), smallestReplicate(cur, st.Kind)
	if mb < need || mn < need {
		return true, fmt.Sprintf("too few samples per replicate: %s needs %d, base's smallest replicate has %d, new's %d", st, need, mb, mn)
	}
	if st.Kind != KindRate {
		return false, ""
	}
	for _, run := range []struct {
		name string
		s    Sample
	}{{"base", base}, {"new", cur}} {
		for j, r := range run.s.Replicates {
			if r.Costs != nil && len(r.Values) < MinWaves*max(1, r.Workers) {
				return true, fmt.Sprintf("too few waves per replicate: a closed loop's rate needs %d waves, %s's replicate %d has %d requests on %d workers",
					MinWaves, run.name, j+1, len(r.Values), r.Workers)
			}
		}
	}
	return false, ""
}

// smallestReplicate is the size of the run's smallest replicate.
func smallestReplicate(s Sample, k Kind) int {
	n := math.MaxInt
	for _, r := range s.Replicates {
		n = min(n, r.size(k))
	}
	return n
}
