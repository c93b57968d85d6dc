package html

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
)

// Geometry of every chart, in SVG user units. The SVG scales to its container
// through its viewBox, so these only fix the aspect ratio and the text size.
const (
	chartW     = 560.0
	chartH     = 300.0
	marginL    = 64.0
	marginR    = 18.0
	marginT    = 14.0
	marginB    = 46.0
	plotW      = chartW - marginL - marginR
	plotH      = chartH - marginT - marginB
	paletteLen = 8 // series colours --c0..--c7 in the page CSS
)

// logSpan is the max/min ratio from which a load axis is drawn in log scale:
// concurrency sweeps are usually geometric (1, 2, 4, ... 64), and on a linear
// axis their low levels, where latency is most interesting, pile up at the left.
const logSpan = 8.0

// xy is one data point. A nil Y is a gap: the metric was null at that level,
// which must not be drawn as a zero.
type xy struct {
	X   float64
	Y   *float64
	Tip string // tooltip text, plain (escaped on output)
	// Plain points are drawn on the line without a marker: a distribution's
	// empty buckets, whose many dots would hide the curve's shape.
	Plain bool
}

// series is one line on a chart.
type series struct {
	Name   string
	Color  int  // index into the palette
	Dashed bool // baseline curves are dashed
	Points []xy
}

// lineChart describes a line chart; svg renders it.
type lineChart struct {
	ID     string // stable id, used for data-chart (tests, deep links)
	XLabel string
	YLabel string
	// XLogAuto draws the X axis in log scale when the data spans >= logSpan;
	// XLog whenever it spans anything (latency distributions, whose bars
	// are log-spaced: a 0.5 ms gap and a 2 s stall on one axis).
	XLogAuto bool
	XLog     bool
	// XMs says X is a latency in ms: ticks read 0.1 ms, 10 ms, 1 s, 2 min.
	XMs bool
	// XIntTicks keeps X ticks on integers (concurrency has no c=2.5).
	XIntTicks bool
	// YMax, when > 0, fixes the top of the Y axis (percentages).
	YMax   float64
	Series []series
	// Marks are vertical lines at loads of note (a search's boundary).
	Marks []mark
	// Bands shade spans of X (a level's steady window over time); Edges
	// are X values ticked along the plot's foot (slice boundaries).
	Bands []band
	Edges []float64
}

// band is a shaded span [X0, X1] of a line chart, labelled in its tooltip;
// Warn shades it in the warning colour (a level found not steady).
type band struct {
	X0, X1 float64
	Label  string
	Warn   bool
}

// mark is a vertical line across a line chart at X, labelled at its top.
type mark struct {
	X      float64
	Label  string
	Color  int
	Dashed bool
}

// barChart is a stacked bar chart over categories (load levels).
type barChart struct {
	ID         string
	XLabel     string
	YLabel     string
	Categories []string
	Stacks     []barStack
}

// barStack is one colour of a stacked bar chart: one value per category.
type barStack struct {
	Name   string
	Color  int
	Values []float64
	Tips   []string
}

// esc escapes text for an SVG text node or attribute value. The SVG is built
// by hand (html/template cannot see inside template.HTML), and plan, stage
// and level names and error messages are user data.
func esc(s string) string { return template.HTMLEscapeString(s) }

// num formats a metric value for a tooltip or data attribute: the shortest
// representation, so a tooltip shows exactly the number in report.json.
func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// coord formats an SVG coordinate: two decimals are far below a pixel.
func coord(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) }

// scale maps data values onto a pixel range, linearly or in log10.
type scale struct {
	lo, hi   float64 // data domain
	p0, p1   float64 // pixel range
	log      bool
	ticks    []float64
	tickText []string
}

func (s scale) at(v float64) float64 {
	if s.log {
		lv, llo, lhi := math.Log10(v), math.Log10(s.lo), math.Log10(s.hi)
		return s.p0 + (lv-llo)/(lhi-llo)*(s.p1-s.p0)
	}
	return s.p0 + (v-s.lo)/(s.hi-s.lo)*(s.p1-s.p0)
}

