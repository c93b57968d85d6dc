// Package compare writes a comparison of two runs (package comparison) for
// people: the terminal table of `runner compare`, and the Markdown of a
// pull-request comment. Every change is shown with its interval and verdict,
// inconclusive set apart from same, and the client's own diagnostics marked
// as not judged.
package compare

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/runnerbench/runner/comparison"
	"github.com/runnerbench/runner/internal/mdtext"
	"github.com/runnerbench/runner/internal/render/mdtable"
	"github.com/runnerbench/runner/internal/render/termtable"
	"github.com/runnerbench/runner/result"
)

// Options say what to show.
type Options struct {
	// All shows every row; without it only what was judged worse or better
	// is, and one line counts the rest.
	All bool
	// FailAbove is the gate's percentage (nil: no gate).
	FailAbove *float64
	// Family is the gate's family (nil: every failure fails).
	Family *comparison.Family
	// Width is the widest the terminal table may be (0: as wide as its
	// content): the reasons wrap, then, narrower, each row becomes a list.
	Width int
}

// Gate splits the comparisons that fail the gate at pct into those that
// fail it and those a warn-severity worse() only warns about.
func Gate(res *comparison.Result, pct float64, fam *comparison.Family) (fail, warn []comparison.Finding) {
	for _, f := range res.Failures(pct) {
		if fam != nil && fam.WarnOnly(f.Stage, f.Metric) {
			warn = append(warn, f)
		} else {
			fail = append(fail, f)
		}
	}
	return fail, warn
}

// verdictText is the verdict as a word; for what is never judged, why.
func verdictText(c *result.Comparison) string {
	if c.Verdict != "" {
		return c.Verdict
	}
	if m, ok := result.MetricNamed(c.Metric); ok && (m.Kind == result.KindClient || m.Kind == result.KindDiagnostic) {
		return m.Kind.String() + ": not judged"
	}
	if c.Reason == comparison.NotGated {
		return "not gated"
	}
	return "not judged"
}

func fmtNum(v *float64) string {
	if v == nil {
		return "–"
	}
	return strconv.FormatFloat(*v, 'f', -1, 64)
}

// summaryLine says what the intervals and verdicts mean.
func summaryLine(s result.ComparisonSummary) string {
	if !s.Records {
		return "No intervals: a run's request records are missing (see the notes)."
	}
	return fmt.Sprintf("Intervals: %s for all %d gated comparisons with an interval together (%s each, Bonferroni); same = the whole interval within ±%s.",
		pctOf(s.Confidence), s.Intervals, pctOf(s.Each), pctOf(s.Threshold))
}

func pctOf(f float64) string { return strconv.FormatFloat(f*100, 'g', 4, 64) + "%" }

// gateLine is the gate's answer in one line ("" without a gate), and
// whether it failed.
func gateLine(res *comparison.Result, o Options) (string, bool) {
	if o.FailAbove == nil {
		return "", false
	}
	at := strconv.FormatFloat(*o.FailAbove, 'f', -1, 64) + "%"
	fail, warn := Gate(res, *o.FailAbove, o.Family)
	s := res.Summary
	var line string
	switch {
	case len(fail) > 0:
		line = fmt.Sprintf("❌ %d metric(s) significantly worse by more than %s.", len(fail), at)
	case s.Blind():
		line = fmt.Sprintf("🟡 The gate at %s could judge nothing: every gated comparison is inconclusive, so passing it says nothing.", at)
	case !s.Records:
		line = fmt.Sprintf("🟡 The gate at %s cannot fail: without a run's request records no change has an interval (see the notes).", at)
	case s.Unmatched > 0:
		line = fmt.Sprintf("✅ No gated metric significantly worse by more than %s, in the %d of %d levels with a baseline level.", at, s.Levels, s.Levels+s.Unmatched)
	default:
		line = fmt.Sprintf("✅ No gated metric significantly worse by more than %s.", at)
	}
	if len(warn) > 0 {
		line += fmt.Sprintf(" ⚠️ %d more worse by more than %s that the plan's worse() checks only warn about.", len(warn), at)
	}
	return line, len(fail) > 0
}

