package reporters

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/runnerbench/runner/diagnosis"
	"github.com/runnerbench/runner/internal/mdtext"
	"github.com/runnerbench/runner/internal/render/mdtable"
	"github.com/runnerbench/runner/reporters/compare"
	"github.com/runnerbench/runner/result"
)

// statusEmoji marks a check outcome on a pull-request page.
func statusEmoji(s string) string {
	switch s {
	case result.StatusPass:
		return "✅"
	case result.StatusFail:
		return "❌"
	case result.StatusWarn:
		return "⚠️"
	case result.StatusSkipped:
		return "⏭️"
	case result.StatusUndecided:
		return "❓"
	default:
		return "❔"
	}
}

// WriteMarkdown writes summary.md: the same stage tables, checks and verdict as
// the terminal table, as GitHub-flavoured Markdown for a pull request or the
// job summary page.
func WriteMarkdown(w io.Writer, r *result.Report) error {
	ew := &errWriter{w: w}
	t := count(r)
	v := verdictOf(r)
	title := "Runner"
	if r.Plan.Name != "" {
		title += ": " + mdText(r.Plan.Name)
	}
	ew.printf("## %s %s %s\n\n", statusEmoji(v), title, statusWord(v))
	ew.printf("**%s** — %s\n\n", statusWord(v), verdictText(r, t))
	for _, wmsg := range r.Warnings {
		ew.printf("> ⚠️ %s\n", mdText(wmsg))
	}
	if len(r.Warnings) > 0 {
		ew.printf("\n")
	}
	writeMDComparison(ew, r)
	for i := range r.Stages {
		writeMDStage(ew, &r.Stages[i])
	}
	if r.RunnerVersion != "" || !r.StartedAt.IsZero() {
		ew.printf("<sub>runner %s · started %s · plan hash `%s`%s</sub>\n",
			mdText(r.RunnerVersion), r.StartedAt.UTC().Format("2006-01-02 15:04:05Z"), mdCodeText(r.Plan.Hash), mdFacts(r))
	}
	return ew.err
}

// writeMDComparison writes the comparison with the baseline: its headline
// first, then what was judged worse or better and a line for the rest.
func writeMDComparison(ew *errWriter, r *result.Report) {
	head, rows, rest := comparisonLines(r)
	if head == "" {
		return
	}
	ew.printf("### Against the baseline `%s`\n\n%s\n\n", mdCodeText(r.Baseline), mdText(head))
	var b strings.Builder
	compare.MarkdownRows(&b, rows, true, mdText)
	if b.Len() > 0 {
		ew.printf("%s\n", b.String())
	}
	if rest != "" {
		ew.printf("%s\n\n", mdText(rest))
	}
}

// writeMDStage writes one stage: its title, its metric table, its notes
// (errors and warnings) and its checks.
func writeMDStage(ew *errWriter, st *result.Stage) {
	ew.printf("### Stage `%s`\n\n%s\n\n", mdCodeText(st.Name), mdText(stageTitle(st)))
	if st.Trace != nil {
		for _, f := range st.Trace.Facts() {
			ew.printf("- **%s**: %s\n", f[0], mdText(oneLine(f[1])))
		}
		ew.printf("\n")
	}
	if len(st.Points) > 0 {
		g := buildGrid(st)
		writeMDTable(ew, g.headers, mdRows(g.rows), g.textCols)
		if g.lowConf {
			ew.printf("\n%s low confidence: drawn from too few samples to mean much\n", mdText(lowConfMark))
		}
		ew.printf("\n")
	}
	for i := range st.Points {
		if title, headers, rows := seriesGrid(&st.Points[i]); rows != nil {
			ew.printf("%s\n\n", mdText(title))
			writeMDTable(ew, headers, mdRows(rows), 1)
			ew.printf("\n")
		}
	}
	if d := st.Diagnosis; d != nil {
		ew.printf("**Diagnosis:** %s\n\n%s\n\n", mdText(diagnosis.Headline(d)), mdText(strings.Join(d.Text, " ")))
	}
	writeMDNotes(ew, st)
	writeMDSearch(ew, st.Search)
	if len(st.Checks) > 0 {
		rows := make([][]string, 0, len(st.Checks))
		for j := range st.Checks {
			c := &st.Checks[j]
			rows = append(rows, []string{
				statusEmoji(c.Status) + " " + statusWord(c.Status),
				mdText(c.Name), mdText(levelLabel(c)), mdCode(oneLine(c.Expr)), mdMeasured(c),
			})
		}
		writeMDTable(ew, []string{"", "Check", "Level", "Expression", "Measured"}, rows, 5)
		ew.printf("\n")
	}
}

// writeMDSearch writes a capacity search's outcome: how it went, a row per
// target, and its notes.
func writeMDSearch(ew *errWriter, sr *result.SearchResult) {
	if sr == nil {
		return
	}
	ew.printf("%s\n\n", mdText(searchLine(sr)))
	headers, rows := searchGrid(sr)
	writeMDTable(ew, headers, mdRows(rows), 5)
	ew.printf("\n")
	notes := searchNotes(sr)
	for _, n := range notes {
		ew.printf("- ⚠️ %s\n", mdText(oneLine(n)))
	}
	if len(notes) > 0 {
		ew.printf("\n")
	}
}

// mdRows escapes every cell of a table of plain text.
func mdRows(rows [][]string) [][]string {
	out := make([][]string, len(rows))
	for j, row := range rows {
		out[j] = make([]string, len(row))
		for k, c := range row {
			out[j][k] = mdText(c)
		}
	}
	return out
}

// mdMeasured shows the values a check read as code (metric names keep their
// underscores readable in the raw file) and its message as text.
func mdMeasured(c *result.CheckOutcome) string {
	s := mdCode(formatValues(c.Values))
	if c.Message != "" {
		if s != "" {
			s += " "
		}
		s += mdText(oneLine(c.Message))
	}
	return s
}

// writeMDTable writes a GFM table (the kit's); the first textCols columns
// are left-aligned text, the rest right-aligned numbers. Cells must already
// be escaped.
func writeMDTable(ew *errWriter, headers []string, rows [][]string, textCols int) {
	if ew.err == nil {
		ew.err = mdtable.Write(ew.w, mdtable.Columns(headers, func(i int) bool { return i >= textCols }), rows)
	}
}

func mdText(s string) string { return mdtext.Text(s) }

func mdCodeText(s string) string { return mdtext.CodeText(s) }

func mdCode(s string) string { return mdtext.Code(s) }

// AppendGitHubStepSummary appends the Markdown summary of r to the file at
// path (the CLI passes $GITHUB_STEP_SUMMARY when it is set), creating it if
// needed. The summary is rendered first and written with one call, so a
// rendering error leaves the file untouched.
func AppendGitHubStepSummary(path string, r *result.Report) error {
	var buf bytes.Buffer
	if err := WriteMarkdown(&buf, r); err != nil {
		return err
	}
	buf.WriteString("\n")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("open step summary: %w", err)
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		_ = f.Close()
		return fmt.Errorf("append step summary: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close step summary: %w", err)
	}
	return nil
}

// mdFacts are the run's host and labels for the summary's last line (as
// code: labels are untrusted text); empty when it has neither.
func mdFacts(r *result.Report) string {
	s := ""
	if r.Host != "" {
		s += " · host " + mdCode(r.Host)
	}
	if len(r.Labels) > 0 {
		s += " · labels " + mdCode(r.Labels.String())
	}
	return s
}
