package stopping

import (
	"fmt"
	"math"
	"strings"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/internal/stats"
	"github.com/runnerbench/runner/result"
)

// The saturation stop's rules (docs/load.md and docs/statistics.md say
// why).
const (
	// SaturationGrowth: a throughput whose interval says it grew by less
	// than this over the level before (its upper limit) has stopped
	// growing.
	SaturationGrowth = 0.10
	// ScheduleShare: an open-loop level that sent its requests at less than
	// this share of its offered rate could not hold its schedule.
	ScheduleShare = 0.90
	// WaitingMin is the waiting-queue p95 (requests, from telemetry) at
	// which a level counts as queueing.
	WaitingMin = 1.0
)

// Level is one level of a sweep as the saturation stop reads it: its point
// and its per-request samples.
type Level struct {
	Point   *result.Point
	Samples *aggregate.Samples
}

// Saturated judges cur, the level a sweep just ran, against prev, the level
// before it (nil for the first), at the stage's confidence shared over the
// sweep's steps (Bonferroni over its levels − 1 comparisons): nil when the
// sweep goes on, else why it stops. An open loop stops when cur could not
// send its requests at ScheduleShare of the offered rate; any sweep when
// cur's throughput stopped growing (stats.StoppedGrowing) while its TTFT
// p50 (E2E p50 for an API without output) grew, by its interval, or the
// server's waiting queue grew from below WaitingMin to at least it.
func (s *Stage) Saturated(prev, cur Level, levels int) *result.SweepStop {
	if s == nil || !s.until.StopAtSaturation || cur.Point == nil {
		return nil
	}
	conf := stats.FamilyConfidence(s.until.Confidence, max(1, levels-1))
	if st := schedule(prev, cur, conf); st != nil {
		return st
	}
	if prev.Point == nil || prev.Samples == nil || cur.Samples == nil {
		return nil
	}
	tput, tputSrc := "output_tps_total", result.SampleOutputTokens
	lat, latSrc := "ttft_p50_ms", result.SampleTTFT
	if cur.Point.OutputTPSTotal == 0 && prev.Point.OutputTPSTotal == 0 {
		tput, tputSrc, lat, latSrc = "request_tps", result.SampleCompleted, "e2e_p50_ms", result.SampleE2E
	}
	opts := stats.Options{Confidence: conf}
	dt, err := stats.Compare(prev.Samples.Sample(tputSrc), cur.Samples.Sample(tputSrc), stats.Rate(), stats.HigherIsBetter, opts)
	if err != nil || !stats.StoppedGrowing(dt, SaturationGrowth) {
		return nil
	}
	ev := []result.SweepEvidence{evidence(tput, dt)}
	why := ""
	dl, err := stats.Compare(prev.Samples.Sample(latSrc), cur.Samples.Sample(latSrc), stats.Percentile(0.5), stats.LowerIsBetter, opts)
	switch {
	case err == nil && dl.Verdict == stats.Worse:
		ev = append(ev, evidence(lat, dl))
		why = fmt.Sprintf("%s grew %s", title(lat), changeText(dl.Rel, dl.RelCI))
	case queued(prev.Point, cur.Point):
		w0, w1 := *prev.Point.ServerWaitingP95, *cur.Point.ServerWaitingP95
		ev = append(ev, result.SweepEvidence{Metric: "server_waiting_p95", From: w0, To: w1, Change: rel(w0, w1)})
		why = fmt.Sprintf("the server's waiting queue p95 went from %g to %g requests", w0, w1)
	default:
		return nil // throughput flat, latency flat: not shown to be saturated
	}
	return &result.SweepStop{
		Reason: result.SweepSaturated, Level: prev.Point.Label(), Shown: cur.Point.Label(), Evidence: ev, Confidence: conf,
		Text: fmt.Sprintf("saturated at %s: at %s %s changed %s, less than +%.0f%% more, while %s",
			prev.Point.Label(), cur.Point.Label(), title(tput), changeText(dt.Rel, dt.RelCI), 100*SaturationGrowth, why),
	}
}

// schedule is the open-loop stop: cur sent its requests at less than
// ScheduleShare of its offered rate.
func schedule(prev, cur Level, conf float64) *result.SweepStop {
	p := cur.Point
	if p.Rate == nil || p.AchievedRate == nil || *p.AchievedRate >= ScheduleShare**p.Rate {
		return nil
	}
	held := "no level held its schedule"
	level := ""
	if prev.Point != nil {
		level = prev.Point.Label()
		held = "the last level that held it was " + level
	}
	return &result.SweepStop{
		Reason: result.SweepSchedule, Level: level, Shown: p.Label(), Confidence: conf,
		Evidence: []result.SweepEvidence{{Metric: "achieved_rate", From: *p.Rate, To: *p.AchievedRate, Change: rel(*p.Rate, *p.AchievedRate)}},
		Text: fmt.Sprintf("the schedule could not be held at %s: requests went out at %g/s of the %g/s offered (below %.0f%%); %s",
			p.Label(), *p.AchievedRate, *p.Rate, 100*ScheduleShare, held),
	}
}

// queued reports whether the server's waiting queue (telemetry) grew from
// below WaitingMin at prev to at least it at cur.
func queued(prev, cur *result.Point) bool {
	a, b := prev.ServerWaitingP95, cur.ServerWaitingP95
	return a != nil && b != nil && *a < WaitingMin && *b >= WaitingMin
}

func evidence(metric string, d stats.Delta) result.SweepEvidence {
	e := result.SweepEvidence{Metric: metric, From: d.Base, To: d.New}
	if !math.IsNaN(d.Rel) && !math.IsInf(d.Rel, 0) {
		e.Change = result.Ptr(d.Rel)
	}
	if !math.IsNaN(d.RelCI.Lo) && !math.IsInf(d.RelCI.Lo, 0) {
		e.Low = result.Ptr(d.RelCI.Lo)
	}
	if !math.IsNaN(d.RelCI.Hi) && !math.IsInf(d.RelCI.Hi, 0) {
		e.High = result.Ptr(d.RelCI.Hi)
	}
	return e
}

// rel is b's change from a, nil when a is 0.
func rel(a, b float64) *float64 {
	if a == 0 {
		return nil
	}
	return result.Ptr(b/a - 1)
}

func title(metric string) string {
	if m, ok := result.MetricNamed(metric); ok {
		return m.Title
	}
	return metric
}

// changeText is a relative change with its interval: "+3.1% [−1.2%, +7.4%]".
func changeText(x float64, iv stats.Interval) string {
	pct := func(v float64) string { return strings.Replace(fmt.Sprintf("%+.1f%%", 100*v), "-", "−", 1) }
	return fmt.Sprintf("%s [%s, %s]", pct(x), pct(iv.Lo), pct(iv.Hi))
}