// niceNum rounds x to 1, 2, 5 or 10 times a power of ten (Heckbert, "Nice
// numbers for graph labels", Graphics Gems 1990): round picks the nearest,
// otherwise the smallest nice number >= x.
func niceNum(x float64, round bool) float64 {
	if x <= 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return 1
	}
	exp := math.Floor(math.Log10(x))
	f := x / math.Pow(10, exp)
	var nf float64
	switch {
	case round && f < 1.5:
		nf = 1
	case round && f < 3:
		nf = 2
	case round && f < 7:
		nf = 5
	case round:
		nf = 10
	case f <= 1:
		nf = 1
	case f <= 2:
		nf = 2
	case f <= 5:
		nf = 5
	default:
		nf = 10
	}
	return nf * math.Pow(10, exp)
}

// linearScale builds a linear scale over [min, max] with about n nice ticks.
// A range of non-negative values starts at zero so bar heights and latency
// levels are read against a true origin.
func linearScale(min, max float64, n int, intTicks bool, p0, p1 float64) scale {
	if min > 0 {
		min = 0
	}
	if max <= min {
		max = min + math.Max(1, math.Abs(min)) // one value: give it room
	}
	step := niceNum((max-min)/float64(n-1), true)
	if intTicks && step < 1 {
		step = 1
	}
	lo := math.Floor(min/step) * step
	hi := math.Ceil(max/step) * step
	if !(step > 0) || !finite(step) || !finite(hi-lo) || !((hi-lo)/step <= 4*float64(n)) {
		// Absurd data (±1e308) must not loop or flood the axis: two ticks.
		return fixedScale(min, max, 1, p0, p1)
	}
	s := scale{lo: lo, hi: hi, p0: p0, p1: p1}
	// Decimals enough to tell adjacent ticks apart, no more.
	dec := 0
	if step < 1 {
		dec = int(math.Ceil(-math.Log10(step) - 1e-9))
	}
	// Count the ticks rather than step until past hi: at 1e308 adding a
	// step may not change the value at all.
	for i, n := 0, int(math.Round((hi-lo)/step)); i <= n; i++ {
		v := math.Round((lo+float64(i)*step)/step) * step // keep 0.30000000000000004 off the axis
		s.ticks = append(s.ticks, v)
		if math.Abs(v) >= 1e15 {
			s.tickText = append(s.tickText, strconv.FormatFloat(v, 'g', 4, 64))
		} else {
			s.tickText = append(s.tickText, strconv.FormatFloat(v, 'f', dec, 64))
		}
	}
	return s
}

// logScale builds a log10 scale over [min, max] (both > 0). Integer axes
// (concurrency) get ticks on powers of two, the way sweeps are planned (1, 2,
// 4 ... 64); others get the 1-2-5 sequence. Either is thinned when it would
// crowd the axis.
func logScale(min, max float64, intTicks bool, p0, p1 float64) scale {
	if !(min >= 1e-300 && max <= 1e300 && max > min) {
		// Outside this the decade arithmetic under- or overflows.
		return linearScale(min, max, 6, intTicks, p0, p1)
	}
	if intTicks {
		return log2Scale(min, max, p0, p1)
	}
	lo := math.Pow(10, math.Floor(math.Log10(min)))
	for _, m := range []float64{5, 2} {
		if lo*m <= min {
			lo *= m
			break
		}
	}
	hi := math.Pow(10, math.Ceil(math.Log10(max)))
	for _, m := range []float64{0.2, 0.5} {
		if hi*m >= max {
			hi *= m
			break
		}
	}
	s := scale{lo: lo, hi: hi, p0: p0, p1: p1, log: true}
	var ticks []float64
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, e)
			if v >= lo*(1-1e-9) && v <= hi*(1+1e-9) {
				ticks = append(ticks, v)
			}
		}
	}
	if len(ticks) > 10 {
		var decades []float64
		for _, v := range ticks {
			if m := v / math.Pow(10, math.Floor(math.Log10(v)+1e-9)); math.Abs(m-1) < 1e-9 {
				decades = append(decades, v)
			}
		}
		if len(decades) >= 2 {
			ticks = decades
		}
	}
	for k := (len(ticks) + 9) / 10; k > 1 && len(ticks) > 10; {
		// Still crowded (tens of decades): keep every k-th.
		var thin []float64
		for i := 0; i < len(ticks); i += k {
			thin = append(thin, ticks[i])
		}
		ticks = thin
	}
	for _, v := range ticks {
		s.ticks = append(s.ticks, v)
		s.tickText = append(s.tickText, strconv.FormatFloat(v, 'g', 4, 64))
	}
	return s
}

