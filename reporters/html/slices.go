package html

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/internal/render/chart"
	"github.com/runnerbench/runner/result"
)

// The time series of a sliced stage (result.Slices): each level's slices on
// one time axis over the stage, from its first sliced level's opening, each
// slice a point at its middle (a level's line ends with it: the time between
// levels, warm-ups included, is a gap). Level openings are marks, slice
// boundaries ticks along the foot, and each judged level's steady window a
// shaded band (amber when the level was not steady).

// slicedLevel is one level with slices, placed on the stage's time axis.
type slicedLevel struct {
	p   *result.Point
	off float64 // seconds from the stage's first sliced opening
}

func slicedLevels(st *result.Stage) []slicedLevel {
	var out []slicedLevel
	for i := range st.Points {
		p := &st.Points[i]
		if p.Slices != nil && len(p.Slices.Windows) > 0 && !p.Slices.Start.IsZero() {
			out = append(out, slicedLevel{p: p})
		}
	}
	if len(out) == 0 {
		return nil
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].p.Slices.Start.Before(out[j].p.Slices.Start) })
	t0 := out[0].p.Slices.Start
	for i := range out {
		out[i].off = out[i].p.Slices.Start.Sub(t0).Seconds()
	}
	return out
}

// sliceMetric is one line of a chart over time.
type sliceMetric struct {
	name  string
	unit  string
	color int
	val   func(s *result.Slice) *float64
}

// timeChart is one chart of the stage's slices over time.
func timeChart(id, ylabel string, levels []slicedLevel, ms []sliceMetric) chart.Line {
	c := chart.Line{ID: id, X: chart.Axis{Label: "time since the first level's opening (s)"}, Y: chart.Axis{Label: ylabel}}
	for _, m := range ms {
		s := chart.Series{Name: m.name, Color: m.color}
		for li, l := range levels {
			if li > 0 {
				s.Points = append(s.Points, chart.Point{X: l.off}) // a gap between levels
			}
			for k := range l.p.Slices.Windows {
				w := &l.p.Slices.Windows[k]
				if !drawn(w, l.p.Slices.WidthS) {
					continue
				}
				tip := fmt.Sprintf("%s, slice %d (%s–%s s): ", l.p.Label(), k+1, chart.Num(w.StartS), chart.Num(w.EndS))
				v := m.val(w)
				if v != nil {
					tip += chart.Num(*v) + " " + m.unit
				}
				s.Points = append(s.Points, chart.Point{X: l.off + (w.StartS+w.EndS)/2, Y: v, Tip: tip})
			}
		}
		c.Series = append(c.Series, s)
	}
	for _, l := range levels {
		c.Marks = append(c.Marks, chart.Mark{X: l.off, Label: l.p.Label(), Color: 7, Dashed: true})
		for _, w := range l.p.Slices.Windows {
			c.Edges = append(c.Edges, l.off+w.EndS)
		}
		st := l.p.Slices.Steadiness
		if st.Judged && st.Steady != nil {
			label := l.p.Label() + ": steady window " + chart.Num(st.SteadyFromS) + "–" + chart.Num(st.ToS) + " s"
			if !*st.Steady {
				label = l.p.Label() + ": not steady (judged " + chart.Num(st.FromS) + "–" + chart.Num(st.ToS) + " s; steady from " + chart.Num(st.SteadyFromS) + " s)"
			}
			c.Bands = append(c.Bands, chart.Band{X0: l.off + st.SteadyFromS, X1: l.off + st.ToS, Label: label, Warn: !*st.Steady})
		}
	}
	return c
}

// drawn reports whether a slice is drawn: not a last slice shorter than
// half the width (a few ms of a level's drain, whose rates over so short a
// time would dwarf the rest); report.json has it.
func drawn(w *result.Slice, width float64) bool {
	return !w.Partial || w.EndS-w.StartS >= width/2
}

