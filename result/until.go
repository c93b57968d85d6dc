package result

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/runnerbench/runner/internal/stats"
)

// Why a level of a stage with until: stopped sending (LevelStop.Reason).
const (
	// StopDecided: every check that applies to the level was decided, its
	// metrics' intervals wholly on one side of their thresholds.
	StopDecided = "decided"
	// StopPrecise: the metric the level ran until was known to its
	// precision.
	StopPrecise = "precise"
	// StopCapped: the level reached max_requests or max_duration first.
	StopCapped = "capped"
	// StopFixed: the level sent its fixed count or duration (until: fixed
	// in a list).
	StopFixed = "fixed"
)

// StatusUndecided is a check's status when its interval still straddled
// its threshold as its level stopped and the stage asked for
// undecided: undecided. It fails nothing.
const StatusUndecided = "undecided"

// LevelStop says why a level of a stage with until: stopped sending. The
// run records it (LevelRecord.Stop) as its looks decided; a report
// recomputed from the records, or judged with another plan's checks, says
// what the run decided and never that the level ran longer.
type LevelStop struct {
	// Rule is the level's until rule as the plan gave it ("decided",
	// "ttft_p95_ms within 5%", "fixed").
	Rule string `json:"rule"`
	// Reason is decided, precise, capped or fixed.
	Reason string `json:"reason"`
	// Requests is how many measured requests had finished at the look
	// that stopped the level (decided, precise): the requests in flight then
	// finished too, so the level's n_requests can be a few more.
	Requests int `json:"requests,omitempty"`
	// Looks is how many times the rule looked at the level.
	Looks int `json:"looks,omitempty"`
	// By names the checks whose intervals decided the level (decided; empty
	// when no check that an interval can decide applied to it), or the
	// metric known to its precision (precise).
	By []string `json:"by,omitempty"`
	// Cap is the bound a capped level reached: max_requests or max_duration.
	Cap string `json:"cap,omitempty"`
	// Undecided names the checks still undecided when a capped level
	// stopped (computed by the report from the level's requests).
	Undecided []string `json:"undecided,omitempty"`
	// Confidence is the intervals' two-sided confidence.
	Confidence float64 `json:"confidence"`
}

// Text says why the level stopped, in a line: "decided at 140 requests by
// ttft p95", "capped at max_requests, undecided: interactive".
func (s *LevelStop) Text() string {
	if s == nil {
		return ""
	}
	switch s.Reason {
	case StopDecided:
		if len(s.By) == 0 {
			return fmt.Sprintf("stopped once its minimum had finished (%d requests): no check an interval decides applies to the level", s.Requests)
		}
		return fmt.Sprintf("decided at %d requests by %s", s.Requests, strings.Join(s.By, ", "))
	case StopPrecise:
		return fmt.Sprintf("precise at %d requests: %s", s.Requests, s.Rule)
	case StopCapped:
		t := "capped at " + s.Cap
		if len(s.Undecided) > 0 {
			t += ", undecided: " + strings.Join(s.Undecided, ", ")
		}
		return t
	}
	return s.Reason
}

// Short is the reason in a table cell: "decided@140", "precise@96",
// "capped", "fixed"; "minimum@97" for a level that stopped at its minimum
// with no check to decide (nothing was decided there).
func (s *LevelStop) Short() string {
	switch {
	case s == nil:
		return ""
	case s.Reason == StopDecided && len(s.By) == 0:
		return fmt.Sprintf("minimum@%d", s.Requests)
	case s.Reason == StopDecided || s.Reason == StopPrecise:
		return fmt.Sprintf("%s@%d", s.Reason, s.Requests)
	case s.Reason == StopCapped && len(s.Undecided) > 0:
		return "capped, undecided"
	}
	return s.Reason
}