// log2Scale is a log scale from the power of two at or below min to the one at
// or above max, with a tick on every power of two (every 2nd, 4th ... when
// there would be more than 10).
func log2Scale(min, max float64, p0, p1 float64) scale {
	e0 := math.Floor(math.Log2(min))
	e1 := math.Ceil(math.Log2(max))
	if e1 <= e0 {
		e1 = e0 + 1
	}
	step := 1.0
	for (e1-e0)/step > 10 {
		step *= 2
	}
	s := scale{lo: math.Exp2(e0), hi: math.Exp2(e1), p0: p0, p1: p1, log: true}
	for e := e0; e <= e1; e += step {
		v := math.Exp2(e)
		s.ticks = append(s.ticks, v)
		s.tickText = append(s.tickText, strconv.FormatFloat(v, 'g', 6, 64))
	}
	return s
}

// extent returns the min and max of the finite values, and whether there was any.
func extent(vals []float64) (min, max float64, ok bool) {
	min, max = math.Inf(1), math.Inf(-1)
	for _, v := range vals {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		min, max, ok = math.Min(min, v), math.Max(max, v), true
	}
	return min, max, ok
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// svgOpen writes the <svg> element, its accessible title and the frame.
func svgOpen(b *strings.Builder, id, kind, title string) {
	fmt.Fprintf(b, `<svg class="chart" data-chart="%s" data-kind="%s" viewBox="0 0 %s %s" role="img" aria-label="%s" xmlns="http://www.w3.org/2000/svg">`,
		esc(id), kind, num(chartW), num(chartH), esc(title))
	fmt.Fprintf(b, `<title>%s</title>`, esc(title))
}

// axes draws the grid, the tick labels and the axis titles.
func axes(b *strings.Builder, xs, ys scale, xLabel, yLabel string, xCats []string) {
	b.WriteString(`<g class="grid">`)
	for i, v := range ys.ticks {
		y := ys.at(v)
		fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s"/>`, coord(marginL), coord(y), coord(marginL+plotW), coord(y))
		fmt.Fprintf(b, `<text class="tick" x="%s" y="%s" text-anchor="end" dominant-baseline="middle">%s</text>`,
			coord(marginL-6), coord(y), esc(ys.tickText[i]))
	}
	if xCats == nil {
		for i, v := range xs.ticks {
			x := xs.at(v)
			fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s"/>`, coord(x), coord(marginT), coord(x), coord(marginT+plotH))
			fmt.Fprintf(b, `<text class="tick" x="%s" y="%s" text-anchor="middle">%s</text>`,
				coord(x), coord(marginT+plotH+16), esc(xs.tickText[i]))
		}
	}
	b.WriteString(`</g>`)
	fmt.Fprintf(b, `<rect class="frame" x="%s" y="%s" width="%s" height="%s"/>`, coord(marginL), coord(marginT), coord(plotW), coord(plotH))
	x := marginL + plotW/2
	if xs.log {
		xLabel += " (log scale)"
	}
	fmt.Fprintf(b, `<text class="axis-label" x="%s" y="%s" text-anchor="middle">%s</text>`, coord(x), coord(chartH-6), esc(xLabel))
	y := marginT + plotH/2
	fmt.Fprintf(b, `<text class="axis-label" x="14" y="%s" text-anchor="middle" transform="rotate(-90 14 %s)">%s</text>`,
		coord(y), coord(y), esc(yLabel))
}

// noData is drawn in place of a chart with nothing to plot, so the reader sees
// that the metric was null rather than a blank box.
func noData(id, kind, title string) template.HTML {
	var b strings.Builder
	svgOpen(&b, id, kind, title)
	fmt.Fprintf(&b, `<rect class="frame" x="%s" y="%s" width="%s" height="%s"/>`, coord(marginL), coord(marginT), coord(plotW), coord(plotH))
	fmt.Fprintf(&b, `<text class="nodata" x="%s" y="%s" text-anchor="middle">no data</text></svg>`,
		coord(marginL+plotW/2), coord(marginT+plotH/2))
	return template.HTML(b.String())
}

// svg renders the line chart. Each run of consecutive non-null points is one
// polyline (a null splits the line: a gap, not a dip to zero); every non-null
// point gets a marker with a <title> tooltip and data-x/data-y attributes.
func (c lineChart) svg(title string) template.HTML {
	// The X domain spans every level, null or not, so all load charts of a
	// stage share one axis even when a metric is missing at the ends.
	var xv, yv []float64
	for _, m := range c.Marks {
		xv = append(xv, m.X)
	}
	for _, bd := range c.Bands {
		xv = append(xv, bd.X0, bd.X1)
	}
	xv = append(xv, c.Edges...)
	for _, s := range c.Series {
		for _, p := range s.Points {
			if !finite(p.X) {
				continue
			}
			xv = append(xv, p.X)
			if p.Y != nil && finite(*p.Y) {
				yv = append(yv, *p.Y)
			}
		}
	}
	ymin, ymax, ok := extent(yv)
	if !ok {
		return noData(c.ID, "line", title)
	}
	xmin, xmax, _ := extent(xv)
	if c.YMax > 0 {
		ymax = math.Max(ymax, c.YMax)
	}
	var xs scale
	if xmin > 0 && (c.XLogAuto && xmax/xmin >= logSpan || c.XLog && xmax > xmin) {
		xs = logScale(xmin, xmax, c.XIntTicks, marginL, marginL+plotW)
	} else {
		xs = linearScale(xmin, xmax, 6, c.XIntTicks, marginL, marginL+plotW)
	}
	if c.XMs {
		for i, v := range xs.ticks {
			xs.tickText[i] = msText(v)
		}
	}
	ys := linearScale(ymin, ymax, 6, false, marginT+plotH, marginT)
	if c.YMax > 0 && ymax <= c.YMax {
		ys = fixedScale(0, c.YMax, 5, marginT+plotH, marginT)
	}

	var b strings.Builder
	svgOpen(&b, c.ID, "line", title)
	axes(&b, xs, ys, c.XLabel, c.YLabel, nil)
	c.bands(&b, xs)
	c.marks(&b, xs)
	for _, s := range c.Series {
		cls := "series c" + strconv.Itoa(s.Color%paletteLen)
		if s.Dashed {
			cls += " dashed"
		}
		fmt.Fprintf(&b, `<g class="%s" data-series="%s" data-baseline="%t">`, cls, esc(s.Name), s.Dashed)
		var seg []string
		flush := func() {
			if len(seg) > 1 {
				fmt.Fprintf(&b, `<polyline points="%s"/>`, strings.Join(seg, " "))
			}
			seg = seg[:0]
		}
		for _, p := range s.Points {
			if p.Y == nil || !finite(*p.Y) || !finite(p.X) {
				flush()
				continue
			}
			seg = append(seg, coord(xs.at(p.X))+","+coord(ys.at(*p.Y)))
		}
		flush()
		for _, p := range s.Points {
			if p.Y == nil || !finite(*p.Y) || !finite(p.X) || p.Plain {
				continue
			}
			fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="3.5" data-x="%s" data-y="%s"><title>%s</title></circle>`,
				coord(xs.at(p.X)), coord(ys.at(*p.Y)), num(p.X), num(*p.Y), esc(p.Tip))
		}
		b.WriteString(`</g>`)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// marks draws the chart's vertical marks, each labelled at the top of the
// plot (alternately a line lower, so two close marks stay legible; to the
// left of a mark near the right edge, so the label stays inside).
func (c lineChart) marks(b *strings.Builder, xs scale) {
	for i, m := range c.Marks {
		if !finite(m.X) || (xs.log && m.X <= 0) {
			continue
		}
		x := xs.at(m.X)
		cls := "mark c" + strconv.Itoa(m.Color%paletteLen)
		if m.Dashed {
			cls += " dashed"
		}
		fmt.Fprintf(b, `<g class="%s" data-mark="%s" data-x="%s"><line x1="%s" y1="%s" x2="%s" y2="%s"/>`,
			cls, esc(m.Label), num(m.X), coord(x), coord(marginT), coord(x), coord(marginT+plotH))
		tx, anchor := x+4, "start"
		if x > marginL+plotW*0.7 { // near the right edge: label to the left
			tx, anchor = x-4, "end"
		}
		fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="%s">%s</text></g>`, coord(tx), coord(marginT+12+float64(i%2)*13), anchor, esc(m.Label))
	}
}

// bands draws the chart's shaded spans and its edge ticks. The colours are
// inline styles on the page's own variables (dark mode follows), so a page
// without bands carries no extra CSS.
func (c lineChart) bands(b *strings.Builder, xs scale) {
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
			kind, num(bd.X0), num(bd.X1), coord(x0), coord(marginT), coord(x1-x0), coord(plotH), fill, esc(bd.Label))
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
		fmt.Fprintf(b, `<line data-edge="%s" x1="%s" y1="%s" x2="%s" y2="%s"/>`, num(e), coord(x), coord(marginT+plotH-6), coord(x), coord(marginT+plotH))
	}
	b.WriteString(`</g>`)
}

