package comparison

import (
	"fmt"
	"math"
	"slices"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/internal/stats"
	"github.com/runnerbench/runner/result"
)

// simStretch is how much the built-in simulator's lateness may have
// stretched what a metric of this sample measures in a run's level: 0 when
// it kept its model, else the stretch maximum of the part the sample
// measures (time to first token, decode, or whole requests), +Inf past
// every bound. The failed share does not move with lateness.
func simStretch(p *result.Point, s result.Sample) float64 {
	if !p.SimBehind {
		return 0
	}
	var parts []*float64
	switch s {
	case result.SampleFailed:
		return 0
	case result.SampleTTFT, result.SampleTTFTFromSchedule, result.SampleTTFTOverhead, result.SamplePrefill:
		parts = []*float64{p.SimTTFTStretchMax}
	case result.SampleTPOT:
		parts = []*float64{p.SimDecodeStretchMax}
	case result.SampleE2E, result.SampleE2EFromSchedule, result.SampleStreamTPS, result.SampleOutputTokens, result.SampleCompleted:
		parts = []*float64{p.SimE2EStretchMax}
	default: // TTFAT lies between the first token and the last; goodput any of them
		parts = []*float64{p.SimTTFTStretchMax, p.SimDecodeStretchMax, p.SimE2EStretchMax}
	}
	var m float64
	for _, v := range parts {
		if v == nil {
			return math.Inf(1)
		}
		m = max(m, *v)
	}
	return m
}

// stretched re-reads a verdict where the simulator fell behind its model in
// either run: its lateness made each latency of a run up to (1 + stretch)
// times the model's and its throughput as much smaller, so the true change
// lies in the interval widened by those factors. A verdict stands only if
// the widened interval gives it too; otherwise it is inconclusive, with the
// reason: a busy machine is inconclusive, not worse, while a change larger
// than the lateness could make is still found. Shares and changes from a
// base of 0 have no such bound and become inconclusive.
//
// For a latency's percentile or mean, where the level's records say how
// many requests the simulator stretched by how much (its lag-ratio
// histograms), the bound is tighter than the maximum (see modelFloor): the interval's ends are
// those of the comparisons with each run's requests brought down to the
// least the model could have given them.
func (j *job) stretched(r *result.Comparison, d stats.Delta, o stats.Options) {
	sb, sn := j.stretchBase, j.stretchNew
	if sb == 0 && sn == 0 || r.Verdict == string(stats.Inconclusive) {
		return
	}
	threshold := o.Threshold
	lo, hi := d.RelCI.Lo, d.RelCI.Hi
	// Toward worse is positive: a latency's rise, a throughput's fall.
	wlo, whi := (1+lo)/(1+sn)-1, (1+hi)*(1+sb)-1
	if j.metric.Better == result.HigherIsBetter {
		wlo, whi = 1-(1+hi)*(1+sn), 1-(1+lo)/(1+sb)
	} else if k := d.Statistic.Kind; k == stats.KindPercentile || k == stats.KindMean {
		// The least the new run's model could have given makes the change
		// smallest; the least the baseline's, largest.
		st, dir := j.metric.Compare.Statistic, j.metric.Better.Direction()
		if sn > 0 {
			if dl, err := stats.Compare(j.base, modelFloor(j.cur, j.lateNew, sn), st, dir, o); err == nil && !math.IsNaN(dl.RelCI.Lo) {
				wlo = max(wlo, dl.RelCI.Lo)
			}
		}
		if sb > 0 {
			if dh, err := stats.Compare(modelFloor(j.base, j.lateBase, sb), j.cur, st, dir, o); err == nil && !math.IsNaN(dh.RelCI.Hi) {
				whi = min(whi, dh.RelCI.Hi)
			}
		}
	}
	v := stats.Inconclusive
	switch {
	case d.Statistic.Kind == stats.KindShare || math.IsNaN(lo) || math.IsNaN(hi):
	case wlo >= -threshold && whi <= threshold:
		v = stats.Same
	case wlo > 0:
		v = stats.Worse
	case whi < 0:
		v = stats.Better
	}
	if string(v) == r.Verdict {
		return
	}
	r.Verdict = string(stats.Inconclusive)
	r.Reason = fmt.Sprintf("the built-in simulator fell behind its own timing model in %s (sim_behind: requests stretched by %s): a change that size may be the busy machine's",
		runsOf(sb > 0, sn > 0), stretchText(max(sb, sn)))
}

// modelFloor is a latency sample brought down to the least the simulator's
// model could have given its requests, when none was stretched by more than
// stretch and, for each bound in late, at most its Requests by more than its
// Stretch. Sorted, its k-th value is the largest of v[k]/(1+stretch) and,
// for each bound, v[k-Requests]/(1+Stretch): the model's k-th smallest
// latency is at least the k-th observed one over 1+stretch, and, since only
// Requests of them were stretched by more than Stretch, at least the
// (k-Requests)-th observed one over 1+Stretch. Each order statistic of the
// model's sample is at least the floor's, so its percentiles and mean are
// too (a resampled one as well: the floor lies below the model's sample
// rank for rank), and the comparisons with it bound the change the model
// made. A replicate holds at most the level's late requests. Without
// bounds (late nil) only the maximum holds.
//
// This is what lets a median ignore a few late requests: one request
// stretched by 100% moves the floor of a 100-request p50 from the 50th to
// the 49th observed value, not by half.
func modelFloor(s stats.Sample, late []aggregate.LateBound, stretch float64) stats.Sample {
	out := s
	out.Values = floorValues(s.Values, late, stretch)
	if len(s.Replicates) > 0 {
		out.Replicates = make([]stats.Sample, len(s.Replicates))
		for i, r := range s.Replicates {
			out.Replicates[i] = modelFloor(r, late, stretch)
		}
	}
	return out
}

func floorValues(v []float64, late []aggregate.LateBound, stretch float64) []float64 {
	if len(v) == 0 {
		return v
	}
	sorted := slices.Clone(v)
	slices.Sort(sorted)
	out := make([]float64, len(sorted))
	for k, x := range sorted {
		out[k] = x / (1 + stretch)
		for _, b := range late {
			if b.Stretch < stretch && b.Requests >= 0 && int64(k) >= b.Requests {
				out[k] = max(out[k], sorted[k-int(b.Requests)]/(1+b.Stretch))
			}
		}
	}
	return out
}

func runsOf(base, cur bool) string {
	switch {
	case base && cur:
		return "both runs"
	case base:
		return "the baseline"
	}
	return "the new run"
}

func stretchText(s float64) string {
	if math.IsInf(s, 1) {
		return "more than 100 times"
	}
	return fmt.Sprintf("up to %g%%", 100*s)
}
