package comparison

import (
	"fmt"
	"math"

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
func (j *job) stretched(r *result.Comparison, d stats.Delta, threshold float64) {
	sb, sn := j.stretchBase, j.stretchNew
	if sb == 0 && sn == 0 || r.Verdict == string(stats.Inconclusive) {
		return
	}
	lo, hi := d.RelCI.Lo, d.RelCI.Hi
	// Toward worse is positive: a latency's rise, a throughput's fall.
	wlo, whi := (1+lo)/(1+sn)-1, (1+hi)*(1+sb)-1
	if j.metric.Better == result.HigherIsBetter {
		wlo, whi = 1-(1+hi)*(1+sn), 1-(1+lo)/(1+sb)
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
