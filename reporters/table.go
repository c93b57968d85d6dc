package reporters

import (
	"fmt"
	"io"
	"strings"

	"github.com/runnerbench/runner/diagnosis"
	"github.com/runnerbench/runner/internal/render/termtable"
	"github.com/runnerbench/runner/result"
)

// TableOptions control the terminal table.
type TableOptions struct {
	// Color turns on ANSI colours for statuses and the verdict. The CLI sets it
	// only when stdout is a terminal and NO_COLOR is unset; the table never
	// sniffs the file it writes to, so tests and pipes get plain text.
	Color bool
	// Width is the widest a table may be, in columns: tables are narrowed
	// to it (internal/render/termtable: headers on two lines, long text
	// wrapped or listed below, a table of numbers split into parts); prose
	// lines are not broken. 0: as wide as the content (the CLI's --wide).
	Width int
}

// DefaultWidth is the width the CLI fits the terminal tables to when stdout
// is not a terminal (a pipe, a CI log): termtable's, for every command.
const DefaultWidth = termtable.DefaultWidth

// ANSI SGR sequences; kept to the eight basic colours every terminal has.
const (
	ansiReset  = "\x1b[0m"
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiDim    = "\x1b[2m"
	ansiBold   = "\x1b[1m"
)

func paint(on bool, code, s string) string {
	if !on {
		return s
	}
	return code + s + ansiReset
}

func statusColor(s string) string {
	switch s {
	case result.StatusPass:
		return ansiGreen
	case result.StatusFail:
		return ansiRed
	case result.StatusWarn, result.StatusUndecided:
		return ansiYellow
	default:
		return ansiDim
	}
}

// WriteTable prints the run for a person at a terminal: per stage a title
// line, a table with one row per level, the level's warnings under it, then the
// checks table and a final verdict line.
func WriteTable(w io.Writer, r *result.Report, opts TableOptions) error {
	ew := &errWriter{w: w}
	if r.Plan.Name != "" {
		ew.printf("%s\n\n", paint(opts.Color, ansiBold, "Plan "+r.Plan.Name))
	}
	for i := range r.Stages {
		st := &r.Stages[i]
		ew.println(paint(opts.Color, ansiBold, "Stage "+st.Name) + "  " + stageTitle(st))
		if st.Trace != nil {
			for _, f := range st.Trace.Facts() {
				ew.println("  " + f[0] + ": " + oneLine(f[1]))
			}
		}
		if len(st.Points) > 0 {
			g := buildGrid(st)
			if err := termtable.Write(ew, termtable.Table{Headers: g.headers, Rows: g.rows, TextCols: g.textCols, Keep: 2}, opts.Width); err != nil {
				return fmt.Errorf("render stage %q table: %w", st.Name, err)
			}
			if g.lowConf {
				ew.printf("  %s low confidence: drawn from too few samples to mean much\n", lowConfMark)
			}
		}
		for i := range st.Points {
			if title, headers, rows := seriesGrid(&st.Points[i]); rows != nil {
				ew.println("  " + oneLine(title))
				if err := termtable.Write(ew, termtable.Table{Headers: headers, Rows: rows, TextCols: 1}, opts.Width); err != nil {
					return fmt.Errorf("render stage %q series: %w", st.Name, err)
				}
			}
		}
		if d := st.Diagnosis; d != nil {
			ew.println("  " + paint(opts.Color, ansiBold, "Diagnosis: "+diagnosis.Headline(d)+".") + " " + strings.Join(d.Text, " "))
		}
		writeStageNotes(ew, st, opts)
		if err := writeSearchTable(ew, st.Search, opts); err != nil {
			return fmt.Errorf("render stage %q search: %w", st.Name, err)
		}
		ew.printf("\n")
	}

	if head, rows, rest := comparisonLines(r); head != "" {
		ew.printf("%s\n%s\n", paint(opts.Color, ansiBold, "Against the baseline "+r.Baseline), head)
		for _, f := range rows {
			ew.printf("  %s %s %s: %s\n", f.Stage, f.Label, f.Metric, f.Describe())
		}
		if rest != "" {
			ew.printf("%s\n", rest)
		}
		ew.printf("\n")
	}
	if checks := checkRows(r, opts.Color); len(checks) > 0 {
		ew.printf("%s\n", paint(opts.Color, ansiBold, "Checks"))
		// Colour codes in the status cell are not counted in its width by
		// tablewriter's display-width measure, so columns stay aligned.
		// Too wide (a worse() check measures many metrics), the expression
		// and measured values wrap inside their cells, then the check's name.
		t := termtable.Table{Headers: []string{"Status", "Stage", "Check", "Level", "Expression", "Measured"}, Rows: checks,
			Aligns: []termtable.Align{termtable.Left}, Wrap: []int{4, 5}, WrapLast: []int{2}}
		if err := termtable.Write(ew, t, opts.Width); err != nil {
			return fmt.Errorf("render checks table: %w", err)
		}
		ew.printf("\n")
	}
	for _, wmsg := range r.Warnings {
		ew.println("! " + wmsg)
	}
	writeVerdict(ew, r, opts.Color)
	return ew.err
}