// AnytimeInterval is a metric's anytime-valid interval over a level's
// requests (internal/stats.AnytimeInterval), at the stage's confidence: what
// a check of a stage with until: is decided by. A nil limit is unbounded
// (a p99 from 50 requests has no upper limit yet).
type AnytimeInterval struct {
	Metric     string   `json:"metric"`
	Low        *float64 `json:"low"`
	High       *float64 `json:"high"`
	Confidence float64  `json:"confidence"`
}

// Contains reports whether v lies in the interval.
func (a AnytimeInterval) Contains(v float64) bool {
	return (a.Low == nil || *a.Low <= v) && (a.High == nil || v <= *a.High)
}

// Text is the interval as reports show it: "[312 ms, 356 ms]",
// "[93.1%, 98.0%]", "[1.20 s, ∞]".
func (a AnytimeInterval) Text() string {
	lim := func(p *float64, inf string) string {
		if p == nil {
			return inf
		}
		return FormatMetric(a.Metric, *p)
	}
	return "[" + lim(a.Low, "−∞") + ", " + lim(a.High, "∞") + "]"
}

// FormatMetric is a metric's value for a sentence, with its unit: a
// latency as FormatMs does, a share as a percentage, anything else to
// three significant digits and its unit.
func FormatMetric(name string, v float64) string {
	m, ok := MetricNamed(name)
	switch {
	case ok && m.Unit == "ms":
		return FormatMs(v)
	case ok && m.Percent():
		return strconv.FormatFloat(Round(100*v, 2), 'f', -1, 64) + "%"
	case !ok || m.Unit == "":
		return sig3Any(v)
	}
	return sig3Any(v) + " " + m.Unit
}

