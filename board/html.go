package board

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"strconv"
	"strings"

	"github.com/runnerbench/runner/internal/render/chart"
)

//go:embed board.html.tmpl
var pageTemplate string

//go:embed board.js
var pageScript string

var page = template.Must(template.New("board").Parse(pageTemplate))

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
	CSS     template.CSS
}

type htmlGroup struct {
	ID, Title, Shape, Rank, Common string
	Headers                        []string
	Rows                           []htmlRow
	Charts                         []htmlChart
	Frontiers                      [][2]string
	Notes                          []string
}

// htmlChart is one Pareto view on the page: its caption and its SVG.
type htmlChart struct {
	Title string
	SVG   template.HTML
}

type htmlRow struct {
	Series, Color        string
	Place, Name, Level   string
	Note, Verdict        string
	Knee, Saturation     string
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
	p.CSS = chart.CSS()
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
			Series: fmt.Sprintf("%s-s%d", hg.ID, i), Color: fmt.Sprintf("c%d", i%chart.Colors),
			Place: placeCell(r), Name: safeText(r.Name), Level: safeText(levelCell(r)), Note: safeText(rowNote(r)),
			Verdict: safeText(r.Verdict), Frontier: r.Frontier, Unranked: r.Place == 0,
			Knee: diagnosisCells(r)[0], Saturation: diagnosisCells(r)[1],
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
		hg.Charts = append(hg.Charts, htmlChart{Title: v.Title, SVG: chartSVG(hg.ID, i, v)})
		hg.Frontiers = append(hg.Frontiers, [2]string{v.Title, safeText(v.frontierText())})
		hg.Notes = append(hg.Notes, v.Notes...)
	}
	return hg
}

// chartSVG draws one Pareto view with the chart kit: axes from zero, each
// run's levels as a line of points in its colour (keyed to its table row, so
// the page's script lights a run everywhere at once), the frontier as a
// dashed guide through ringed points. The kit escapes every text.
func chartSVG(gid string, gi int, v *View) template.HTML {
	c := chart.Line{ID: fmt.Sprintf("%s-view%d", gid, gi), Title: v.Title, TipAttr: true,
		X: chart.Axis{Label: v.X.Title + betterHint(v.X)}, Y: chart.Axis{Label: v.Y.Title + betterHint(v.Y)}}
	for _, f := range v.Frontier {
		c.Guide = append(c.Guide, chart.XY{X: f.X, Y: f.Y})
	}
	for _, s := range v.Series {
		cs := chart.Series{Name: safeText(s.Name), Key: fmt.Sprintf("%s-s%d", gid, s.Row), Color: s.Row % chart.Colors}
		for _, p := range s.Points {
			tip := fmt.Sprintf("%s · %s · %s %s · %s %s", s.Name, p.Level, v.X.Title, trimNum(p.X), v.Y.Title, trimNum(p.Y))
			pt := chart.Point{X: p.X, Y: chart.F(p.Y)}
			if p.Frontier {
				pt.Class, tip = "frontier", tip+" · on the frontier"
			}
			pt.Tip = safeText(tip)
			cs.Points = append(cs.Points, pt)
		}
		c.Series = append(c.Series, cs)
	}
	return c.SVG()
}

// betterHint is the axis title's hint of which way is better.
func betterHint(a Axis) string {
	if a.Higher {
		return " → higher is better"
	}
	return " → lower is better"
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
