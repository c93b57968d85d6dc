package aggregate

import (
	"fmt"

	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/sim/simconfig"
)

// SimBehindShare is the share of a level's requests the built-in simulator
// may serve behind its own model before the level is flagged sim_behind:
// past it, late requests reach into the percentiles a comparison judges
// (up to p99), so a change may be the machine's, not the model's.
const SimBehindShare = 0.01

// simLag sets what the built-in simulator said of its own lateness over the
// window (its counters on /metrics; nothing for another server) and flags
// the level when it served more than SimBehindShare of its requests behind
// the model. The simulator shares the machine: a timer that fires late or a
// handler waiting for a core stretches latencies the client then measures,
// which the client's own diagnostics do not see when another process, not
// the runner, holds the cores.
func (b *builder) simLag() {
	d, p := b.rec.Server, &b.p
	if d == nil {
		return
	}
	steps, okS := d.Counters[simconfig.MetricSteps]
	timed, okT := d.Counters[simconfig.MetricTimedRequests]
	if !okS || !okT {
		return // not the built-in simulator (or one before these counters)
	}
	late := int64(d.Counters[simconfig.MetricLateSteps])
	behind := int64(d.Counters[simconfig.MetricBehindRequests])
	p.SimLateSteps = result.Ptr(late)
	p.SimLatenessMs = result.Ptr(result.Round(1000*d.Counters[simconfig.MetricStepLateness], 2))
	p.SimBehindRequests = result.Ptr(behind)
	if timed > 0 {
		p.SimLagMeanMs = result.Ptr(result.Round(1000*d.Counters[simconfig.MetricRequestLag]/timed, 3))
	}
	if behind == 0 || timed == 0 || float64(behind) <= SimBehindShare*timed {
		return
	}
	p.SimBehind = true
	p.Warnings = append(p.Warnings, fmt.Sprintf(
		"sim_behind: the built-in simulator fell behind its own timing model (it shares the machine): %d of %.0f requests were served late by more than 2%% of their modelled time to first token or decode, their last tokens %.2f ms late on average; %d of %.0f engine steps ended more than 1 ms late, %.1f ms in all. The latencies are the machine's as much as the model's, so a comparison does not judge this level",
		behind, timed, *p.SimLagMeanMs, late, steps, *p.SimLatenessMs))
}
