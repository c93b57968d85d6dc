// Package chart draws every chart Runner shows (the run report's, the
// board's and the history page's) as inline SVG: line and scatter charts on
// linear, log or time axes with round ticks, series with gaps for nulls,
// intervals, marks, shaded bands, stacked bars, hover text and a legend, in
// the page's light or dark colours (CSS, a file of this package). The
// charts fetch nothing and need no script: hover text is an SVG <title>
// (and, for a page with a script of its own, a data-tip attribute).
//
// Every piece of text a chart is given is escaped here; the result is
// trusted HTML.
package chart

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
)

// Geometry of a chart, in SVG user units. The SVG scales to its container
// through its viewBox, so these only fix the aspect ratio and the text size.
const (
	chartW  = 560.0
	chartH  = 300.0
	wideW   = 720.0 // a wide, short chart: a history over time
	wideH   = 200.0
	marginL = 64.0
	marginR = 18.0
	marginT = 14.0
	marginB = 46.0
	// Colors is how many series colours the CSS defines (.c0 … .c7);
	// a series' Color is taken modulo it.
	Colors = 8
)

// logSpan is the max/min ratio from which a LogAuto axis is drawn in log
// scale: concurrency sweeps are usually geometric (1, 2, 4, ... 64), and on
// a linear axis their low levels, where latency is most interesting, pile up
// at the left.
const logSpan = 8.0

// Scale is how an axis maps values.
type Scale int

// Scales of an axis.
const (
	// Linear starts at zero for non-negative data.
	Linear Scale = iota
	// LogAuto is log10 when the data span at least eightfold, else Linear.
	LogAuto
	// Log is log10 whenever the data span anything (latency distributions,
	// whose buckets are log-spaced: a 0.5 ms gap and a 2 s stall on one axis).
	Log
	// Time reads the values as Unix seconds (Unix) and ticks round times.
	Time
)

// Axis describes one axis.
type Axis struct {
	Label string
	Scale Scale
	// Ints keeps the ticks on integers (concurrency has no c=2.5).
	Ints bool
	// Ms says the values are latencies in ms: ticks read 0.1 ms, 10 ms, 1 s.
	Ms bool
	// Percent adds % to the tick labels (the values are percentages).
	Percent bool
	// Max, when > 0, fixes the top of the axis unless the data pass it
	// (percentages: 100).
	Max float64
}

// Point is one point of a series. A nil Y is a gap: the metric was null
// there, which must not be drawn as a zero.
type Point struct {
	X float64
	Y *float64
	// Lo and Hi, when both are set, are an interval drawn as a bar at X.
	Lo, Hi *float64
	// Tip is the hover text, plain (escaped on output).
	Tip string
	// Plain points are drawn on the line without a marker: a distribution's
	// empty buckets, whose many dots would hide the curve's shape.
	Plain bool
	// Class marks the point (drawn larger, styled by the class): "worse",
	// "better", "frontier".
	Class string
}

// Series is one line of a chart.
type Series struct {
	Name string
	// Key is the series' data-series attribute (a page script lights every
	// element of one key together); Name when empty.
	Key    string
	Color  int  // index into the palette
	Dashed bool // a baseline's curves are dashed
	Points []Point
}

// Mark is a vertical line across the plot at X, labelled at its top.
type Mark struct {
	X      float64
	Label  string
	Color  int
	Dashed bool
}

// Band is a shaded span [X0, X1], labelled in its hover text; Warn shades it
// in the warning colour.
type Band struct {
	X0, X1 float64
	Label  string
	Warn   bool
}

// XY is a position in data units.
type XY struct{ X, Y float64 }

// Line is a line (or scatter) chart; SVG draws it.
type Line struct {
	// ID is stable (data-chart: tests, deep links); Title names the chart
	// for assistive technology and its hover.
	ID, Title string
	X, Y      Axis
	Series    []Series
	// Marks are vertical lines at loads of note (a search's boundary).
	Marks []Mark
	// Bands shade spans of X (a level's steady window); Edges are X values
	// ticked along the plot's foot (slice boundaries).
	Bands []Band
	Edges []float64
	// Guide is a dashed line drawn under the series (a Pareto frontier).
	Guide []XY
	// TipAttr copies each point's hover text into a data-tip attribute, for
	// a page whose script shows its own tip.
	TipAttr bool
	// Wide draws a wide, short chart (a series over time).
	Wide bool
}

