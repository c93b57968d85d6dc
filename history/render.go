package history

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/runnerbench/runner/internal/mdtext"
	"github.com/runnerbench/runner/internal/render/chart"
	"github.com/runnerbench/runner/internal/render/mdtable"
	"github.com/runnerbench/runner/result"
)

// RunName names a run in a history: its start (UTC, to the minute) and,
// when it has one, its commit label.
func (h *History) RunName(i int) string {
	r := h.Runs[i]
	name := r.StartedAt.UTC().Format("2006-01-02 15:04")
	if c := r.Labels["commit"]; c != "" {
		name += " " + c
	}
	return name
}

// Summary is the history's first line. It says how many windows were
// judged only when some were: with too few runs it says how many a
// judgement needs.
func (h *History) Summary(plan string) string {
	if len(h.Runs) == 0 {
		return fmt.Sprintf("history of plan %q: no runs", plan)
	}
	head := fmt.Sprintf("history of plan %q: %d runs, %s … %s", plan, len(h.Runs), day(h.Runs[0].StartedAt), day(h.Runs[len(h.Runs)-1].StartedAt))
	need := h.Window + MinBefore
	switch {
	case h.Judged == 0:
		return head + "; no series is judged (only a server metric with a better direction and an interval is)"
	case h.Windows == 0:
		return fmt.Sprintf("%s; nothing judged yet: a window of %d runs is judged against at least %d runs before it, so a series needs %d runs it can compare (the most any of the %d judgeable series has is %d)",
			head, h.Window, MinBefore, need, h.Judged, h.mostJudgeable())
	}
	return fmt.Sprintf("%s; %d series judged, %d windows in all (%s for all together, %s each); each window of %d runs against up to %d before it",
		head, h.Judged, h.Windows, pct(h.Confidence), pct(h.Each), h.Window, h.Before)
}

// mostJudgeable is the most judgeable runs any judged series has.
func (h *History) mostJudgeable() int {
	most := 0
	for i := range h.Series {
		n := 0
		for _, p := range h.Series[i].Points {
			if p.Judgeable {
				n++
			}
		}
		if h.Series[i].Judged {
			most = max(most, n)
		}
	}
	return most
}

func day(t time.Time) string { return t.UTC().Format("2006-01-02") }

