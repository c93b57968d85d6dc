package aggregate

import (
	"fmt"
	"math"

	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/sim/simconfig"
)

// SimBehindShare is how much the built-in simulator's lateness may stretch
// a request against its model before the level is flagged sim_behind: half
// the comparison's default practical threshold (5%), so a bias that small,
// with an interval no wider than the other half, still reads "same".
const SimBehindShare = 0.025

// simLag sets what the built-in simulator said of its own lateness over the
// window (its counters on /metrics; nothing for another server) and flags
// the level sim_behind when it stretched some request's time to first token
// or decode by more than SimBehindShare against the model. The simulator
// shares the machine: a timer that fires late or a handler waiting for a
// core stretches latencies the client then measures, which the client's own
// diagnostics do not see when another process, not the runner, holds the
// cores. The stretch maxima bound that, part by part, so a comparison can
// still judge a change larger than the lateness could have made.
func (b *builder) simLag() {
	d, p := b.rec.Server, &b.p
	if d == nil {
		return
	}
	steps, okS := d.Counters[simconfig.MetricSteps]
	h, okH := d.Histograms[simconfig.MetricLagRatio]
	if !okS || !okH {
		return // not the built-in simulator (or one before these counters)
	}
	late := int64(d.Counters[simconfig.MetricLateSteps])
	p.SimLateSteps = result.Ptr(late)
	p.SimLatenessMs = result.Ptr(result.Round(1000*d.Counters[simconfig.MetricStepLateness], 2))
	p.SimBehindRequests = result.Ptr(int64(h.Above(SimBehindShare)))
	if h.Count == 0 {
		return
	}
	p.SimLagMeanMs = result.Ptr(result.Round(1000*d.Counters[simconfig.MetricRequestLag]/h.Count, 3))
	p.SimTTFTStretchMax = stretchMax(d, simconfig.MetricTTFTLagRatio)
	p.SimDecodeStretchMax = stretchMax(d, simconfig.MetricDecodeLagRatio)
	p.SimE2EStretchMax = stretchMax(d, simconfig.MetricE2ELagRatio)
	bound := h.Max()
	if bound <= SimBehindShare {
		return
	}
	p.SimBehind = true
	p.Warnings = append(p.Warnings, fmt.Sprintf(
		"sim_behind: the built-in simulator fell behind its own timing model (it shares the machine): it stretched %d of %.0f requests' time to first token or decode by more than 2.5%% (time to first token %s, decode %s, whole requests %s), their last tokens %.2f ms late on average; %d of %.0f engine steps ended more than 1 ms late, %.1f ms in all. A comparison judges only changes larger than that stretch",
		*p.SimBehindRequests, h.Count, stretchText(p.SimTTFTStretchMax), stretchText(p.SimDecodeStretchMax), stretchText(p.SimE2EStretchMax),
		*p.SimLagMeanMs, late, steps, *p.SimLatenessMs))
}

// stretchMax is a lag-ratio histogram's bound on its largest observation;
// nil past the last bound (or without the histogram).
func stretchMax(d *result.ServerDelta, name string) *float64 {
	h, ok := d.Histograms[name]
	if !ok {
		return nil
	}
	if m := h.Max(); !math.IsInf(m, 1) {
		return result.Ptr(m)
	}
	return nil
}

func stretchText(s *float64) string {
	if s == nil {
		return "more than 100 times"
	}
	return fmt.Sprintf("up to %g%%", 100**s)
}
