package chart

import (
	"fmt"
	"html/template"
	"math"
	"strings"
)

// Bars is a stacked bar chart over categories (load levels); SVG draws it.
type Bars struct {
	ID, Title  string
	XLabel     string
	YLabel     string
	Categories []string
	Stacks     []Stack
}

// Stack is one colour of a stacked bar chart: one value per category.
type Stack struct {
	Name   string
	Color  int
	Values []float64
	Tips   []string
}

// SVG renders the stacked bar chart; each segment carries a <title> tooltip
// and its value in data-value.
func (c Bars) SVG() template.HTML {
	z := size{chartW, chartH, chartW - marginL - marginR, chartH - marginT - marginB}
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
		return noData(c.ID, "bar", c.Title, z)
	}
	ys := linearScale(0, tmax, z.ticks(), true, marginT+z.plotH, marginT)
	band := z.plotW / float64(len(c.Categories))
	bw := math.Min(band*0.6, 56)

	var b strings.Builder
	svgOpen(&b, c.ID, "bar", c.Title, z)
	axes(&b, scale{}, ys, c.XLabel, c.YLabel, true, z)
	for i, cat := range c.Categories {
		x := marginL + band*(float64(i)+0.5)
		fmt.Fprintf(&b, `<text class="tick" x="%s" y="%s" text-anchor="middle">%s</text>`,
			coord(x), coord(marginT+z.plotH+16), esc(cat))
	}
	for si, s := range c.Stacks {
		fmt.Fprintf(&b, `<g class="bars c%d" data-series="%s">`, s.Color%Colors, esc(s.Name))
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
				esc(c.Categories[i]), Num(s.Values[i]), esc(tip))
		}
		b.WriteString(`</g>`)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// legendItem is one entry of a chart's legend.
type legendItem struct {
	name   string
	color  int
	dashed bool
	bar    bool // a filled swatch, for bar charts
}

// Legend is the line chart's legend: a swatch and the name of each series.
func (c Line) Legend() template.HTML {
	var l []legendItem
	for _, s := range c.Series {
		l = append(l, legendItem{name: s.Name, color: s.Color % Colors, dashed: s.Dashed})
	}
	return legend(l)
}

// Legend is the bar chart's legend: a swatch and the name of each stack.
func (c Bars) Legend() template.HTML {
	var l []legendItem
	for _, s := range c.Stacks {
		l = append(l, legendItem{name: s.Name, color: s.Color % Colors, bar: true})
	}
	return legend(l)
}

func legend(items []legendItem) template.HTML {
	var b strings.Builder
	b.WriteString(`<div class="legend">`)
	for _, it := range items {
		fmt.Fprintf(&b, `<span><svg viewBox="0 0 26 10" aria-hidden="true" class="c%d">`, it.color)
		switch {
		case it.bar:
			b.WriteString(`<rect x="6" y="0" width="14" height="10"/>`)
		case it.dashed:
			b.WriteString(`<line x1="1" y1="5" x2="25" y2="5" class="dashed"/>`)
		default:
			b.WriteString(`<line x1="1" y1="5" x2="25" y2="5"/>`)
		}
		fmt.Fprintf(&b, `</svg>%s</span>`, esc(it.name))
	}
	b.WriteString(`</div>`)
	return template.HTML(b.String())
}