// sig3Any is v to three significant digits, whole from 1000 on (1234
// tok/s, not 1.23e+03).
func sig3Any(v float64) string {
	if math.Abs(v) >= 1000 {
		return strconv.FormatFloat(math.Round(v), 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// Until is how a metric is known while a level runs (until:).
type Until int

// How a metric is known while a level runs.
const (
	// UntilNone: no interval holds across looks (a rate over the level's
	// wall, a ratio, a server counter, a flag): a check that reads it
	// cannot be decided early, and is judged on its value when the level
	// ends.
	UntilNone Until = iota
	// UntilSequence: a percentile or share of per-request values, with an
	// anytime-valid interval (UntilSpec says which).
	UntilSequence
	// UntilAsSent: a setting of the level or a count of what it sent
	// (concurrency, failed, completed): exact for the requests sent, and no
	// reason to wait.
	UntilAsSent
)

// asSent are the measured counts that are what they are for the requests
// sent: a check reading them holds as it stands at a look.
var asSent = []string{"completed", "failed", "reconnects", "output_len_mismatch", "usage_rejected", "errors_by_kind", "error"}

// UntilSpec says how the metric is known while a level runs, and for a
// sequence, which statistic of which per-request sample it is: a
// percentile or a share. error_rate is the failed share (a share of every
// measured request); the counts are as sent. A mean has none: on measured
// latencies, whose tail one stalled request stretches, no sequence kept
// its promise (docs/statistics.md's study: the asymptotic one decided 21%
// to 62% of its runs wrongly).
func (m *Metric) UntilSpec() (Until, CompareSpec) {
	switch {
	case m.Kind == KindLoad || slices.Contains(asSent, m.Name):
		return UntilAsSent, CompareSpec{}
	case m.Name == "error_rate":
		return UntilSequence, CompareSpec{Statistic: stats.Share(), Sample: SampleFailed}
	}
	switch m.Compare.Statistic.Kind {
	case stats.KindPercentile, stats.KindShare:
		if m.Compare.Sample != SampleNone {
			return UntilSequence, m.Compare
		}
	}
	return UntilNone, CompareSpec{}
}

// UntilWhyNot says why a metric has no interval that holds across looks,
// for a plan error or a check's message.
func (m *Metric) UntilWhyNot() string {
	switch m.Compare.Statistic.Kind {
	case stats.KindRate:
		return "a rate over the level's measured window, which has no interval that holds across looks"
	case stats.KindRatio:
		return "a ratio of sums over the level's requests, which has no interval that holds across looks"
	case stats.KindMean:
		return "a mean, which one stalled request can move anywhere: no interval across looks kept its promise on measured latencies (docs/statistics.md); a percentile has one"
	}
	if strings.HasPrefix(m.Name, "itl_") {
		return "a distribution of token gaps, correlated within a request, with no interval over requests (tpot_* is the per-request measure)"
	}
	return "not a percentile or share of per-request values, so no interval holds across looks"
}

// SweepStop says why a sweep that stops at saturation ended before its
// last listed level (Stage.SweepStop), recorded by the run as it decided.
type SweepStop struct {
	// Reason is saturated (throughput stopped growing while latency or the
	// waiting queue grew) or schedule (an open loop's requests could not
	// be sent at the offered rate).
	Reason string `json:"reason"`
	// Level is the saturation level: the last level whose throughput grew
	// (saturated), or the last that held its schedule (schedule).
	Level string `json:"level"`
	// Shown is the level that showed it, the last that ran.
	Shown string `json:"shown"`
	// Evidence is what showed it: each metric's change from Level to Shown
	// with its interval, or an open loop's achieved and offered rates.
	Evidence []SweepEvidence `json:"evidence"`
	// Skipped are the listed levels the sweep did not run, in order.
	Skipped []string `json:"skipped"`
	// Confidence is each interval's two-sided confidence (the stage's,
	// shared over the sweep's steps, Bonferroni).
	Confidence float64 `json:"confidence"`
	// Text says it in a sentence.
	Text string `json:"text"`
}

// Why sweeps stop early (SweepStop.Reason).
const (
	SweepSaturated = "saturated"
	SweepSchedule  = "schedule"
)

// SweepEvidence is one metric's part in a sweep stop: its value at the
// saturation level and at the level that showed it, the relative change
// (nil when the first is 0) and its interval (nil without one).
type SweepEvidence struct {
	Metric string   `json:"metric"`
	From   float64  `json:"from"`
	To     float64  `json:"to"`
	Change *float64 `json:"change,omitempty"`
	Low    *float64 `json:"low,omitempty"`
	High   *float64 `json:"high,omitempty"`
}

// StopNote is one line of why a stage's levels stopped: a level's label
// and what its until: rule decided, or (Label "") why the sweep stopped.
type StopNote struct {
	Label, Text string
}

// StopNotes says why each until level of the stage stopped, with its
// intervals at the stage's confidence over the requests it sent (a fixed
// level's count needs no line: its stop says fixed), then why the sweep
// stopped at saturation and which levels it skipped. Every reporter draws
// these lines.
func (st *Stage) StopNotes() []StopNote {
	var out []StopNote
	for i := range st.Points {
		p := &st.Points[i]
		if p.Stop == nil || p.Stop.Reason == StopFixed || p.Turn > 0 {
			continue
		}
		text := p.Stop.Text()
		var ivs []string
		for _, a := range p.Anytime {
			if a.Confidence == p.Stop.Confidence {
				ivs = append(ivs, a.Metric+" "+a.Text())
			}
		}
		if len(ivs) > 0 {
			text += fmt.Sprintf("; over its %d requests at %s: %s", p.NRequests, ConfidenceText(p.Stop.Confidence), strings.Join(ivs, ", "))
		}
		out = append(out, StopNote{Label: p.Label(), Text: text})
	}
	if s := st.SweepStop; s != nil {
		text := "sweep: " + s.Text
		if len(s.Skipped) > 0 {
			text += "; it stopped there and skipped " + strings.Join(s.Skipped, ", ")
		} else {
			text += "; that was its last level: nothing was skipped"
		}
		out = append(out, StopNote{Text: text})
	}
	return out
}

// ConfidenceText is a confidence as a percentage: "95%", "99.5%".
func ConfidenceText(c float64) string {
	return strconv.FormatFloat(Round(100*c, 4), 'f', -1, 64) + "%"
}