// sliceCharts are a sliced stage's charts over time: requests in flight,
// output throughput, TTFT and ITL percentiles, and one chart per series
// sampled during the levels (Slice.Series: telemetry), by name.
func sliceCharts(st *result.Stage, anchor string) ([]chartView, []string) {
	levels := slicedLevels(st)
	if levels == nil {
		return nil, nil
	}
	var notes []string
	var out []chartView
	add := func(id, title string, c chart.Line) {
		out = append(out, lineView(id, title, st.Name, c))
	}
	fp := func(v float64) *float64 { return &v }
	load := func(s *result.Slice) *float64 { return s.Load }
	series := slices.ContainsFunc(levels, func(l slicedLevel) bool { return l.p.Series != nil })
	id := anchor + "-slices-inflight"
	inFlight := []sliceMetric{
		{"mean in flight", "requests", 0, func(s *result.Slice) *float64 { return fp(s.InFlightMean) }},
		{"most in flight", "requests", 1, func(s *result.Slice) *float64 { return fp(float64(s.InFlightMax)) }},
	}
	if series && st.Load == result.LoadConcurrency {
		// A concurrency series: the streams it asked for beside what was held.
		inFlight = append(inFlight, sliceMetric{"streams the series asked for", "streams", 2, load})
	}
	if series && st.Load == result.LoadRate {
		// A rate series: the rate it asked for beside what was sent.
		id := anchor + "-slices-load"
		add(id, "Arrival rate over time", timeChart(id, "requests/s", levels, []sliceMetric{
			{"rate the series asked for", "req/s", 2, load},
			{"sent", "req/s", 0, func(s *result.Slice) *float64 {
				if w := s.EndS - s.StartS; w > 0 {
					return fp(float64(s.Sent) / w)
				}
				return nil
			}},
		}))
	}
	add(id, "Requests in flight over time", timeChart(id, "requests", levels, inFlight))
	id = anchor + "-slices-throughput"
	add(id, "Output throughput over time", timeChart(id, "output tokens/s (all streams)", levels, []sliceMetric{
		{"output tok/s", "tok/s", 0, func(s *result.Slice) *float64 { return fp(s.OutputTPS) }},
	}))
	id = anchor + "-slices-ttft"
	add(id, "Time to first token over time", timeChart(id, "TTFT (ms)", levels, []sliceMetric{
		{"TTFT p50", "ms", 0, func(s *result.Slice) *float64 { return s.TTFTP50Ms }},
		{"TTFT p95", "ms", 1, func(s *result.Slice) *float64 { return s.TTFTP95Ms }},
	}))
	id = anchor + "-slices-itl"
	add(id, "Inter-token latency over time", timeChart(id, "ITL (ms)", levels, []sliceMetric{
		{"ITL p50", "ms", 0, func(s *result.Slice) *float64 { return s.ITLP50Ms }},
		{"ITL p95", "ms", 1, func(s *result.Slice) *float64 { return s.ITLP95Ms }},
	}))
	for i, name := range seriesNames(levels) {
		if name == aggregate.SeriesKVCache {
			if why := kvUnmeasured(levels); why != "" {
				notes = append(notes, why)
				continue
			}
		}
		id = anchor + "-slices-series-" + strconv.Itoa(i)
		add(id, name+" over time", timeChart(id, name+" (mean per slice)", levels, []sliceMetric{
			{name, "", 0, func(s *result.Slice) *float64 {
				if v, ok := s.Series[name]; ok {
					return fp(v)
				}
				return nil
			}},
		}))
	}
	return out, notes
}

// kvUnmeasured says why the slices' KV-cache chart is not drawn: the
// endpoint's gauge read 0 in every slice while the server ran requests, so
// it does not measure a cache in use ("" when it does, or when no slice
// says the server ran any).
func kvUnmeasured(levels []slicedLevel) string {
	n, running := 0, 0.0
	for _, l := range levels {
		for _, w := range l.p.Slices.Windows {
			if v, ok := w.Series[aggregate.SeriesKVCache]; ok {
				if v != 0 {
					return ""
				}
				n++
			}
			running = math.Max(running, w.Series[aggregate.SeriesRunning])
		}
	}
	if n == 0 || running <= 0 {
		return ""
	}
	return fmt.Sprintf("KV-cache usage: the endpoint read 0 in all %d slices while it ran up to %s requests on average in a slice, so its gauge does not measure a cache in use; not drawn",
		n, chart.Num(running))
}

// seriesNames are the names of every sampled series the levels' slices
// hold, sorted.
func seriesNames(levels []slicedLevel) []string {
	var names []string
	for _, l := range levels {
		for _, w := range l.p.Slices.Windows {
			for n := range w.Series {
				if !slices.Contains(names, n) {
					names = append(names, n)
				}
			}
		}
	}
	sort.Strings(names)
	return names
}

// sliceNotes say in one line what the stage's slices were and how each
// level fared, for under the charts.
func sliceNotes(st *result.Stage) []string {
	var out []string
	for i := range st.Points {
		p := &st.Points[i]
		if p.Slices == nil {
			continue
		}
		s := p.Slices
		line := p.Label() + ": " + strconv.Itoa(len(s.Windows)) + " slices of " + (time.Duration(s.WidthS * float64(time.Second))).String()
		if n := len(s.Windows); n > 0 && !drawn(&s.Windows[n-1], s.WidthS) {
			line += " (the last, " + chart.Num(result.Round(s.Windows[n-1].EndS-s.Windows[n-1].StartS, 3)) + " s, not drawn)"
		}
		switch st := s.Steadiness; {
		case !st.Judged:
			line += "; " + st.Why
		case st.Steady != nil && *st.Steady:
			line += "; steady over " + chart.Num(st.FromS) + "–" + chart.Num(st.ToS) + " s"
		default:
			line += "; not steady (see the warnings), steady from " + chart.Num(st.SteadyFromS) + " s"
		}
		out = append(out, line)
		for _, n := range s.Notes {
			out = append(out, p.Label()+": "+n)
		}
	}
	return out
}
