package board

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/runnerbench/runner/internal/mdtext"
	"github.com/runnerbench/runner/internal/render/mdtable"
)

// WriteMarkdown writes the board as Markdown (board.md; a README section or
// a pull-request comment): per group its leaderboard and the runs on its
// Pareto frontiers, then the runs not compared and the inputs skipped.
// Every piece of untrusted text is escaped for GitHub's Markdown.
func WriteMarkdown(w io.Writer, b *Board) error {
	var buf bytes.Buffer
	ew := &errWriter{w: &buf}
	ew.printf("# Runner board\n\n")
	ew.printf("%s; ranked by %s.\n\n", summary(b), mdText(b.Rank))
	for i := range b.Groups {
		writeMDGroup(ew, b, &b.Groups[i])
	}
	if len(b.Apart) > 0 {
		ew.printf("## Not compared\n\n")
		rows := make([][]string, len(b.Apart))
		for i, a := range b.Apart {
			rows[i] = []string{mdText(a.Source), mdText(a.Labels.String()), mdText(a.Plan), mdText(a.Stage), mdText(a.Reason)}
		}
		writeMDTable(ew, []string{"run", "labels", "plan", "stage", "reason"}, rows, nil)
		ew.printf("\n")
	}
	if len(b.Skipped) > 0 {
		ew.printf("## Skipped\n\n")
		rows := make([][]string, len(b.Skipped))
		for i, s := range b.Skipped {
			rows[i] = []string{mdText(s.Path), mdText(s.Reason)}
		}
		writeMDTable(ew, []string{"file", "reason"}, rows, nil)
		ew.printf("\n")
	}
	for _, n := range b.Notes {
		ew.printf("_%s_\n", mdText(n))
	}
	if ew.err != nil {
		return ew.err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// summary says in one line what the board holds.
func summary(b *Board) string {
	s := fmt.Sprintf("%d %s in %d %s", b.Runs, plural(b.Runs, "run", "runs"), len(b.Groups), plural(len(b.Groups), "group", "groups"))
	if n := len(b.Apart); n > 0 {
		s += fmt.Sprintf(", %d not compared", n)
	}
	if n := len(b.Skipped); n > 0 {
		s += fmt.Sprintf(", %d skipped", n)
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func writeMDGroup(ew *errWriter, b *Board, g *Group) {
	ew.printf("## %s\n\n", mdText(g.title()))
	ew.printf("Load: %s. Ranked by %s.", mdText(g.Shape), mdCode(g.Rank))
	if len(g.Common) > 0 {
		ew.printf(" Every run: %s.", mdText(g.Common.String()))
	}
	ew.printf("\n\n")
	headers := []string{"#", "run", "level", vsAboveHeader}
	if g.showKey(b.Metrics) {
		headers = append(headers, g.keyHeader())
	}
	for _, m := range b.Metrics {
		headers = append(headers, header(m))
	}
	headers = append(headers, "knee", "saturation", "frontier", "verdict")
	rows := make([][]string, len(g.Rows))
	for i := range g.Rows {
		r := &g.Rows[i]
		row := []string{placeCell(r), mdText(r.Name), mdText(levelCell(r)), vsAboveCell(r)}
		if g.showKey(b.Metrics) {
			row = append(row, g.formatKey(r))
		}
		for j, m := range b.Metrics {
			row = append(row, formatValue(m, r.Values[j]))
		}
		front := ""
		if r.Frontier {
			front = "✓"
		}
		row = append(row, diagnosisCells(r)...)
		row = append(row, front, mdText(r.Verdict))
		if n := rowNote(r); n != "" {
			row[1] += " _(" + mdText(n) + ")_"
		}
		rows[i] = row
	}
	writeMDTable(ew, headers, rows, func(i int) bool {
		return i == 1 || i == 2 || i == 3 || i == len(headers)-4 || i == len(headers)-3 || i == len(headers)-1
	})
	ew.printf("\n")
	for i := range g.Views {
		v := &g.Views[i]
		ew.printf("- Pareto frontier, %s: %s\n", mdText(strings.ToLower(v.Title[:1])+v.Title[1:]), mdText(v.frontierText()))
		for _, n := range v.Notes {
			ew.printf("  - %s\n", mdText(n))
		}
	}
	for _, n := range g.Notes {
		ew.printf("- Note: %s\n", mdText(n))
	}
	if hasWarned(g) {
		ew.printf("- `!`: the level carries a validity warning (see that run's report)\n")
	}
	ew.printf("\n")
}

func hasWarned(g *Group) bool {
	for i := range g.Rows {
		if g.Rows[i].Warned {
			return true
		}
	}
	return false
}

// writeMDTable writes a GFM table (the kit's) whose columns are
// left-aligned where left says (nil: every one), right-aligned numbers
// elsewhere; cells must be escaped already.
func writeMDTable(ew *errWriter, headers []string, rows [][]string, left func(int) bool) {
	if ew.err == nil {
		ew.err = mdtable.Write(ew.w, mdtable.Columns(headers, func(i int) bool { return left != nil && !left(i) }), rows)
	}
}

// mdText is untrusted text made safe for a Markdown line or table cell.
func mdText(s string) string { return mdtext.Text(s) }

// mdCode is text as inline code.
func mdCode(s string) string { return "`" + mdtext.CodeText(s) + "`" }
