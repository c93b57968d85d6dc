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

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/runnerbench/runner/comparison"
	"github.com/runnerbench/runner/result"
)

// Options say what to show.
type Options struct {
	// ChangedOnly leaves out what did not change (result.Comparison.Changed):
	// rows called same, equal values, changes without an interval, and what
	// is never judged.
	ChangedOnly bool
	// FailAbove is the gate's percentage (nil: no gate).
	FailAbove *float64
}

// verdictText is the verdict as a word; for what is never judged, why.
func verdictText(c *result.Comparison) string {
	if c.Verdict != "" {
		return c.Verdict
	}
	if m, ok := result.MetricNamed(c.Metric); ok && m.Kind == result.KindClient {
		return "client: not judged"
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
	return fmt.Sprintf("Intervals: %s for all %d gated comparisons together (%s each, Bonferroni); same = the whole interval within ±%s.",
		pctOf(s.Confidence), s.Gated, pctOf(s.Each), pctOf(s.Threshold))
}

func pctOf(f float64) string { return strconv.FormatFloat(f*100, 'g', 4, 64) + "%" }

// Text writes the comparison as a terminal table, one row per metric and
// level, then the notes.
func Text(w io.Writer, res *comparison.Result, o Options) error {
	if _, err := fmt.Fprintln(w, summaryLine(res.Summary)); err != nil {
		return err
	}
	table := tablewriter.NewTable(w,
		tablewriter.WithHeader([]string{"stage", "level", "metric", "base", "new", "change", "interval", "verdict", "samples or reason"}),
		tablewriter.WithRowAlignmentConfig(tw.CellAlignment{PerColumn: []tw.Align{
			tw.AlignLeft, tw.AlignLeft, tw.AlignLeft, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignLeft, tw.AlignLeft, tw.AlignLeft,
		}}),
	)
	for _, l := range res.Levels {
		for i := range l.Rows {
			c := &l.Rows[i]
			if o.ChangedOnly && !c.Changed(res.Summary.Records) {
				continue
			}
			why := c.Samples()
			if c.Reason != "" {
				why = c.Reason
			}
			if err := table.Append([]string{l.Stage, l.Label, c.Metric, fmtNum(c.Base), fmtNum(c.New), c.Change(), c.IntervalText(), verdictText(c), why}); err != nil {
				return err
			}
		}
	}
	if err := table.Render(); err != nil {
		return err
	}
	for _, n := range notes(res) {
		if _, err := fmt.Fprintf(w, "note: %s\n", n); err != nil {
			return err
		}
	}
	return nil
}

func notes(res *comparison.Result) []string {
	return append(append([]string{}, res.Notes...), res.Missing...)
}

// mdVerdict is a verdict as the comment shows it: worse and better in
// colour, same plain, inconclusive in italics with its reason, so the two
// cannot be mistaken for each other.
func mdVerdict(c *result.Comparison) string {
	switch c.Verdict {
	case "worse":
		return "🔴 **worse**"
	case "better":
		return "🟢 better"
	case "same":
		return "⚪ same"
	case "inconclusive":
		return "🟡 _inconclusive: " + mdEscape(c.Reason) + "_"
	}
	return verdictText(c)
}

// Markdown writes the comparison as a pull-request comment: the headline
// (the largest significant regression of a server metric), the gate, the
// verdict counts, and a table with each change's interval and verdict.
func Markdown(w io.Writer, res *comparison.Result, o Options) error {
	var b strings.Builder
	b.WriteString("## Runner comparison\n\n")
	if f, ok := res.WorstRegression(); ok {
		fmt.Fprintf(&b, "Largest significant regression: **%s %s `%s`** %s %s (%s → %s).\n\n",
			mdEscape(f.Stage), f.Label, f.Metric, f.Change(), f.IntervalText(), fmtNum(f.Base), fmtNum(f.New))
	} else {
		b.WriteString("No server metric is significantly worse.\n\n")
	}
	if o.FailAbove != nil {
		if n := len(res.Failures(*o.FailAbove)); n > 0 {
			fmt.Fprintf(&b, "❌ %d metric(s) significantly worse by more than %s%%.\n\n", n, strconv.FormatFloat(*o.FailAbove, 'f', -1, 64))
		} else {
			fmt.Fprintf(&b, "✅ No metric significantly worse by more than %s%%.\n\n", strconv.FormatFloat(*o.FailAbove, 'f', -1, 64))
		}
	}
	n := res.Count()
	fmt.Fprintf(&b, "%d worse, %d better, %d same, %d inconclusive. %s\n\n", n["worse"], n["better"], n["same"], n["inconclusive"], summaryLine(res.Summary))
	b.WriteString("| stage | level | metric | base | new | change | interval | verdict |\n")
	b.WriteString("| --- | --- | --- | ---: | ---: | ---: | --- | --- |\n")
	for _, l := range res.Levels {
		for i := range l.Rows {
			c := &l.Rows[i]
			if o.ChangedOnly && !c.Changed(res.Summary.Records) {
				continue
			}
			fmt.Fprintf(&b, "| %s | %s | `%s` | %s | %s | %s | %s | %s |\n", mdEscape(l.Stage), l.Label, c.Metric,
				fmtNum(c.Base), fmtNum(c.New), c.Change(), c.IntervalText(), mdVerdict(c))
		}
	}
	for _, m := range notes(res) {
		fmt.Fprintf(&b, "\n> note: %s\n", mdEscape(m))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