// size is the chart's viewBox and its plot area.
type size struct{ w, h, plotW, plotH float64 }

func (c Line) size() size {
	w, h := chartW, chartH
	if c.Wide {
		w, h = wideW, wideH
	}
	return size{w, h, w - marginL - marginR, h - marginT - marginB}
}

// ticks is how many value ticks a plot of this height carries.
func (z size) ticks() int { return max(3, int(z.plotH/35)) }

func esc(s string) string { return template.HTMLEscapeString(s) }

// Num formats a value for a tooltip or data attribute: the shortest
// representation, so a tooltip shows exactly the number in report.json.
func Num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// coord formats an SVG coordinate: two decimals are far below a pixel.
func coord(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) }

// F is a pointer to v, for a Point's Y.
func F(v float64) *float64 { return &v }

// svgOpen writes the <svg> element, its accessible title and the frame.
func svgOpen(b *strings.Builder, id, kind, title string, z size) {
	fmt.Fprintf(b, `<svg class="chart" data-chart="%s" data-kind="%s" viewBox="0 0 %s %s" role="img" aria-label="%s" xmlns="http://www.w3.org/2000/svg">`,
		esc(id), kind, Num(z.w), Num(z.h), esc(title))
	fmt.Fprintf(b, `<title>%s</title>`, esc(title))
}

// axes draws the grid, the tick labels and the axis titles.
func axes(b *strings.Builder, xs, ys scale, xLabel, yLabel string, cats bool, z size) {
	b.WriteString(`<g class="grid">`)
	for i, v := range ys.ticks {
		y := ys.at(v)
		fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s"/>`, coord(marginL), coord(y), coord(marginL+z.plotW), coord(y))
		fmt.Fprintf(b, `<text class="tick" x="%s" y="%s" text-anchor="end" dominant-baseline="middle">%s</text>`,
			coord(marginL-6), coord(y), esc(ys.tickText[i]))
	}
	if !cats {
		for i, v := range xs.ticks {
			x := xs.at(v)
			fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s"/>`, coord(x), coord(marginT), coord(x), coord(marginT+z.plotH))
			fmt.Fprintf(b, `<text class="tick" x="%s" y="%s" text-anchor="middle">%s</text>`,
				coord(x), coord(marginT+z.plotH+16), esc(xs.tickText[i]))
		}
	}
	b.WriteString(`</g>`)
	fmt.Fprintf(b, `<rect class="frame" x="%s" y="%s" width="%s" height="%s"/>`, coord(marginL), coord(marginT), coord(z.plotW), coord(z.plotH))
	x := marginL + z.plotW/2
	if xs.log {
		xLabel += " (log scale)"
	}
	fmt.Fprintf(b, `<text class="axis-label" x="%s" y="%s" text-anchor="middle">%s</text>`, coord(x), coord(z.h-6), esc(xLabel))
	y := marginT + z.plotH/2
	fmt.Fprintf(b, `<text class="axis-label" x="14" y="%s" text-anchor="middle" transform="rotate(-90 14 %s)">%s</text>`,
		coord(y), coord(y), esc(yLabel))
}

// noData is drawn in place of a chart with nothing to plot, so the reader sees
// that the metric was null rather than a blank box.
func noData(id, kind, title string, z size) template.HTML {
	var b strings.Builder
	svgOpen(&b, id, kind, title, z)
	fmt.Fprintf(&b, `<rect class="frame" x="%s" y="%s" width="%s" height="%s"/>`, coord(marginL), coord(marginT), coord(z.plotW), coord(z.plotH))
	fmt.Fprintf(&b, `<text class="nodata" x="%s" y="%s" text-anchor="middle">no data</text></svg>`,
		coord(marginL+z.plotW/2), coord(marginT+z.plotH/2))
	return template.HTML(b.String())
}

// domain is every X and Y value the chart must show.
func (c Line) domain() (xv, yv []float64) {
	// The X domain spans every point, null or not, so all load charts of a
	// stage share one axis even when a metric is missing at the ends.
	for _, m := range c.Marks {
		xv = append(xv, m.X)
	}
	for _, bd := range c.Bands {
		xv = append(xv, bd.X0, bd.X1)
	}
	xv = append(xv, c.Edges...)
	for _, g := range c.Guide {
		xv, yv = append(xv, g.X), append(yv, g.Y)
	}
	for _, s := range c.Series {
		for _, p := range s.Points {
			if !finite(p.X) {
				continue
			}
			xv = append(xv, p.X)
			if p.Y != nil && finite(*p.Y) {
				yv = append(yv, *p.Y)
				if p.Lo != nil && p.Hi != nil {
					yv = append(yv, *p.Lo, *p.Hi)
				}
			}
		}
	}
	return xv, yv
}

