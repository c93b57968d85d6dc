package board

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/runnerbench/runner/result"
)

// nullCell is what a value the run does not have shows as (as in the run
// reports: zero is a real value).
const nullCell = "–"

// safeText makes untrusted text (labels, names, reasons) one safe line for
// any output: control characters (line breaks, escape sequences) and
// bidirectional overrides become U+FFFD. Labels that passed Labels.Check
// have none; a database's rows need not have.
func safeText(s string) string {
	if !strings.ContainsFunc(s, unsafeRune) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if unsafeRune(r) {
			return '\uFFFD'
		}
		return r
	}, s)
}

func unsafeRune(r rune) bool {
	return r < 0x20 || (r >= 0x7f && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// header is a metric's column header ("TTFT p95 (ms)").
func header(name string) string {
	if m, ok := result.MetricNamed(name); ok {
		return m.Header()
	}
	return name
}

// formatValue shows a metric's value as the run reports do: a share as a
// percentage with one decimal, a count whole, anything else with the
// report's rounding up to two decimals.
func formatValue(name string, v *float64) string {
	if v == nil {
		return nullCell
	}
	m, ok := result.MetricNamed(name)
	switch {
	case !ok:
		return strconv.FormatFloat(*v, 'f', 2, 64)
	case m.Percent():
		return strconv.FormatFloat(*v*100, 'f', 1, 64)
	case m.Integer():
		return strconv.FormatFloat(*v, 'f', 0, 64)
	case m.Decimals < 0:
		return strconv.FormatFloat(*v, 'f', 2, 64)
	}
	return strconv.FormatFloat(*v, 'f', min(m.Decimals, 2), 64)
}

// formatKey shows a row's ranking value: a capacity as the load it is, a
// metric as its column would.
func (g *Group) formatKey(r *Row) string {
	if r.Key == nil {
		return nullCell
	}
	if strings.HasPrefix(g.Rank, "capacity:") {
		return strconv.FormatFloat(*r.Key, 'f', -1, 64)
	}
	metric, _, _ := strings.Cut(g.Rank, " at ")
	return formatValue(metric, r.Key)
}

// showKey reports whether the ranking value needs a column of its own: not
// when it ranks by a metric shown anyway (the row's values are the ranked
// level's, so its column holds the key).
func (g *Group) showKey(metrics []string) bool {
	if strings.HasPrefix(g.Rank, "capacity:") {
		return true
	}
	metric, _, _ := strings.Cut(g.Rank, " at ")
	for _, m := range metrics {
		if m == metric {
			return false
		}
	}
	return true
}

// keyHeader is the ranking column's header.
func (g *Group) keyHeader() string {
	if name, ok := strings.CutPrefix(g.Rank, "capacity:"); ok {
		return "Capacity " + name
	}
	metric, where, _ := strings.Cut(g.Rank, " at ")
	h := "Best " + header(metric)
	if where != "" {
		h += " at " + where
	}
	return h
}

// placeCell is a row's place ("1", or "–" unranked).
func placeCell(r *Row) string {
	if r.Place == 0 {
		return nullCell
	}
	return strconv.Itoa(r.Place)
}

// vsAboveHeader heads the column of each ranked row's decision against the
// row above (Row.VsAbove).
const vsAboveHeader = "vs above"

// vsAboveCell is a row's decision against the ranked row above: the change
// of the key with its interval where decided, "tied", "undecided"; empty
// for the first ranked row and the rows not ranked.
func vsAboveCell(r *Row) string {
	d := r.VsAbove
	if d == nil {
		return ""
	}
	change := ""
	if d.Rel != nil {
		change = fmt.Sprintf("%+.1f%%", *d.Rel*100)
		if d.Interval != nil {
			change += fmt.Sprintf(" [%+.1f%%, %+.1f%%]", d.Interval.Lo*100, d.Interval.Hi*100)
		}
	}
	switch d.Verdict {
	case Decided:
		return strings.TrimSpace("decided " + change)
	case Tied:
		return Tied
	}
	return Undecided
}

// rowNote is what a reader must know of a row: why it is not ranked, and
// its note (its replicates' spread, why it has no key).
func rowNote(r *Row) string {
	var parts []string
	if r.Apart != "" {
		parts = append(parts, "not ranked: "+r.Apart)
	}
	if r.Note != "" {
		parts = append(parts, r.Note)
	}
	if d := r.VsAbove; d != nil && d.Verdict == Undecided && d.Reason != "" {
		parts = append(parts, "undecided against the run above: "+d.Reason)
	}
	return strings.Join(parts, "; ")
}

// levelCell is the row's level, marked when it carries a validity warning.
func levelCell(r *Row) string {
	if r.Level == "" {
		return nullCell
	}
	if r.Warned {
		return r.Level + " !"
	}
	return r.Level
}

// diagnosisCells are a row's knee and saturation cells (the null cell
// without them).
func diagnosisCells(r *Row) []string {
	out := []string{r.Knee, r.Saturation}
	for i, c := range out {
		if c == "" {
			out[i] = nullCell
		}
	}
	return out
}

// title names a group: its plan and stage.
func (g *Group) title() string { return g.Plan + " · " + g.Stage }

// frontierText lists a view's frontier runs with their levels:
// "a (c=1, c=8), b (c=4)".
func (v *View) frontierText() string {
	var parts []string
	for _, run := range v.FrontierRuns() {
		var lv []string
		for _, f := range v.Frontier {
			if f.Run == run {
				lv = append(lv, f.Level)
			}
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", run, strings.Join(lv, ", ")))
	}
	return strings.Join(parts, "; ")
}

// WriteJSON writes the board as board.json: indented, one object.
func WriteJSON(w io.Writer, b *Board) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(b); err != nil {
		return fmt.Errorf("encode board: %w", err)
	}
	return nil
}

// errWriter keeps the first write error, so a renderer checks once.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}