// WriteVerdict prints the verdict line alone ("PASS: 6 passed, 0 failed,
// ..."), the table's last line: what --quiet prints.
func WriteVerdict(w io.Writer, r *result.Report, color bool) error {
	ew := &errWriter{w: w}
	writeVerdict(ew, r, color)
	return ew.err
}

func writeVerdict(ew *errWriter, r *result.Report, color bool) {
	v := verdictOf(r)
	ew.println(paint(color, ansiBold+statusColor(v), statusWord(v)) + ": " + verdictText(r, count(r)))
}

// writeStageNotes prints what a reader must know before trusting the numbers:
// the stage's error, each level's first failure and warnings, stage warnings.
func writeStageNotes(ew *errWriter, st *result.Stage, opts TableOptions) {
	color := opts.Color
	for _, n := range stageNotes(st) {
		switch n.kind {
		case noteStageError:
			ew.println("  " + paint(color, ansiRed, "✗") + " stage error: " + n.text)
		case noteFailure:
			ew.println("  " + paint(color, ansiRed, "✗") + " " + n.label + ": " + n.what + ": " + n.text)
		case noteHint:
			ew.println("    " + n.text)
		case noteWarning:
			ew.println("  " + paint(color, ansiYellow, "!") + " " + n.label + ": " + n.text)
		case noteInfo:
			ew.printf("  %s\n", paint(color, ansiDim, "· "+n.label+": "+n.text))
		case noteStageWarning:
			ew.println("  " + paint(color, ansiYellow, "!") + " " + n.text)
		case noteStop:
			ew.println("  ■ " + stopLine(n))
		}
	}
}

// writeSearchTable prints a capacity search's outcome under its stage: how
// it went, a row per target, and its notes.
func writeSearchTable(ew *errWriter, sr *result.SearchResult, opts TableOptions) error {
	if sr == nil {
		return nil
	}
	ew.printf("\n")
	ew.println("  " + searchLine(sr))
	headers, rows := searchGrid(sr)
	// Too narrow for the table, each target is listed: its name, then every
	// other column below it, labelled (its figures at capacity were once
	// a line of bare numbers).
	below := make([]int, 0, len(headers)-1)
	for c := 1; c < len(headers); c++ {
		below = append(below, c)
	}
	if err := termtable.Write(ew, termtable.Table{Headers: headers, Rows: rows, TextCols: 5, Wrap: []int{0, 1, 2, 3, 4}, Below: below}, opts.Width); err != nil {
		return err
	}
	for _, n := range searchNotes(sr) {
		ew.println("  " + paint(opts.Color, ansiYellow, "!") + " " + oneLine(n))
	}
	return nil
}

func checkRows(r *result.Report, color bool) [][]string {
	var rows [][]string
	for i := range r.Stages {
		st := &r.Stages[i]
		for j := range st.Checks {
			c := &st.Checks[j]
			rows = append(rows, []string{
				paint(color, statusColor(c.Status), statusWord(c.Status)),
				st.Name, c.Name, levelLabel(c), oneLine(c.Expr), oneLine(measured(c)),
			})
		}
	}
	return rows
}

// oneLine keeps a multi-line message from breaking a table or a list.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n\t") {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}

// errWriter remembers the first write error so the printing code stays linear.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	if err != nil {
		e.err = err
	}
	return n, err
}

// println prints a line of prose (a note, a warning, the verdict). It is
// never broken, whatever width the tables are fitted to: a terminal wraps
// prose well by itself, and a log is searched for its phrases.
func (e *errWriter) println(s string) {
	e.printf("%s\n", s)
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err != nil {
		return
	}
	_, _ = fmt.Fprintf(e, format, args...)
}

// UseColor decides TableOptions.Color the conventional way: only on a
// terminal, and never when NO_COLOR is set to a non-empty value
// (https://no-color.org).
// lookupEnv is os.LookupEnv in the CLI, a map in tests.
func UseColor(isTerminal bool, lookupEnv func(string) (string, bool)) bool {
	if !isTerminal {
		return false
	}
	if lookupEnv != nil {
		if v, _ := lookupEnv("NO_COLOR"); v != "" {
			return false
		}
	}
	return true
}