// scales are the chart's two scales over its data.
func (c Line) scales(xmin, xmax, ymin, ymax float64, z size) (xs, ys scale) {
	switch {
	case c.X.Scale == Time:
		xs = timeScale(xmin, xmax, 6, marginL, marginL+z.plotW)
	case xmin > 0 && (c.X.Scale == LogAuto && xmax/xmin >= logSpan || c.X.Scale == Log && xmax > xmin):
		xs = logScale(xmin, xmax, c.X.Ints, marginL, marginL+z.plotW)
	default:
		xs = linearScale(xmin, xmax, 6, c.X.Ints, marginL, marginL+z.plotW)
	}
	if c.X.Ms {
		for i, v := range xs.ticks {
			xs.tickText[i] = MsText(v)
		}
	}
	if c.Y.Max > 0 {
		ymax = math.Max(ymax, c.Y.Max)
	}
	ys = linearScale(ymin, ymax, z.ticks(), c.Y.Ints, marginT+z.plotH, marginT)
	if c.Y.Max > 0 && ymax <= c.Y.Max && ymin >= 0 {
		ys = fixedScale(0, c.Y.Max, 5, marginT+z.plotH, marginT)
	}
	if c.Y.Percent {
		for i := range ys.tickText {
			ys.tickText[i] += "%"
		}
	}
	return xs, ys
}

