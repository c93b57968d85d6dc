package history

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/runnerbench/runner/internal/mdtext"
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

// Summary is the history's first line.
func (h *History) Summary(plan string) string {
	if len(h.Runs) == 0 {
		return fmt.Sprintf("history of plan %q: no runs", plan)
	}
	return fmt.Sprintf("history of plan %q: %d runs, %s … %s; %d series judged, %d windows in all (%s for all together, %s each); each window of %d runs against up to %d before it",
		plan, len(h.Runs), day(h.Runs[0].StartedAt), day(h.Runs[len(h.Runs)-1].StartedAt), h.Judged, h.Windows,
		pct(h.Confidence), pct(h.Each), h.Window, h.Before)
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
// run; a run the series has no value in is a space.
func (h *History) Sparkline(se *Series) string {
	lo, hi := math.Inf(1), math.Inf(-1)
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

// marks is a line under the sparkline: ! under a run where the metric got
// worse, + where better.
func (h *History) marks(se *Series) string {
	line := []rune(strings.Repeat(" ", len(h.Runs)))
	for _, p := range se.Points {
		if p.Change {
			line[p.Run] = map[bool]rune{true: '!', false: '+'}[p.Verdict == "worse"]
		}
	}
	return strings.TrimRight(string(line), " ")
}

// Describe is a change in words: "worse +29.8% [+22.0%, +38.1%] since
// 2030-03-11 00:00 (3 runs against 10)".
func (h *History) Describe(p Point) string {
	s := p.Verdict
	if p.Rel != nil {
		s += fmt.Sprintf(" %+.1f%%", *p.Rel*100)
	}
	if p.Interval != nil {
		s += fmt.Sprintf(" [%+.1f%%, %+.1f%%]", p.Interval.Lo*100, p.Interval.Hi*100)
	}
	return s + fmt.Sprintf(" since %s (%d runs against %d)", h.RunName(p.Since), h.Window, p.Base)
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

// latest is the last point of a series, and the last change in it.
func latest(se *Series) (last Point, change *Point) {
	if len(se.Points) == 0 {
		return Point{}, nil
	}
	for i := range se.Points {
		if se.Points[i].Change {
			change = &se.Points[i]
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
		if change != nil {
			line += "  " + h.Describe(*change)
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
// README): one row per series, its changes listed under it.
func (h *History) Markdown(w io.Writer, plan string, want []string) error {
	fmt.Fprintf(w, "### %s\n\n", md(h.Summary(plan)))
	for _, n := range h.Notes {
		fmt.Fprintf(w, "> %s\n\n", md(n))
	}
	fmt.Fprintln(w, "| stage | level | metric | trend | last | last change |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | ---: | --- |")
	for _, se := range h.Shown(want) {
		last, change := latest(se)
		c := ""
		if change != nil {
			c = "**" + md(h.Describe(*change)) + "**"
		}
		fmt.Fprintf(w, "| %s | %s | `%s` | `%s` | %s | %s |\n", md(se.Stage), md(se.LevelName()), se.Metric, h.Sparkline(se), value(se.Metric, last.Value), c)
	}
	return nil
}

// md escapes text for a Markdown table cell.
func md(s string) string { return mdtext.Text(s) }

// HTML writes a self-contained page: per series an SVG chart of the value
// over the runs, each judged window's interval as a bar, changes marked.
func (h *History) HTML(w io.Writer, plan string, want []string) error {
	var charts []chart
	for _, se := range h.Shown(want) {
		charts = append(charts, h.chart(se))
	}
	return page.Execute(w, map[string]any{"Title": "Runner history: " + plan, "Summary": h.Summary(plan), "Notes": h.Notes, "Charts": charts})
}

type chart struct {
	Title  string
	Line   string
	Dots   []dot
	Bars   []bar
	YTicks []axisTick
	XTicks []axisTick
	// Left, Right and Bottom are the plot area's edges.
	// TickEnd is where a date's tick mark ends, below the plot.
	Left, Right, Bottom, TickEnd float64
}

type dot struct {
	X, Y float64
	Tip  string
	Mark string // "", worse, better
}

type bar struct{ X, Y1, Y2 float64 }

// axisTick is a tick at its place on the chart.
type axisTick struct {
	At   float64
	Text string
}

// The chart's size (the SVG's viewBox) and its plot area's margins: the
// left one holds the value labels, the bottom one the dates.
const (
	chartW, chartH                = 720.0, 200.0
	padL, padR, padTop, padBottom = 58.0, 36.0, 10.0, 30.0
	valueTickCount, timeTickCount = 4, 6
)

// chart draws a series against time: round value ticks (the range widened
// to them), dates on round days, weeks or months, each judged window's
// interval as a bar at its newest run, the changes marked.
func (h *History) chart(se *Series) chart {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range se.Points {
		lo, hi = math.Min(lo, p.Value), math.Max(hi, p.Value)
		if p.Low != nil && p.High != nil && p.Verdict != "" {
			lo, hi = math.Min(lo, *p.Low), math.Max(hi, *p.High)
		}
	}
	percent := false
	if m := metricNamed(se.Metric); m != nil {
		percent = m.Percent()
	}
	ticks, lo, hi := valueTicks(lo, hi, valueTickCount, percent)
	t0, t1 := h.Runs[0].StartedAt, h.Runs[len(h.Runs)-1].StartedAt
	span := unix(t1) - unix(t0)
	xAt := func(sec float64) float64 {
		if span <= 0 {
			return (padL + chartW - padR) / 2
		}
		return padL + (sec-unix(t0))/span*(chartW-padL-padR)
	}
	x := func(run int) float64 { return xAt(unix(h.Runs[run].StartedAt)) }
	y := func(v float64) float64 { return chartH - padBottom - (v-lo)/(hi-lo)*(chartH-padTop-padBottom) }
	c := chart{Title: se.Stage + " " + se.LevelName() + " " + se.Metric, Left: padL, Right: chartW - padR, Bottom: chartH - padBottom, TickEnd: chartH - padBottom + 5}
	for _, t := range ticks {
		c.YTicks = append(c.YTicks, axisTick{At: round1(y(t.At)), Text: t.Text})
	}
	for _, t := range timeTicks(t0, t1, timeTickCount) {
		c.XTicks = append(c.XTicks, axisTick{At: round1(xAt(t.At)), Text: t.Text})
	}
	var pts []string
	for _, p := range se.Points {
		px, py := round1(x(p.Run)), round1(y(p.Value))
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", px, py))
		d := dot{X: px, Y: py, Tip: h.RunName(p.Run) + ": " + value(se.Metric, p.Value)}
		if p.Verdict != "" {
			d.Tip += " · " + h.Describe(p)
		}
		if p.Change {
			d.Mark = p.Verdict
		}
		c.Dots = append(c.Dots, d)
		if p.Low != nil && p.High != nil && p.Verdict != "" {
			c.Bars = append(c.Bars, bar{X: px, Y1: round1(y(*p.Low)), Y2: round1(y(*p.High))})
		}
	}
	c.Line = strings.Join(pts, " ")
	return c
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }

var page = template.Must(template.New("history").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>{{.Title}}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:1.5rem auto;max-width:760px;padding:0 1rem;color:#222;background:#fff}
h1{font-size:1.2rem}svg{width:100%;height:auto;display:block}figure{margin:1.2rem 0}
figcaption{font-weight:600}.line{fill:none;stroke:#36c;stroke-width:1.5}.bar{stroke:#999;stroke-width:3;opacity:.5}
.dot{fill:#36c}.axis{font-size:11px;fill:#666}.grid{stroke:#ddd;stroke-width:1}
.frame{stroke:#999;stroke-width:1}
@media (prefers-color-scheme:dark){body{background:#111;color:#ddd}.axis{fill:#aaa}.grid{stroke:#333}.frame{stroke:#777}.line{stroke:#6af}.dot{fill:#6af}}
.dot.worse{fill:#d33}.dot.better{fill:#2a2}
</style></head><body>
<h1>{{.Title}}</h1><p>{{.Summary}}</p>
{{range .Notes}}<p>{{.}}</p>
{{end}}<p>Each grey bar is a judged window's interval for its value, drawn at the window's newest run (the runs as replicates, and every request where the runs' values called a change); red and green dots mark the runs where a metric got worse or better. Times are UTC.</p>
{{range .Charts}}<figure><figcaption>{{.Title}}</figcaption>
<svg viewBox="0 0 720 200" role="img" aria-label="{{.Title}}">
{{$c := .}}{{range .YTicks}}<line class="grid" x1="{{$c.Left}}" x2="{{$c.Right}}" y1="{{.At}}" y2="{{.At}}"/><text class="axis" x="{{$c.Left}}" dx="-6" y="{{.At}}" dy="4" text-anchor="end">{{.Text}}</text>
{{end}}<line class="frame" x1="{{.Left}}" x2="{{.Right}}" y1="{{.Bottom}}" y2="{{.Bottom}}"/>
{{range .XTicks}}<line class="frame" x1="{{.At}}" x2="{{.At}}" y1="{{$c.Bottom}}" y2="{{$c.TickEnd}}"/><text class="axis" x="{{.At}}" y="{{$c.Bottom}}" dy="18" text-anchor="middle">{{.Text}}</text>
{{end}}{{range .Bars}}<line class="bar" x1="{{.X}}" x2="{{.X}}" y1="{{.Y1}}" y2="{{.Y2}}"/>{{end}}
<polyline class="line" points="{{.Line}}"/>
{{range .Dots}}<circle class="dot {{.Mark}}" cx="{{.X}}" cy="{{.Y}}" r="{{if .Mark}}5{{else}}3{{end}}"><title>{{.Tip}}</title></circle>{{end}}
</svg></figure>{{end}}
</body></html>
`))
