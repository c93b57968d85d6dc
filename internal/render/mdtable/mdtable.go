// Package mdtable writes the GitHub-flavoured Markdown tables of every
// Markdown output (summary.md, the comparison comment, the board, the
// history), so they share one shape: one header row, one alignment row
// (numbers right-aligned), one line per row. Headers are escaped here with
// internal/mdtext, the one escaper; cells are escaped by the caller with it
// (a cell may hold code or emphasis of its own), and a line break left in a
// cell becomes a space, so no text can end a row early.
package mdtable

import (
	"io"
	"strings"

	"github.com/runnerbench/runner/internal/mdtext"
)

// Column is one column: its header (plain text) and whether it holds
// numbers (right-aligned).
type Column struct {
	Head  string
	Right bool
}

// Columns are columns of the heads, left-aligned but for those whose index
// right says.
func Columns(heads []string, right func(i int) bool) []Column {
	out := make([]Column, len(heads))
	for i, h := range heads {
		out[i] = Column{Head: h, Right: right != nil && right(i)}
	}
	return out
}

// Write writes the table to w: its header and alignment rows, then a line
// per row (a table without rows still has its header).
func Write(w io.Writer, cols []Column, rows [][]string) error {
	var b strings.Builder
	b.WriteString("|")
	for _, c := range cols {
		b.WriteString(" " + mdtext.Text(c.Head) + " |")
	}
	b.WriteString("\n|")
	for _, c := range cols {
		if c.Right {
			b.WriteString(" ---: |")
		} else {
			b.WriteString(" --- |")
		}
	}
	b.WriteString("\n")
	for _, row := range rows {
		b.WriteString("|")
		for _, cell := range row {
			b.WriteString(" " + oneLine.Replace(cell) + " |")
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

var oneLine = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ")