// SVG renders the line chart. Each run of consecutive non-null points is one
// polyline (a null splits the line: a gap, not a dip to zero); every non-null
// point gets a marker with a <title> tooltip and data-x/data-y attributes.
func (c Line) SVG() template.HTML {
	z := c.size()
	xv, yv := c.domain()
	ymin, ymax, ok := extent(yv)
	if !ok {
		return noData(c.ID, "line", c.Title, z)
	}
	xmin, xmax, _ := extent(xv)
	xs, ys := c.scales(xmin, xmax, ymin, ymax, z)

	var b strings.Builder
	svgOpen(&b, c.ID, "line", c.Title, z)
	axes(&b, xs, ys, c.X.Label, c.Y.Label, false, z)
	c.bands(&b, xs, z)
	c.marks(&b, xs, z)
	if len(c.Guide) > 1 {
		pts := make([]string, len(c.Guide))
		for i, g := range c.Guide {
			pts[i] = coord(xs.at(g.X)) + "," + coord(ys.at(g.Y))
		}
		fmt.Fprintf(&b, `<polyline class="guide" points="%s"/>`, strings.Join(pts, " "))
	}
	for _, s := range c.Series {
		c.series(&b, s, xs, ys)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// drawable reports whether a point has a place on the chart.
func drawable(p Point, xs scale) bool {
	return p.Y != nil && finite(*p.Y) && finite(p.X) && (!xs.log || p.X > 0)
}

// series draws one series: its intervals, its line, its markers.
func (c Line) series(b *strings.Builder, s Series, xs, ys scale) {
	cls := "series c" + strconv.Itoa(s.Color%Colors)
	if s.Dashed {
		cls += " dashed"
	}
	key := s.Key
	if key == "" {
		key = s.Name
	}
	fmt.Fprintf(b, `<g class="%s" data-series="%s" data-baseline="%t">`, cls, esc(key), s.Dashed)
	for _, p := range s.Points {
		if drawable(p, xs) && p.Lo != nil && p.Hi != nil && finite(*p.Lo) && finite(*p.Hi) {
			x := coord(xs.at(p.X))
			fmt.Fprintf(b, `<line class="interval" x1="%s" y1="%s" x2="%s" y2="%s" data-lo="%s" data-hi="%s"/>`,
				x, coord(ys.at(*p.Lo)), x, coord(ys.at(*p.Hi)), Num(*p.Lo), Num(*p.Hi))
		}
	}
	var seg []string
	flush := func() {
		if len(seg) > 1 {
			fmt.Fprintf(b, `<polyline points="%s"/>`, strings.Join(seg, " "))
		}
		seg = seg[:0]
	}
	for _, p := range s.Points {
		if !drawable(p, xs) {
			flush()
			continue
		}
		seg = append(seg, coord(xs.at(p.X))+","+coord(ys.at(*p.Y)))
	}
	flush()
	for _, p := range s.Points {
		if !drawable(p, xs) || p.Plain {
			continue
		}
		r, cls := "3.5", ""
		if p.Class != "" {
			r, cls = "5.5", ` class="`+esc(p.Class)+`"`
		}
		tip := ""
		if c.TipAttr {
			tip = ` data-tip="` + esc(p.Tip) + `"`
		}
		fmt.Fprintf(b, `<circle%s cx="%s" cy="%s" r="%s" data-x="%s" data-y="%s"%s><title>%s</title></circle>`,
			cls, coord(xs.at(p.X)), coord(ys.at(*p.Y)), r, Num(p.X), Num(*p.Y), tip, esc(p.Tip))
	}
	b.WriteString(`</g>`)
}

// marks draws the chart's vertical marks, each labelled at the top of the
// plot (alternately a line lower, so two close marks stay legible; to the
// left of a mark near the right edge, so the label stays inside).
func (c Line) marks(b *strings.Builder, xs scale, z size) {
	for i, m := range c.Marks {
		if !finite(m.X) || (xs.log && m.X <= 0) {
			continue
		}
		x := xs.at(m.X)
		cls := "mark c" + strconv.Itoa(m.Color%Colors)
		if m.Dashed {
			cls += " dashed"
		}
		fmt.Fprintf(b, `<g class="%s" data-mark="%s" data-x="%s"><line x1="%s" y1="%s" x2="%s" y2="%s"/>`,
			cls, esc(m.Label), Num(m.X), coord(x), coord(marginT), coord(x), coord(marginT+z.plotH))
		tx, anchor := x+4, "start"
		if x > marginL+z.plotW*0.7 { // near the right edge: label to the left
			tx, anchor = x-4, "end"
		}
		fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="%s">%s</text></g>`, coord(tx), coord(marginT+12+float64(i%2)*13), anchor, esc(m.Label))
	}
}

// bands draws the chart's shaded spans and its edge ticks. The colours are
// inline styles on the page's own variables (dark mode follows), so a page
// without bands carries no extra CSS.
func (c Line) bands(b *strings.Builder, xs scale, z size) {
	for _, bd := range c.Bands {
		if !finite(bd.X0) || !finite(bd.X1) || bd.X1 <= bd.X0 || (xs.log && bd.X0 <= 0) {
			continue
		}
		x0, x1 := xs.at(bd.X0), xs.at(bd.X1)
		fill, kind := "var(--pass)", "steady"
		if bd.Warn {
			fill, kind = "var(--warn)", "unsteady"
		}
		fmt.Fprintf(b, `<rect class="band" data-band="%s" data-x0="%s" data-x1="%s" x="%s" y="%s" width="%s" height="%s" style="fill:%s;fill-opacity:.13"><title>%s</title></rect>`,
			kind, Num(bd.X0), Num(bd.X1), coord(x0), coord(marginT), coord(x1-x0), coord(z.plotH), fill, esc(bd.Label))
	}
	if len(c.Edges) == 0 {
		return
	}
	b.WriteString(`<g class="edges" style="stroke:var(--frame);stroke-width:1">`)
	for _, e := range c.Edges {
		if !finite(e) || (xs.log && e <= 0) {
			continue
		}
		x := xs.at(e)
		fmt.Fprintf(b, `<line data-edge="%s" x1="%s" y1="%s" x2="%s" y2="%s"/>`, Num(e), coord(x), coord(marginT+z.plotH-6), coord(x), coord(marginT+z.plotH))
	}
	b.WriteString(`</g>`)
}

// MsText is a latency in ms as a tick reads it, in the unit that keeps it
// short: 0.1 ms, 250 ms, 1.5 s, 2 min.
func MsText(ms float64) string {
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', 3, 64) }
	switch a := math.Abs(ms); {
	case a < 1000:
		return g(ms) + " ms"
	case a < 60_000:
		return g(ms/1000) + " s"
	case a < 3_600_000:
		return g(ms/60_000) + " min"
	}
	return g(ms/3_600_000) + " h"
}
