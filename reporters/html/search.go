package html

import (
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/runnerbench/runner/internal/render/chart"
	"github.com/runnerbench/runner/result"
)

// A capacity search on the page: a table of the targets' outcomes, the probes
// in the order they ran with each target's capacity across them, and per
// target the curve of what it reads against load with its boundary marked.

// searchView is a search's outcome for the template.
type searchView struct {
	Summary string
	Rows    []searchRow
	Notes   []string
}

// searchRow is one target's outcome.
type searchRow struct {
	Target, Expr, Status, Capacity, Pass, Fail string
	Confident                                  bool
	At                                         []kv
}

func buildSearch(st *result.Stage) *searchView {
	sr := st.Search
	if sr == nil {
		return nil
	}
	v := &searchView{Summary: strconv.Itoa(sr.Probes) + " probes over " + string(sr.Over) + " " + loadName(sr, sr.Min) + " to " +
		loadName(sr, sr.Max) + " (" + chart.Num(sr.ProbeTimeS) + " s measured); stopped: " + strings.ReplaceAll(sr.Stop, "_", " ")}
	for _, t := range sr.Targets {
		row := searchRow{Target: t.Name, Expr: t.Expr, Status: strings.ReplaceAll(t.Status, "_", " "), Confident: t.Confident,
			Capacity: "—", Pass: bracketEnd(t.Pass), Fail: bracketEnd(t.Fail)}
		if t.Capacity != nil {
			row.Capacity = loadName(sr, *t.Capacity)
			if t.Status == result.SearchAboveMax {
				row.Capacity = "≥ " + row.Capacity
			}
		}
		row.At = sortedKV(t.AtCapacity, chart.Num)
		v.Rows = append(v.Rows, row)
		for _, n := range t.Notes {
			v.Notes = append(v.Notes, t.Name+": "+n)
		}
	}
	return v
}

func loadName(sr *result.SearchResult, x float64) string {
	if sr.Over == result.LoadRate {
		return chart.Num(x) + " req/s"
	}
	return "c=" + chart.Num(x)
}

// bracketEnd shows a bracket end: its load, its probes, whether it was clear.
func bracketEnd(l *result.SearchLoad) string {
	if l == nil {
		return "—"
	}
	nums := make([]string, len(l.Probes))
	for i, n := range l.Probes {
		nums[i] = "#" + strconv.Itoa(n)
	}
	s := l.Label + " (probe " + strings.Join(nums, ", ") + ")"
	if !l.Confident {
		s += ", unclear"
	}
	return s
}

// searchCharts are a search stage's own charts: the probes in order, then
// each target's curve with its boundary.
func searchCharts(st *result.Stage, anchor string) []chartView {
	sr := st.Search
	if sr == nil {
		return nil
	}
	var out []chartView
	add := func(title, id string, c chart.Line) {
		out = append(out, lineView(id, title, st.Name, c))
	}
	id := anchor + "-probes"
	add("Probes in the order they ran", id, probeChart(id, st))
	for i, t := range sr.Targets {
		for j, name := range targetMetrics(&t) {
			m, ok := result.MetricNamed(name)
			if !ok {
				continue
			}
			id := anchor + "-target-" + strconv.Itoa(i) + "-" + strconv.Itoa(j)
			add("Target “"+t.Name+"”: "+m.Title+" against load", id, targetChart(id, st, &t, m, i))
		}
	}
	return out
}

// probeChart plots each probe's load against its number, with each target's
// capacity as a dashed line across: how the search closed in on each tier.
func probeChart(id string, st *result.Stage) chart.Line {
	sr := st.Search
	c := chart.Line{ID: id, X: chart.Axis{Label: "probe", Ints: true}, Y: chart.Axis{Label: loadLabel(st)}}
	s := chart.Series{Name: "probe load", Color: 0}
	for i := range st.Points {
		p := &st.Points[i]
		if p.Probe == 0 || p.Part() {
			continue
		}
		x, ok := loadX(st, p)
		if !ok {
			continue
		}
		s.Points = append(s.Points, chart.Point{X: float64(p.Probe), Y: chart.F(x), Tip: p.Label() + " · " + chart.Num(p.DurationS) + " s, " + strconv.Itoa(p.NRequests) + " requests"})
	}
	c.Series = append(c.Series, s)
	last := float64(max(1, sr.Probes))
	for i, t := range sr.Targets {
		if t.Capacity == nil {
			continue
		}
		tip := t.Name + " capacity " + loadName(sr, *t.Capacity)
		c.Series = append(c.Series, chart.Series{Name: tip, Color: 1 + i, Dashed: true,
			Points: []chart.Point{{X: 1, Y: t.Capacity, Tip: tip}, {X: last, Y: t.Capacity, Tip: tip}}})
	}
	return c
}

// targetChart plots a metric a target reads (one its decisions rest on)
// against load, the mean of the probes at each load joined in load order,
// with the highest passing and lowest failing loads marked.
func targetChart(id string, st *result.Stage, t *result.SearchTarget, m *result.Metric, color int) chart.Line {
	c := chart.Line{ID: id, X: chart.Axis{Label: loadLabel(st), Scale: chart.LogAuto, Ints: !isRate(st)}, Y: chart.Axis{Label: m.Header()}}
	if m.Percent() {
		c.Y.Max = 100
	}
	c.Series = append(c.Series, meanSeries(st, m, color))
	if l := t.Pass; l != nil {
		c.Marks = append(c.Marks, chart.Mark{X: l.Load, Label: "passed " + l.Label, Color: 3})
	}
	if l := t.Fail; l != nil {
		c.Marks = append(c.Marks, chart.Mark{X: l.Load, Label: "failed " + l.Label, Color: 2, Dashed: true})
	}
	return c
}

// targetMetrics are the metric names a target's decisions rest on.
func targetMetrics(t *result.SearchTarget) []string {
	var out []string
	for _, l := range []*result.SearchLoad{t.Pass, t.Fail} {
		if l == nil {
			continue
		}
		for _, e := range l.Estimates {
			if !slices.Contains(out, e.Metric) {
				out = append(out, e.Metric)
			}
		}
	}
	return out
}

// meanSeries is a metric's mean over each load's probes, in load order.
func meanSeries(st *result.Stage, m *result.Metric, color int) chart.Series {
	type acc struct {
		sum float64
		n   int
	}
	at := map[float64]*acc{}
	var xs []float64
	for i := range st.Points {
		p := &st.Points[i]
		x, ok := loadX(st, p)
		if !ok || p.Part() {
			continue
		}
		a := at[x]
		if a == nil {
			a = &acc{}
			at[x] = a
			xs = append(xs, x)
		}
		if v, ok := m.Value(p); ok {
			a.sum += v
			a.n++
		}
	}
	sort.Float64s(xs)
	s := chart.Series{Name: m.Name, Color: color}
	for _, x := range xs {
		a := at[x]
		label := result.LevelLabel(int(x), nil, 0, 0)
		if isRate(st) {
			label = result.LevelLabel(0, &x, 0, 0)
		}
		if a.n == 0 {
			s.Points = append(s.Points, chart.Point{X: x, Tip: label + " · " + m.Name + ": null"})
			continue
		}
		mean := a.sum / float64(a.n)
		tip := label + " · " + m.Name + ": " + chart.Num(result.Round(mean, 4)) + " (mean of " + strconv.Itoa(a.n) + ")"
		if m.Percent() {
			mean *= 100 // drawn as a percentage, as the axis says
		}
		s.Points = append(s.Points, chart.Point{X: x, Y: chart.F(mean), Tip: tip})
	}
	return s
}
