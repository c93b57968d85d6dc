package board

import (
	"bytes"
	"io"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// WriteTable writes the board for a terminal: per group a table like the
// run's (numbers right-aligned, units in the headers), the frontier's runs
// under it, then the runs not compared and the inputs skipped. Untrusted
// text is made one safe line (no escape sequence reaches the terminal).
func WriteTable(w io.Writer, b *Board) error {
	var buf bytes.Buffer
	ew := &errWriter{w: &buf}
	ew.printf("%s; ranked by %s\n", summary(b), safeText(b.Rank))
	for i := range b.Groups {
		writeTableGroup(ew, &buf, b, &b.Groups[i])
	}
	if len(b.Apart) > 0 {
		ew.printf("\nnot compared:\n")
		for _, a := range b.Apart {
			where := a.Source
			if a.Stage != "" {
				where += " (stage " + a.Stage + ")"
			}
			ew.printf("  %s: %s\n", safeText(where), safeText(a.Reason))
		}
	}
	if len(b.Skipped) > 0 {
		ew.printf("\nskipped:\n")
		for _, s := range b.Skipped {
			ew.printf("  %s\n", safeText(s.String()))
		}
	}
	if ew.err != nil {
		return ew.err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// writeTableGroup writes one group's table and the notes under it.
func writeTableGroup(ew *errWriter, buf *bytes.Buffer, b *Board, g *Group) {
	ew.printf("\n%s  (%s; ranked by %s)\n", safeText(g.title()), safeText(g.Shape), safeText(g.Rank))
	if len(g.Common) > 0 {
		ew.printf("every run: %s\n", safeText(g.Common.String()))
	}
	headers := []string{"#", "Run", "Level", vsAboveHeader}
	if g.showKey(b.Metrics) {
		headers = append(headers, g.keyHeader())
	}
	for _, m := range b.Metrics {
		headers = append(headers, header(m))
	}
	headers = append(headers, "Frontier", "Verdict")
	rows := make([][]string, len(g.Rows))
	for j := range g.Rows {
		r := &g.Rows[j]
		row := []string{placeCell(r), safeText(r.Name), safeText(levelCell(r)), vsAboveCell(r)}
		if g.showKey(b.Metrics) {
			row = append(row, g.formatKey(r))
		}
		for k, m := range b.Metrics {
			row = append(row, formatValue(m, r.Values[k]))
		}
		front := ""
		if r.Frontier {
			front = "✓"
		}
		rows[j] = append(row, front, safeText(r.Verdict))
	}
	if ew.err == nil {
		ew.err = renderTable(buf, headers, rows)
	}
	for j := range g.Rows {
		if n := rowNote(&g.Rows[j]); n != "" {
			ew.printf("  · %s: %s\n", safeText(g.Rows[j].Name), safeText(n))
		}
	}
	for j := range g.Views {
		v := &g.Views[j]
		ew.printf("  frontier, %s: %s\n", strings.ToLower(v.Title), safeText(v.frontierText()))
		for _, n := range v.Notes {
			ew.printf("    · %s\n", safeText(n))
		}
	}
	for _, n := range g.Notes {
		ew.printf("  · %s\n", safeText(n))
	}
}

// renderTable draws one table with the run reports' style: text columns
// (run, level, verdict) left, numbers right, no wrapping.
func renderTable(w io.Writer, headers []string, rows [][]string) error {
	per := make([]tw.Align, len(headers))
	for i := range per {
		per[i] = tw.AlignRight
		if i == 1 || i == 2 || i >= len(headers)-2 {
			per[i] = tw.AlignLeft
		}
	}
	t := tablewriter.NewTable(w,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{Symbols: tw.NewSymbols(tw.StyleLight)})),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignmentConfig(tw.CellAlignment{PerColumn: per}),
		tablewriter.WithRowAlignmentConfig(tw.CellAlignment{PerColumn: per}),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
	)
	t.Header(headers)
	for _, row := range rows {
		if err := t.Append(row); err != nil {
			return err
		}
	}
	return t.Render()
}