// Text writes the comparison for a terminal: its headline first, the gate,
// a table of what was judged worse or better (every row with All), most
// important first, a line for the rest, then the notes.
func Text(w io.Writer, res *comparison.Result, o Options) error {
	var b strings.Builder
	b.WriteString(res.Summary.Headline() + "\n")
	if g, _ := gateLine(res, o); g != "" {
		b.WriteString(g + "\n")
	}
	rows, rest := res.Shown(o.All)
	if len(rows) > 0 {
		cells := make([][]string, len(rows))
		for i, f := range rows {
			c := &f.Comparison
			why := c.Samples()
			if c.Reason != "" {
				why = c.Reason
			}
			cells[i] = []string{f.Stage, f.Label, c.Metric, fmtNum(c.Base), fmtNum(c.New), c.Change(), c.IntervalText(), verdictText(c), why}
		}
		l, r := termtable.Left, termtable.Right
		t := termtable.Table{Headers: []string{"Stage", "Level", "Metric", "Base", "New", "Change", "Interval", "Verdict", "Samples or reason"},
			Rows: cells, Aligns: []termtable.Align{l, l, l, r, r, r, l, l, l}, Wrap: []int{8}, WrapLast: []int{0}}
		if err := termtable.Write(&b, t, o.Width); err != nil {
			return err
		}
	} else {
		b.WriteString("No gated metric was judged worse or better.\n")
	}
	if l := comparison.RestLine(rest, "--all"); l != "" {
		b.WriteString(l + "\n")
	}
	b.WriteString(summaryLine(res.Summary) + "\n")
	for _, l := range res.Limits {
		b.WriteString("limit: " + l + "\n")
	}
	for _, n := range notes(res) {
		b.WriteString("note: " + n + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func notes(res *comparison.Result) []string {
	return append(append([]string{}, res.Notes...), res.Missing...)
}

// mdVerdict is a verdict as the comment shows it: worse and better in
// colour, same plain, inconclusive in italics with its reason, so the two
// cannot be mistaken for each other.
func mdVerdict(c *result.Comparison, esc func(string) string) string {
	switch c.Verdict {
	case "worse":
		return "🔴 **worse**"
	case "better":
		return "🟢 better"
	case "same":
		return "⚪ same"
	case "inconclusive":
		return "🟡 _inconclusive: " + esc(c.Reason) + "_"
	}
	return verdictText(c)
}

// Markdown writes the comparison as a pull-request comment: the headline
// as its first line, the largest significant regression, the gate, a table
// of what was judged worse or better (every row with All), a line for the
// rest, and the notes.
func Markdown(w io.Writer, res *comparison.Result, o Options) error {
	var b strings.Builder
	fmt.Fprintf(&b, "## Runner comparison: %s\n\n", headlineEscape(res.Summary.Headline()))
	if f, ok := res.WorstRegression(); ok {
		fmt.Fprintf(&b, "Largest significant regression: **%s %s `%s`** %s %s (%s → %s).\n\n",
			mdEscape(f.Stage), f.Label, f.Metric, f.Change(), f.IntervalText(), fmtNum(f.Base), fmtNum(f.New))
	} else {
		b.WriteString("No gated metric is significantly worse.\n\n")
	}
	if g, _ := gateLine(res, o); g != "" {
		b.WriteString(g + "\n\n")
	}
	rows, rest := res.Shown(o.All)
	MarkdownRows(&b, rows, true, mdEscape)
	if len(rows) > 0 {
		b.WriteString("\n")
	}
	if l := comparison.RestLine(rest, "--all"); l != "" {
		b.WriteString(l + "\n\n")
	}
	b.WriteString(summaryLine(res.Summary) + "\n")
	for _, l := range res.Limits {
		fmt.Fprintf(&b, "\n**Limit changed**: %s\n", mdEscape(l))
	}
	for _, m := range notes(res) {
		fmt.Fprintf(&b, "\n> note: %s\n", mdEscape(m))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// MarkdownRows writes rows as a Markdown table (the kit's; nothing when
// there are none), with a stage column when stage is set; esc escapes the
// text that comes from the plan and the records (stage names, reasons).
func MarkdownRows(b *strings.Builder, rows []comparison.Finding, stage bool, esc func(string) string) {
	if len(rows) == 0 {
		return
	}
	heads := []string{"level", "metric", "base", "new", "change", "interval", "verdict"}
	if stage {
		heads = append([]string{"stage"}, heads...)
	}
	right := func(i int) bool { h := heads[i]; return h == "base" || h == "new" || h == "change" }
	cells := make([][]string, len(rows))
	for i, f := range rows {
		c := &f.Comparison
		cells[i] = []string{f.Label, "`" + c.Metric + "`", fmtNum(c.Base), fmtNum(c.New), c.Change(), c.IntervalText(), mdVerdict(c, esc)}
		if stage {
			cells[i] = append([]string{esc(f.Stage)}, cells[i]...)
		}
	}
	_ = mdtable.Write(b, mdtable.Columns(heads, right), cells) // a strings.Builder does not fail
}

// mdEscape makes untrusted text (a plan's stage names, notes naming them)
// inert in Markdown.
func mdEscape(s string) string { return mdtext.Text(s) }

// headlineEscape keeps the first line as CI logs grep it: it holds only
// counts, validated metric names and the runner's own words, so only a pipe
// (none today) would need escaping.
func headlineEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
