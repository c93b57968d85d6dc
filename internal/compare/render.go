package compare

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/runnerbench/runner/result"
)

// mark is the verdict column: a change in the metric's worse direction is
// "worse", in its better direction "better"; informational metrics get none.
func (r Row) mark() string {
	switch {
	case r.Direction == result.Neutral || r.Delta == 0:
		return ""
	case r.Kind != result.KindServer:
		return "" // the client's own diagnostics: shown, never judged
	case r.Regression:
		return "worse"
	default:
		return "better"
	}
}

func fmtNum(v float64) string {
	return strconv.FormatFloat(v, 'f', -1, 64)
}

func fmtDelta(v float64) string {
	s := strconv.FormatFloat(v, 'f', 2, 64)
	if v > 0 {
		s = "+" + s
	}
	return s
}

func fmtRel(r *float64) string {
	if r == nil {
		return "–"
	}
	return fmt.Sprintf("%+.1f%%", *r*100)
}

// Text writes the comparison as terminal tables, one row per metric.
// With changedOnly, unchanged metrics are left out.
func Text(w io.Writer, res *Result, changedOnly bool) error {
	table := tablewriter.NewTable(w,
		tablewriter.WithHeader([]string{"stage", "level", "metric", "base", "new", "delta", "change", ""}),
		tablewriter.WithRowAlignmentConfig(tw.CellAlignment{PerColumn: []tw.Align{
			tw.AlignLeft, tw.AlignLeft, tw.AlignLeft, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignLeft,
		}}),
	)
	for _, r := range res.Rows {
		if changedOnly && r.Delta == 0 {
			continue
		}
		if err := table.Append([]string{r.Stage, r.Level, r.Metric, fmtNum(r.Base), fmtNum(r.New), fmtDelta(r.Delta), fmtRel(r.Rel), r.mark()}); err != nil {
			return err
		}
	}
	if err := table.Render(); err != nil {
		return err
	}
	for _, m := range res.Missing {
		if _, err := fmt.Fprintf(w, "note: %s\n", m); err != nil {
			return err
		}
	}
	return nil
}

// Markdown writes the comparison as a GitHub-flavoured table, ready for a pull
// request comment.
func Markdown(w io.Writer, res *Result, changedOnly bool, failAbove *float64) error {
	var b strings.Builder
	b.WriteString("## Runner comparison\n\n")
	if worst, ok := res.WorstRegression(); ok {
		fmt.Fprintf(&b, "Largest regression: **%s %s %s** %s (%s → %s).\n\n", worst.Stage, worst.Level, worst.Metric, fmtRel(worst.Rel), fmtNum(worst.Base), fmtNum(worst.New))
	} else {
		b.WriteString("No metric got worse.\n\n")
	}
	if failAbove != nil {
		if n := len(res.Regressions(*failAbove)); n > 0 {
			fmt.Fprintf(&b, "❌ %d metric(s) regressed by more than %s%%.\n\n", n, fmtNum(*failAbove))
		} else {
			fmt.Fprintf(&b, "✅ No regression larger than %s%%.\n\n", fmtNum(*failAbove))
		}
	}
	b.WriteString("| stage | level | metric | base | new | delta | change | |\n")
	b.WriteString("| --- | --- | --- | ---: | ---: | ---: | ---: | --- |\n")
	for _, r := range res.Rows {
		if changedOnly && r.Delta == 0 {
			continue
		}
		icon := map[string]string{"worse": "🔴 worse", "better": "🟢 better"}[r.mark()]
		fmt.Fprintf(&b, "| %s | %s | `%s` | %s | %s | %s | %s | %s |\n", mdEscape(r.Stage), r.Level, r.Metric, fmtNum(r.Base), fmtNum(r.New), fmtDelta(r.Delta), fmtRel(r.Rel), icon)
	}
	for _, m := range res.Missing {
		fmt.Fprintf(&b, "\n> note: %s", mdEscape(m))
	}
	if len(res.Missing) > 0 {
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
