package html

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/internal/render/chart"
	"github.com/runnerbench/runner/result"
)

// Telemetry is what the page draws of a run's telemetry reads
// (telemetry.jsonl, read by the caller): its series over time
// (aggregate.Tracks) and what a target held that is not drawn.
type Telemetry struct {
	Tracks  []aggregate.Track
	Undrawn []aggregate.Undrawn
}

// Options are what Write draws beside the report.
type Options struct {
	// Baseline is the report the run was compared with (nil: none): each
	// stage's load curves are drawn beside its stage of the same name's.
	Baseline *result.Report
	// Telemetry is the run's telemetry (nil: none read, or not at hand).
	Telemetry *Telemetry
}

// trackChart is the tracks of one chart of one target.
type trackChart struct {
	target, name string
	endpoint     bool
	tracks       []aggregate.Track
}

// stateSeries are the series a sliced stage's own charts draw (its slices'
// means of the same reads), so the reads' charts leave them to those.
var stateSeries = []string{aggregate.SeriesRunning, aggregate.SeriesWaiting, aggregate.SeriesKVCache, aggregate.SeriesGPUPower}

// telemetryCharts are a stage's telemetry reads over time, a chart per
// target and series (the endpoint's requests running and waiting and its
// KV-cache usage, the GPUs' power, a target's other gauges), with each
// level's first read marked; and notes on what is not drawn and why. A
// stage with slices has its endpoint's state drawn per slice already.
func telemetryCharts(st *result.Stage, anchor string, tel *Telemetry, sliced bool) ([]chartView, []string) {
	if tel == nil {
		return nil, nil
	}
	var groups []*trackChart
	at := map[[2]string]*trackChart{}
	t0 := math.Inf(1)
	for _, t := range tel.Tracks {
		if t.Stage != st.Name || len(t.Points) == 0 {
			continue
		}
		t0 = math.Min(t0, chart.Unix(t.Points[0].T))
		k := [2]string{t.Target, t.Chart}
		g := at[k]
		if g == nil {
			g = &trackChart{target: t.Target, name: t.Chart, endpoint: t.Endpoint}
			at[k] = g
			groups = append(groups, g)
		}
		g.tracks = append(g.tracks, t)
	}
	var out []chartView
	var notes []string
	for i, g := range groups {
		if sliced && g.endpoint && contains(stateSeries, g.name) {
			continue
		}
		if why := unmeasured(g, at); why != "" {
			notes = append(notes, why)
			continue
		}
		id := anchor + "-telemetry-" + strconv.Itoa(i)
		out = append(out, lineView(id, g.name+" over time ("+targetName(g.target, g.endpoint)+")", st.Name, trackLine(id, st, g, t0)))
	}
	if ep := endpointOf(groups); ep != "" && at[[2]string{ep, aggregate.SeriesKVCache}] == nil {
		notes = append(notes, "KV-cache usage: "+targetName(ep, true)+" exposes none of "+strings.Join(result.KVCacheGauges, ", ")+"; not drawn")
	}
	for _, u := range tel.Undrawn {
		if u.Stage != st.Name {
			continue
		}
		if len(u.Metrics) > 0 {
			notes = append(notes, targetName(u.Target, false)+" also held, not drawn (in telemetry.jsonl): "+strings.Join(u.Metrics, ", "))
		}
		if len(u.Constant) > 0 {
			notes = append(notes, targetName(u.Target, false)+" held one value in every read, not drawn: "+strings.Join(u.Constant, ", "))
		}
	}
	return out, notes
}

// unmeasured says why a KV-cache chart is not drawn: every read of the
// gauge said 0 while the same server ran requests, so the gauge does not
// measure a cache in use (a server without a KV-cache model reports 0).
func unmeasured(g *trackChart, at map[[2]string]*trackChart) string {
	if g.name != aggregate.SeriesKVCache {
		return ""
	}
	n := 0
	for _, t := range g.tracks {
		for _, p := range t.Points {
			if p.V != 0 {
				return ""
			}
			n++
		}
	}
	running := 0.0
	if r := at[[2]string{g.target, aggregate.SeriesRunning}]; r != nil {
		for _, t := range r.tracks {
			for _, p := range t.Points {
				running = math.Max(running, p.V)
			}
		}
	}
	if running <= 0 {
		return ""
	}
	return fmt.Sprintf("KV-cache usage: %s read 0 in all %d reads while it ran up to %s requests, so its gauge does not measure a cache in use; not drawn",
		targetName(g.target, g.endpoint), n, chart.Num(running))
}

func endpointOf(groups []*trackChart) string {
	for _, g := range groups {
		if g.endpoint {
			return g.target
		}
	}
	return ""
}

func targetName(name string, endpoint bool) string {
	if endpoint {
		return "endpoint " + name
	}
	return "telemetry target " + name
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// trackLine is one chart of a target's tracks: seconds since the stage's
// first read, a line per track (a gap between levels), a mark at each
// level's first read.
func trackLine(id string, st *result.Stage, g *trackChart, t0 float64) chart.Line {
	c := chart.Line{ID: id, X: chart.Axis{Label: "time since the stage's first telemetry read (s)"}, Y: chart.Axis{Label: g.name}}
	labels := levelLabels(st)
	marked := map[int]bool{}
	for i, t := range g.tracks {
		name := t.Line
		if name == "" {
			name = g.name
		}
		s := chart.Series{Name: name, Color: i}
		prev := -1
		for _, p := range t.Points {
			x := chart.Unix(p.T) - t0
			if prev >= 0 && p.Level != prev {
				s.Points = append(s.Points, chart.Point{X: x}) // a gap between levels
			}
			if !marked[p.Level] {
				marked[p.Level] = true
				c.Marks = append(c.Marks, chart.Mark{X: x, Label: labels(p.Level), Color: 7, Dashed: true})
			}
			prev = p.Level
			s.Points = append(s.Points, chart.Point{X: x, Y: chart.F(p.V),
				Tip: fmt.Sprintf("%s, %s s: %s", labels(p.Level), chart.Num(result.Round(x, 3)), chart.Num(p.V))})
		}
		c.Series = append(c.Series, s)
	}
	return c
}

// levelLabels names a level by its index in the stage (the order levels
// ran, as telemetry.jsonl numbers them): its point's label, the per-turn
// points of a multi-turn stage left out.
func levelLabels(st *result.Stage) func(int) string {
	var labels []string
	for i := range st.Points {
		if !st.Points[i].Part() {
			labels = append(labels, st.Points[i].Label())
		}
	}
	return func(i int) string {
		if i >= 0 && i < len(labels) {
			return labels[i]
		}
		return "level " + strconv.Itoa(i+1)
	}
}
