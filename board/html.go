package board

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"fmt"
	"html"
	"html/template"
	"io"
	"math"
	"strconv"
	"strings"
)

//go:embed board.html.tmpl
var pageTemplate string

//go:embed board.js
var pageScript string

var page = template.Must(template.New("board").Parse(pageTemplate))

// palette is how many series colours the page defines (--c0 … --c7).
const palette = 8

// htmlPage is what the template renders.
type htmlPage struct {
	Summary string
	Rank    string
	Groups  []htmlGroup
	Apart   []Apart
	Skipped []Skip
	Notes   []string
	Script  template.JS
	CSP     string
	Palette []int
}

type htmlGroup struct {
	ID, Title, Shape, Rank, Common string
	Headers                        []string
	Rows                           []htmlRow
	Charts                         []template.HTML
	Frontiers                      [][2]string
	Notes                          []string
}

type htmlRow struct {
	Series, Color        string
	Place, Name, Level   string
	Note, Verdict        string
	Cells                []string
	Frontier, Unranked   bool
	Labels, Source, Time string
}

// WriteHTML writes the board as one self-contained page (board.html): per
// group its leaderboard and its Pareto views as inline SVG, every level of
// every run a point with its details on hover, each run's levels joined,
// the frontier marked. No network: the page's policy allows its own inline
// style and its one inline script (by hash), nothing else. Light and dark
// like the run report. Every piece of untrusted text is escaped.
func WriteHTML(w io.Writer, b *Board) error {
	sum := sha256.Sum256([]byte(pageScript))
	p := htmlPage{
		Summary: summary(b), Rank: b.Rank, Apart: b.Apart, Skipped: b.Skipped, Notes: b.Notes,
		Script: template.JS(pageScript),
		CSP:    "default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'",
	}
	for i := range palette {
		p.Palette = append(p.Palette, i)
	}
	for i := range b.Groups {
		p.Groups = append(p.Groups, htmlGroupOf(b, i))
	}
	var buf bytes.Buffer
	if err := page.Execute(&buf, p); err != nil {
		return fmt.Errorf("render board.html: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

func htmlGroupOf(b *Board, gi int) htmlGroup {
	g := &b.Groups[gi]
	hg := htmlGroup{
		ID: fmt.Sprintf("g%d", gi), Title: safeText(g.title()), Shape: safeText(g.Shape), Rank: safeText(g.Rank),
		Common: safeText(g.Common.String()), Notes: g.Notes,
		Headers: []string{"#", "run", "level", vsAboveHeader},
	}
	if g.showKey(b.Metrics) {
		hg.Headers = append(hg.Headers, g.keyHeader())
	}
	for _, m := range b.Metrics {
		hg.Headers = append(hg.Headers, header(m))
	}
	for i := range g.Rows {
		r := &g.Rows[i]
		hr := htmlRow{
			Series: fmt.Sprintf("%s-s%d", hg.ID, i), Color: fmt.Sprintf("c%d", i%palette),
			Place: placeCell(r), Name: safeText(r.Name), Level: safeText(levelCell(r)), Note: safeText(rowNote(r)),
			Verdict: safeText(r.Verdict), Frontier: r.Frontier, Unranked: r.Place == 0,
			Labels: safeText(r.Labels.String()), Source: safeText(r.Source), Time: r.StartedAt.UTC().Format(TimeFormat),
		}
		hr.Cells = append(hr.Cells, vsAboveCell(r))
		if g.showKey(b.Metrics) {
			hr.Cells = append(hr.Cells, g.formatKey(r))
		}
		for j, m := range b.Metrics {
			hr.Cells = append(hr.Cells, formatValue(m, r.Values[j]))
		}
		hg.Rows = append(hg.Rows, hr)
	}
	for i := range g.Views {
		v := &g.Views[i]
		hg.Charts = append(hg.Charts, chartSVG(hg.ID, v))
		hg.Frontiers = append(hg.Frontiers, [2]string{v.Title, safeText(v.frontierText())})
		hg.Notes = append(hg.Notes, v.Notes...)
	}
	return hg
}

// Chart geometry, in the SVG's own units (it scales to its box).
const (
	chartW, chartH                 = 600.0, 380.0
	padL, padR, padT, padB         = 64.0, 16.0, 30.0, 48.0
	plotW, plotH                   = chartW - padL - padR, chartH - padT - padB
	pointR, frontierR, maxTickDigs = 3.5, 6.5, 6
)

// chartSVG draws one Pareto view: axes from zero to a round number past the
// largest value, each run's levels as a line of points in its colour, the
// frontier as a dashed line through ringed points. Text is escaped here:
// the result is trusted HTML.
func chartSVG(gid string, v *View) template.HTML {
	var xmax, ymax float64
	for _, s := range v.Series {
		for _, p := range s.Points {
			xmax, ymax = math.Max(xmax, p.X), math.Max(ymax, p.Y)
		}
	}
	xs, ys := niceTicks(xmax), niceTicks(ymax)
	xTop, yTop := xs[len(xs)-1], ys[len(ys)-1]
	px := func(x float64) float64 { return padL + x/xTop*plotW }
	py := func(y float64) float64 { return padT + plotH - y/yTop*plotH }
	var b strings.Builder
	esc := html.EscapeString
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %g %g" role="img" aria-label="%s">`, chartW, chartH, esc(v.Title))
	fmt.Fprintf(&b, `<text x="%g" y="18" class="title">%s</text>`, padL, esc(v.Title))
	b.WriteString(`<g class="grid">`)
	for _, t := range xs {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%g" x2="%.1f" y2="%g"/><text class="tick" x="%.1f" y="%g" text-anchor="middle">%s</text>`,
			px(t), padT, px(t), padT+plotH, px(t), padT+plotH+15, tickText(t))
	}
	for _, t := range ys {
		fmt.Fprintf(&b, `<line x1="%g" y1="%.1f" x2="%g" y2="%.1f"/><text class="tick" x="%g" y="%.1f" text-anchor="end">%s</text>`,
			padL, py(t), padL+plotW, py(t), padL-6, py(t)+4, tickText(t))
	}
	b.WriteString(`</g>`)
	fmt.Fprintf(&b, `<rect class="frame" x="%g" y="%g" width="%g" height="%g"/>`, padL, padT, plotW, plotH)
	fmt.Fprintf(&b, `<text class="axis-label" x="%g" y="%g" text-anchor="middle">%s</text>`, padL+plotW/2, chartH-8, esc(v.X.Title+betterHint(v.X)))
	fmt.Fprintf(&b, `<text class="axis-label" transform="translate(14 %g) rotate(-90)" text-anchor="middle">%s</text>`, padT+plotH/2, esc(v.Y.Title+betterHint(v.Y)))
	if len(v.Frontier) > 1 {
		b.WriteString(`<polyline class="frontier-line" points="`)
		for _, f := range v.Frontier {
			fmt.Fprintf(&b, "%.1f,%.1f ", px(f.X), py(f.Y))
		}
		b.WriteString(`"/>`)
	}
	for _, s := range v.Series {
		id := fmt.Sprintf("%s-s%d", gid, s.Row)
		fmt.Fprintf(&b, `<g class="series c%d" data-series="%s">`, s.Row%palette, id)
		if len(s.Points) > 1 {
			b.WriteString(`<polyline points="`)
			for _, p := range s.Points {
				fmt.Fprintf(&b, "%.1f,%.1f ", px(p.X), py(p.Y))
			}
			b.WriteString(`"/>`)
		}
		for _, p := range s.Points {
			tip := fmt.Sprintf("%s · %s · %s %s · %s %s", s.Name, p.Level, v.X.Title, trimNum(p.X), v.Y.Title, trimNum(p.Y))
			cls, r := "pt", pointR
			if p.Frontier {
				cls, r, tip = "pt frontier", frontierR, tip+" · on the frontier"
			}
			tip = safeText(tip)
			fmt.Fprintf(&b, `<circle class="%s" cx="%.1f" cy="%.1f" r="%g" data-tip="%s"><title>%s</title></circle>`, cls, px(p.X), py(p.Y), r, esc(tip), esc(tip))
		}
		b.WriteString(`</g>`)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // every text above went through esc
}

// betterHint is the axis title's hint of which way is better.
func betterHint(a Axis) string {
	if a.Higher {
		return " → higher is better"
	}
	return " → lower is better"
}

// niceTicks are 0 and round steps up to at least max (five or so).
func niceTicks(maxV float64) []float64 {
	if !(maxV > 0) || math.IsInf(maxV, 0) {
		return []float64{0, 1}
	}
	raw := maxV / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag * 10
	for _, f := range []float64{1, 2, 2.5, 5, 10} {
		if f*mag >= raw {
			step = f * mag
			break
		}
	}
	var out []float64
	for i := 0; ; i++ {
		t := float64(i) * step
		out = append(out, t)
		if t >= maxV || i > 20 {
			return out
		}
	}
}

// tickText shows a tick compactly: 2500 → "2500", 12000 → "12k", 0.5 → "0.5".
func tickText(t float64) string {
	if t >= 10000 {
		return trimNum(t/1000) + "k"
	}
	s := trimNum(t)
	if len(s) > maxTickDigs {
		s = strconv.FormatFloat(t, 'g', 3, 64)
	}
	return s
}

// trimNum is a number with at most two decimals and no trailing zeros.
func trimNum(x float64) string {
	s := strconv.FormatFloat(x, 'f', 2, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "-0" {
		return "0"
	}
	return s
}
