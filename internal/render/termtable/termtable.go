// Package termtable draws every table Runner prints to a terminal (the run's
// levels, checks and search, the board, runner compare) one way: light
// rules, headers as written (never upper-cased), text columns left and
// numbers right, cells never wrapped by the library; and fitted to a width,
// the terminal's or DefaultWidth when the output is not a terminal, by the
// same steps for every table (Write): headers on two lines, long text
// columns wrapped, then a list or the columns in parts.
package termtable

import (
	"bytes"
	"io"
	"slices"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/pkg/twwidth"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// DefaultWidth is the width the CLI fits a terminal table to when stdout is
// not a terminal (a pipe, a CI log).
const DefaultWidth = 100

// minWrap is the narrowest a wrapped text column is made: narrower, an
// expression is more line breaks than text.
const minWrap = 16

// Align is a column's alignment.
type Align int

// Alignments of a column.
const (
	Left Align = iota
	Right
)

// Table is one table to draw: its cells, which columns are text (left
// aligned), and how it may be narrowed to fit a width.
type Table struct {
	Headers []string
	Rows    [][]string
	// TextCols is how many leading columns are left-aligned text, the rest
	// right-aligned numbers (0: every column is text); Aligns overrides it
	// column by column.
	TextCols int
	Aligns   []Align
	// Keep is how many leading columns (the row's name) every part repeats
	// when a table of numbers is split into parts side by side no more;
	// 0: never split.
	Keep int
	// Wrap lists the text columns whose cells may wrap onto more lines (an
	// expression, a measured value, a run's name); WrapLast, those wrapped
	// too only when that is not enough (a check's name, which a log is
	// searched for); Below, those a list (narrower still) puts below its
	// row (nil: Wrap). A table with Keep is split in parts, wrapped, rather
	// than made a list.
	Wrap, WrapLast, Below []int
}

// Write draws t no wider than width columns (0: as wide as its content);
// see fit.
func Write(w io.Writer, t Table, width int) error {
	return fit(w, t, width)
}

// fit draws t no wider than width columns (0: as wide as it needs), trying
// in turn: as it is; headers on two lines; the wrap columns wrapped as wide
// as still fits, or, narrower still, a list with those values below each
// row (or, for a table with keep columns, the wrapped table split); for a
// table of numbers, headers a word a line, then the columns split into
// parts, each a table of its own repeating the keep columns. A table that cannot be made to fit (a single
// column wider than the width) is drawn as narrow as it gets.
func fit(w io.Writer, t Table, width int) error {
	out, err := t.render()
	if err != nil || width <= 0 || widest(out) <= width {
		return writeOut(w, out, err)
	}
	orig := t.Headers
	t.Headers = wrapHeaders(t.Headers)
	if out, err = t.render(); err != nil || widest(out) <= width {
		return writeOut(w, out, err)
	}
	if len(t.Wrap) == 0 {
		// A table of numbers: a header a word a line (a long word broken
		// after a slash) before the table is split into parts.
		stacked := t
		stacked.Headers = stackHeaders(orig, t.Rows)
		if out, err = stacked.render(); err != nil || widest(out) <= width {
			return writeOut(w, out, err)
		}
	}
	if len(t.Wrap) > 0 {
		// Wrapped at spaces; then the wrapLast columns too; then breaking
		// words; then, too narrow even so, a list with the values below.
		all := t
		all.Wrap = append(append([]int(nil), t.Wrap...), t.WrapLast...)
		for _, try := range []struct {
			t     Table
			whole bool
		}{{t, true}, {all, true}, {all, false}} {
			if out, err = try.t.wrapped(width, try.whole).render(); err != nil || widest(out) <= width {
				return writeOut(w, out, err)
			}
		}
		if t.Keep > 0 {
			return all.wrapped(width, true).split(w, width)
		}
		return t.list(w, width)
	}
	if t.Keep > 0 {
		return t.split(w, width)
	}
	return writeOut(w, out, nil)
}

func writeOut(w io.Writer, out []byte, err error) error {
	if err != nil {
		return err
	}
	_, err = w.Write(out)
	return err
}

func (t Table) render() ([]byte, error) {
	var b bytes.Buffer
	err := renderTable(&b, t.Headers, t.Rows, t.TextCols, t.Aligns)
	return b.Bytes(), err
}

// renderTable draws one light-ruled table. The first textCols columns are
// left-aligned text (every column when textCols is 0), the rest
// right-aligned numbers; aligns overrides that.
func renderTable(w io.Writer, headers []string, rows [][]string, textCols int, aligns []Align) error {
	per := make([]tw.Align, len(headers))
	for i := range per {
		switch {
		case i < len(aligns) && aligns[i] == Right:
			per[i] = tw.AlignRight
		case i < len(aligns), i < textCols || textCols == 0:
			per[i] = tw.AlignLeft
		default:
			per[i] = tw.AlignRight
		}
	}
	t := tablewriter.NewTable(w,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{Symbols: tw.NewSymbols(tw.StyleLight)})),
		// Keep headers as written: "TTFT p95 (ms)", not "TTFT P95 (MS)".
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignmentConfig(tw.CellAlignment{PerColumn: per}),
		tablewriter.WithRowAlignmentConfig(tw.CellAlignment{PerColumn: per}),
		// No wrapping by the library: a wrapped number is worse than a wide
		// table, and text is wrapped by fit, at word boundaries.
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

// wrapped is t with its wrap columns wrapped to fit width: the
// table's other columns keep their width, and the room left is shared out
// among the wrap columns, a column that needs less than an equal share
// taking what it needs. Each keeps at least its header's width and, with
// whole, its longest word (a "name=value" is not broken), else minWrap.
func (t Table) wrapped(width int, whole bool) Table {
	bare := t.withCells(func(c int, cell string) string { return "" })
	out, err := bare.render()
	if err != nil {
		return t
	}
	cols := make([]wrapCol, 0, len(t.Wrap))
	for _, c := range t.Wrap {
		col := wrapCol{c: c}
		for _, l := range strings.Split(t.Headers[c], "\n") {
			col.head = max(col.head, twwidth.Width(l))
		}
		floor := minWrap
		for _, row := range t.Rows {
			if c >= len(row) {
				continue
			}
			col.natural = max(col.natural, twwidth.Width(row[c]))
			for _, word := range strings.Fields(row[c]) {
				if whole {
					floor = max(floor, twwidth.Width(word))
				}
			}
		}
		col.low = max(col.head, min(col.natural, floor))
		cols = append(cols, col)
	}
	limit := shareOut(cols, width-widest(out))
	return t.withCells(func(c int, cell string) string {
		if l, ok := limit[c]; ok {
			return wrapText(cell, l)
		}
		return cell
	})
}

// wrapCol is a wrap column's widths: its header's, the least it is given,
// and its widest cell's.
type wrapCol struct{ c, head, low, natural int }

// shareOut gives each column its low width, then shares out what is left of
// room (the width beyond the columns' headers) toward their natural widths:
// a column that needs less than an equal share gets what it needs, the rest
// share what is left equally.
func shareOut(cols []wrapCol, room int) map[int]int {
	limit := map[int]int{}
	for _, col := range cols {
		limit[col.c] = col.low
		room -= col.low - col.head
	}
	slices.SortFunc(cols, func(a, b wrapCol) int { return (a.natural - a.low) - (b.natural - b.low) })
	for i, col := range cols {
		give := min(max(0, col.natural-col.low), max(0, room)/(len(cols)-i))
		limit[col.c] += give
		room -= give
	}
	return limit
}

// withCells is t with every wrap column's cell passed through f.
func (t Table) withCells(f func(c int, cell string) string) Table {
	u := t
	u.Rows = make([][]string, len(t.Rows))
	for i, row := range t.Rows {
		u.Rows[i] = append([]string(nil), row...)
		for _, c := range t.Wrap {
			if c < len(row) {
				u.Rows[i][c] = f(c, row[c])
			}
		}
	}
	return u
}

// list draws t as a list, for a width too narrow for its table: per row,
// its short columns on one line, then each wrap column below it, labelled
// with its header and wrapped.
func (t Table) list(w io.Writer, width int) error {
	below := t.Below
	if below == nil {
		below = t.Wrap
	}
	var b strings.Builder
	for _, row := range t.Rows {
		var short []string
		for c, cell := range row {
			if slices.Contains(below, c) || cell == "" {
				continue
			}
			if c >= t.TextCols && t.TextCols > 0 {
				// A number says what it is: the header beside it.
				cell = strings.ReplaceAll(t.Headers[c], "\n", " ") + " " + cell
			}
			short = append(short, cell)
		}
		b.WriteString(wrapLine(strings.Join(short, "  "), width, "    ") + "\n")
		for _, c := range below {
			if c < len(row) && row[c] != "" {
				head := strings.ReplaceAll(t.Headers[c], "\n", " ")
				b.WriteString(wrapLine("    "+head+": "+row[c], width, "      ") + "\n")
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// split draws t as parts side by side no more: each part the keep columns
// and as many of the next as fit width (at least one).
func (t Table) split(w io.Writer, width int) error {
	next := t.Keep
	for first := true; next < len(t.Headers); first = false {
		cols := seq(t.Keep)
		for next < len(t.Headers) {
			try := append(append([]int(nil), cols...), next)
			out, err := t.columns(try).render()
			if err != nil {
				return err
			}
			if widest(out) > width && len(cols) > t.Keep {
				break
			}
			cols = try
			next++
		}
		if !first {
			if _, err := io.WriteString(w, "\n"); err != nil {
				return err
			}
		}
		out, err := t.columns(cols).render()
		if err = writeOut(w, out, err); err != nil {
			return err
		}
	}
	return nil
}

// columns is t with only the columns cols, in that order.
func (t Table) columns(cols []int) Table {
	pick := func(row []string) []string {
		out := make([]string, 0, len(cols))
		for _, c := range cols {
			if c < len(row) {
				out = append(out, row[c])
			}
		}
		return out
	}
	u := Table{Headers: pick(t.Headers), TextCols: min(t.TextCols, t.Keep)}
	for _, row := range t.Rows {
		u.Rows = append(u.Rows, pick(row))
	}
	if len(t.Aligns) > 0 {
		for _, c := range cols {
			if c < len(t.Aligns) {
				u.Aligns = append(u.Aligns, t.Aligns[c])
			}
		}
	}
	return u
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// Widest is the display width of out's widest line (colour codes not
// counted): how wide a drawn table is.
func Widest(out []byte) int { return widest(out) }

func widest(out []byte) int {
	n := 0
	for _, line := range strings.Split(string(out), "\n") {
		n = max(n, twwidth.Width(line))
	}
	return n
}

// wrapHeaders puts each header of more than one word on two lines, broken
// at the space nearest its middle ("TTFT p95 (ms)" → "TTFT p95" / "(ms)").
func wrapHeaders(hs []string) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h
		best := -1
		for j, r := range h {
			if r == ' ' && (best < 0 || abs(2*j-len(h)) < abs(2*best-len(h))) {
				best = j
			}
		}
		if best > 0 {
			out[i] = h[:best] + "\n" + h[best+1:]
		}
	}
	return out
}

func abs(x int) int { return max(x, -x) }

// stackHeaders puts each header a word a line, and breaks a word wider
// than its column's cells after a slash ("Tok/s/" "stream", "OK/"
// "Failed"), where both parts are at least 3 wide: a unit such as tok/s
// stays whole.
func stackHeaders(hs []string, rows [][]string) []string {
	out := make([]string, len(hs))
	for c, h := range hs {
		cell := 0
		for _, row := range rows {
			if c < len(row) {
				cell = max(cell, twwidth.Width(row[c]))
			}
		}
		var lines []string
		for _, word := range strings.Fields(h) {
			lines = append(lines, breakAtSlash(word, cell)...)
		}
		out[c] = strings.Join(lines, "\n")
	}
	return out
}

// breakAtSlash breaks word after the slash nearest its middle when it is
// wider than limit and both parts are at least 3 wide.
func breakAtSlash(word string, limit int) []string {
	if len(word) <= limit {
		return []string{word}
	}
	best := -1
	for i := 0; i < len(word)-1; i++ {
		if word[i] == '/' && i+1 >= 3 && len(word)-i-1 >= 3 && (best < 0 || abs(2*(i+1)-len(word)) < abs(2*(best+1)-len(word))) {
			best = i
		}
	}
	if best < 0 {
		return []string{word}
	}
	return []string{word[:best+1], word[best+1:]}
}

// wrapText breaks s into lines of at most limit display columns, at spaces
// where it can and inside a word longer than the limit where it must.
func wrapText(s string, limit int) string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		for twwidth.Width(word) > limit {
			if line != "" {
				lines, line = append(lines, line), ""
			}
			cut := cutAt(word, limit)
			lines, word = append(lines, word[:cut]), word[cut:]
		}
		switch {
		case line == "":
			line = word
		case twwidth.Width(line)+1+twwidth.Width(word) <= limit:
			line += " " + word
		default:
			lines, line = append(lines, line), word
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// cutAt is the byte index at which to break word, longer than limit
// columns: after the last punctuation mark that leaves at least half the
// limit on the line (`!worse("ttft_p95_ms",` breaks after the comma or
// the quote), else at the limit (at least one rune).
func cutAt(word string, limit int) int {
	width, at, punct := 0, len(word), -1
	for i, r := range word {
		rw := twwidth.Width(string(r))
		if width+rw > limit && i > 0 {
			at = i
			break
		}
		width += rw
		if strings.ContainsRune(",;:()[]{}\"'&|=.", r) && 2*width >= limit {
			punct = i + len(string(r))
		}
	}
	if at < len(word) && punct > 0 {
		return punct
	}
	return at
}

// wrapLine wraps a line of prose (a note, a warning) at width (0: never),
// keeping its leading spaces and indenting its continuation lines by indent.
func wrapLine(s string, width int, indent string) string {
	if width <= 0 || twwidth.Width(s) <= width {
		return s
	}
	lead := s[:len(s)-len(strings.TrimLeft(s, " "))]
	lines := strings.Split(wrapText(s, width-len(indent)), "\n")
	lines[0] = lead + lines[0]
	for i := 1; i < len(lines); i++ {
		lines[i] = indent + lines[i]
	}
	return strings.Join(lines, "\n")
}