// fixedScale is a linear scale with a known domain and n equal steps
// (percentages: 0, 20, ... 100).
func fixedScale(lo, hi float64, n int, p0, p1 float64) scale {
	s := scale{lo: lo, hi: hi, p0: p0, p1: p1}
	for i := 0; i <= n; i++ {
		v := lo + (hi-lo)*float64(i)/float64(n)
		s.ticks = append(s.ticks, v)
		s.tickText = append(s.tickText, strconv.FormatFloat(v, 'g', 6, 64))
	}
	return s
}

// svg renders the stacked bar chart; each segment carries a <title> tooltip
// and its value in data-value.
func (c barChart) svg(title string) template.HTML {
	var totals []float64
	for i := range c.Categories {
		t := 0.0
		for _, s := range c.Stacks {
			if i < len(s.Values) && finite(s.Values[i]) && s.Values[i] > 0 {
				t += s.Values[i]
			}
		}
		totals = append(totals, t)
	}
	_, tmax, ok := extent(totals)
	if !ok || len(c.Categories) == 0 {
		return noData(c.ID, "bar", title)
	}
	ys := linearScale(0, tmax, 6, true, marginT+plotH, marginT)
	band := plotW / float64(len(c.Categories))
	bw := math.Min(band*0.6, 56)

	var b strings.Builder
	svgOpen(&b, c.ID, "bar", title)
	axes(&b, scale{}, ys, c.XLabel, c.YLabel, c.Categories)
	for i, cat := range c.Categories {
		x := marginL + band*(float64(i)+0.5)
		fmt.Fprintf(&b, `<text class="tick" x="%s" y="%s" text-anchor="middle">%s</text>`,
			coord(x), coord(marginT+plotH+16), esc(cat))
	}
	for si, s := range c.Stacks {
		fmt.Fprintf(&b, `<g class="bars c%d" data-series="%s">`, s.Color%paletteLen, esc(s.Name))
		for i := range c.Categories {
			if i >= len(s.Values) || !finite(s.Values[i]) || s.Values[i] <= 0 {
				continue
			}
			// Stack in series order: the segment sits on the ones before it.
			base := 0.0
			for _, prev := range c.Stacks[:si] {
				if i < len(prev.Values) && finite(prev.Values[i]) && prev.Values[i] > 0 {
					base += prev.Values[i]
				}
			}
			y0, y1 := ys.at(base), ys.at(base+s.Values[i])
			tip := ""
			if i < len(s.Tips) {
				tip = s.Tips[i]
			}
			fmt.Fprintf(&b, `<rect x="%s" y="%s" width="%s" height="%s" data-category="%s" data-value="%s"><title>%s</title></rect>`,
				coord(marginL+band*(float64(i)+0.5)-bw/2), coord(y1), coord(bw), coord(y0-y1),
				esc(c.Categories[i]), num(s.Values[i]), esc(tip))
		}
		b.WriteString(`</g>`)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// legendItem is one entry of a chart's legend (rendered by the page template).
type legendItem struct {
	Name   string
	Color  int
	Dashed bool
	Bar    bool // a filled swatch, for bar charts
}

func (c lineChart) legend() []legendItem {
	var l []legendItem
	for _, s := range c.Series {
		l = append(l, legendItem{Name: s.Name, Color: s.Color % paletteLen, Dashed: s.Dashed})
	}
	return l
}

func (c barChart) legend() []legendItem {
	var l []legendItem
	for _, s := range c.Stacks {
		l = append(l, legendItem{Name: s.Name, Color: s.Color % paletteLen, Bar: true})
	}
	return l
}

// msText is a latency in ms as a tick reads it, in the unit that keeps it
// short: 0.1 ms, 250 ms, 1.5 s, 2 min.
func msText(ms float64) string {
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