// pct writes a confidence as a percentage with its nines: 95%, 99.81%,
// 99.9999% (not 100%).
func pct(f float64) string {
	d := 1
	if miss := 1 - f; miss > 0 && miss < 1 {
		d = max(1, int(math.Ceil(-math.Log10(miss)))-1)
	}
	s := strconv.FormatFloat(f*100, 'f', d, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s + "%"
}

var sparks = []rune("▁▂▃▄▅▆▇█")

// Sparkline is the series' values as one line of block characters, one a
// run; a run the series has no value in is a space. Heights are read from
// zero, as the page's axes are, so noise of 0.1% is no step.
func (h *History) Sparkline(se *Series) string {
	lo, hi := 0.0, math.Inf(-1)
	for _, p := range se.Points {
		lo, hi = math.Min(lo, p.Value), math.Max(hi, p.Value)
	}
	line := []rune(strings.Repeat(" ", len(h.Runs)))
	for _, p := range se.Points {
		k := 0
		if hi > lo {
			k = int(math.Round((p.Value - lo) / (hi - lo) * float64(len(sparks)-1)))
		}
		line[p.Run] = sparks[k]
	}
	return string(line)
}

// marks is a line under the sparkline: ! under the run where the metric
// began to get worse, + where better.
func (h *History) marks(se *Series) string {
	line := []rune(strings.Repeat(" ", len(h.Runs)))
	for i, p := range se.Points {
		if p.Change {
			line[h.Began(se, i)] = map[bool]rune{true: '!', false: '+'}[p.Verdict == "worse"]
		}
	}
	return strings.TrimRight(string(line), " ")
}

// Describe is a window's verdict in words: "worse +29.8% [+22.0%, +38.1%]
// since 2030-03-11 00:00 (3 runs against 10)".
func (h *History) Describe(p Point) string {
	return h.verdictText(p) + fmt.Sprintf(" since %s (%d runs against %d)", h.RunName(p.Since), h.Window, p.Base)
}

func (h *History) verdictText(p Point) string {
	s := p.Verdict
	if p.Rel != nil {
		s += fmt.Sprintf(" %+.1f%%", *p.Rel*100)
	}
	if p.Interval != nil {
		s += fmt.Sprintf(" [%+.1f%%, %+.1f%%]", p.Interval.Lo*100, p.Interval.Hi*100)
	}
	return s
}

// DescribeChange is the change marked at se.Points[i] in words: where it
// began, and the window that found it: "worse +29.8% [+22.0%, +38.1%] from
// 2030-03-21 02:00 (found by the 3 runs to 2030-03-23 02:00 against the 10
// before them)".
func (h *History) DescribeChange(se *Series, i int) string {
	p := se.Points[i]
	return h.verdictText(p) + fmt.Sprintf(" from %s (found by the %d runs to %s against the %d before them)",
		h.RunName(h.Began(se, i)), h.Window, h.RunName(p.Run), p.Base)
}

// Shown are the series to show: the judged ones, and any of want.
func (h *History) Shown(want []string) []*Series {
	var out []*Series
	for i := range h.Series {
		se := &h.Series[i]
		if se.Judged || contains(want, se.Metric) {
			out = append(out, se)
		}
	}
	return out
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// latest is the last point of a series, and the index of its last change
// (-1: none).
func latest(se *Series) (last Point, change int) {
	change = -1
	if len(se.Points) == 0 {
		return Point{}, change
	}
	for i := range se.Points {
		if se.Points[i].Change {
			change = i
		}
	}
	return se.Points[len(se.Points)-1], change
}

// LevelName names the series' level: its label, and what tells its runs
// apart from the stage's other series ("c=4 · engine=llama").
func (se *Series) LevelName() string {
	if se.Distinct == "" {
		return se.Label
	}
	return se.Label + " · " + se.Distinct
}

// Text writes the terminal history: per level, a sparkline per metric
// with its latest value and its last change.
func (h *History) Text(w io.Writer, plan string, want []string) error {
	fmt.Fprintln(w, h.Summary(plan))
	for _, n := range h.Notes {
		fmt.Fprintln(w, "note: "+n)
	}
	level := ""
	for _, se := range h.Shown(want) {
		if k := se.Stage + " " + se.LevelName(); k != level {
			level = k
			fmt.Fprintf(w, "\n%s\n", k)
		}
		last, change := latest(se)
		line := fmt.Sprintf("  %-26s %s  last %s", se.Metric, h.Sparkline(se), value(se.Metric, last.Value))
		if change >= 0 {
			line += "  " + h.DescribeChange(se, change)
		}
		fmt.Fprintln(w, line)
		if m := h.marks(se); m != "" {
			fmt.Fprintf(w, "  %-26s %s\n", "", m)
		}
	}
	return nil
}

func value(metric string, v float64) string {
	if m := metricNamed(metric); m != nil && m.Percent() {
		return fmt.Sprintf("%.2f%%", v*100)
	}
	return fmt.Sprintf("%.6g", v)
}

// Markdown writes the history as a Markdown table (a pull request, a
// README): one row per series, its last change beside it.
func (h *History) Markdown(w io.Writer, plan string, want []string) error {
	var rows [][]string
	for _, se := range h.Shown(want) {
		last, change := latest(se)
		c := ""
		if change >= 0 {
			c = "**" + mdtext.Text(h.DescribeChange(se, change)) + "**"
		}
		rows = append(rows, []string{mdtext.Text(se.Stage), mdtext.Text(se.LevelName()), mdtext.Code(se.Metric), mdtext.Code(h.Sparkline(se)), value(se.Metric, last.Value), c})
	}
	fmt.Fprintf(w, "### %s\n\n", mdtext.Text(h.Summary(plan)))
	for _, n := range h.Notes {
		fmt.Fprintf(w, "> %s\n\n", mdtext.Text(n))
	}
	return mdtable.Write(w, []mdtable.Column{{Head: "stage"}, {Head: "level"}, {Head: "metric"}, {Head: "trend"}, {Head: "last", Right: true}, {Head: "last change"}}, rows)
}

//go:embed page.html.tmpl
var pageSrc string

var page = template.Must(template.New("history").Parse(pageSrc))

// HTML writes a self-contained page: per series a chart of the value over
// the runs (the chart kit's), each judged window's interval as a bar, the
// runs where changes began marked.
func (h *History) HTML(w io.Writer, plan string, want []string) error {
	type fig struct {
		Title string
		SVG   template.HTML
	}
	var figs []fig
	for i, se := range h.Shown(want) {
		c := h.chart(se, i)
		figs = append(figs, fig{Title: c.Title, SVG: c.SVG()})
	}
	return page.Execute(w, map[string]any{"Title": "Runner history: " + plan, "Summary": h.Summary(plan), "Notes": h.Notes, "Charts": figs, "CSS": chart.CSS()})
}

// chart draws a series against time. Its value axis starts at zero (a
// height is the value: a change of 0.1% cannot fill the chart); each judged
// window's interval is a bar at its newest run, drawn from zero where a
// quantity that is never negative has an interval reaching below it (the
// hover gives the interval as computed); the run where each change began
// is marked in the change's colour.
func (h *History) chart(se *Series, n int) chart.Line {
	m := metricNamed(se.Metric)
	percent := m != nil && m.Percent()
	scaleOf := 1.0
	if percent {
		scaleOf = 100
	}
	c := chart.Line{ID: fmt.Sprintf("series-%d", n), Title: se.Stage + " " + se.LevelName() + " " + se.Metric, Wide: true,
		X: chart.Axis{Label: "run (UTC)", Scale: chart.Time}, Y: chart.Axis{Label: yLabel(se.Metric, m), Percent: percent}}
	began := map[int]string{} // run → verdict of the change that began there
	for i, p := range se.Points {
		if p.Change {
			began[h.Began(se, i)] = p.Verdict
		}
	}
	nonNeg := nonNegative(se, m)
	s := chart.Series{Name: se.Metric}
	for i, p := range se.Points {
		pt := chart.Point{X: chart.Unix(h.Runs[p.Run].StartedAt), Y: chart.F(p.Value * scaleOf), Tip: h.RunName(p.Run) + ": " + value(se.Metric, p.Value)}
		if p.Verdict != "" {
			pt.Tip += " · window to here: " + h.Describe(p)
		}
		if p.Low != nil && p.High != nil && p.Verdict != "" {
			lo, hi := *p.Low, *p.High
			pt.Tip += " · its value's interval " + value(se.Metric, lo) + " to " + value(se.Metric, hi)
			if nonNeg && lo < 0 {
				lo = 0
				pt.Tip += " (drawn from 0: the quantity is never negative)"
			}
			pt.Lo, pt.Hi = chart.F(lo*scaleOf), chart.F(hi*scaleOf)
		}
		if p.Change {
			pt.Tip += " · the change was found here: " + h.DescribeChange(se, i)
		}
		if v, ok := began[p.Run]; ok {
			pt.Class = v
			pt.Tip += " · " + v + " from this run"
		}
		s.Points = append(s.Points, pt)
	}
	c.Series = []chart.Series{s}
	return c
}

// yLabel is the value axis' title: the metric's title and unit.
func yLabel(name string, m *result.Metric) string {
	if m == nil {
		return name
	}
	switch {
	case m.Percent():
		return m.Title + " (%)"
	case m.Unit != "" && m.Unit != "share" && !strings.EqualFold(m.Unit, m.Title):
		return m.Title + " (" + m.Unit + ")"
	}
	return m.Title
}

// nonNegative reports whether the series is of a quantity that is never
// negative (a latency, a rate, a count, a share) and holds no negative value.
func nonNegative(se *Series, m *result.Metric) bool {
	if m == nil {
		return false
	}
	switch m.Unit {
	case "ms", "s", "tok/s", "req/s", "tokens", "requests", "share", "%":
	default:
		return false
	}
	if strings.Contains(m.Name, "_gap_") || strings.Contains(m.Name, "overhead") {
		return false // a difference of two times
	}
	for _, p := range se.Points {
		if p.Value < 0 {
			return false
		}
	}
	return true
}
