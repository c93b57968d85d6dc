package board

import (
	"bytes"
	"io"
	"strings"

	"github.com/runnerbench/runner/internal/render/termtable"
)

// WriteTable writes the board for a terminal: per group a table drawn as
// the run's are (internal/render/termtable: numbers right-aligned, units in
// the headers, fitted to width, 0 for as wide as its content: a long run
// name wraps, then the numbers go into parts that repeat the run's place,
// name and level), the frontier's runs under it, then the runs not compared
// and the inputs skipped. Untrusted text is made one safe line (no escape
// sequence reaches the terminal).
func WriteTable(w io.Writer, b *Board, width int) error {
	var buf bytes.Buffer
	ew := &errWriter{w: &buf}
	ew.printf("%s; ranked by %s\n", summary(b), safeText(b.Rank))
	for i := range b.Groups {
		writeTableGroup(ew, &buf, b, &b.Groups[i], width)
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
func writeTableGroup(ew *errWriter, buf *bytes.Buffer, b *Board, g *Group, width int) {
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
	headers = append(headers, "Knee", "Saturation", "Frontier", "Verdict")
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
		row = append(row, diagnosisCells(r)...)
		rows[j] = append(row, front, safeText(r.Verdict))
	}
	if ew.err == nil {
		aligns := make([]termtable.Align, len(headers))
		for i := range aligns {
			if i == 0 || i > 2 && i < len(headers)-4 {
				aligns[i] = termtable.Right
			}
		}
		ew.err = termtable.Write(buf, termtable.Table{Headers: headers, Rows: rows, Aligns: aligns, Keep: 3, Wrap: []int{1}}, width)
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
