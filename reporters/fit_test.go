package reporters

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/olekukonko/tablewriter/pkg/twwidth"

	"github.com/runnerbench/runner/internal/render/termtable"
	"github.com/runnerbench/runner/result"
)

// worseCheck is a check gating six metrics with worse(), measured against
// a baseline: its expression and measured values were a 330-column row.
func worseCheck() result.CheckOutcome {
	var e, msg []string
	for _, m := range []string{"ttft_p95_ms", "tpot_p50_ms", "itl_p99_ms", "e2e_p95_ms", "output_tps_total", "failed"} {
		e = append(e, `!worse("`+m+`", 10)`)
		msg = append(msg, m+": +12.3% [+4.1%, +20.9%] worse")
	}
	return result.CheckOutcome{Name: "no regression against the baseline", Expr: strings.Join(e, " && "), Scope: "level",
		Severity: "fail", LevelLabel: "c=8", Status: result.StatusFail, Message: strings.Join(msg, "; ")}
}

// TestTableFitsItsWidth: at a terminal's width every table fits (prose is
// left for the terminal to wrap), and nothing is lost to fit it: every word of the
// long check, every level and every value is still there. With Width 0
// (--wide) it is as wide as its content.
func TestTableFitsItsWidth(t *testing.T) {
	r := fixture(t)
	wc := worseCheck()
	r.Stages[0].Checks = append(r.Stages[0].Checks, wc)
	var wide bytes.Buffer
	if err := WriteTable(&wide, r, TableOptions{}); err != nil {
		t.Fatal(err)
	}
	if termtable.Widest(wide.Bytes()) < 300 {
		t.Fatalf("the wide table is %d columns: the test needs the wide check", termtable.Widest(wide.Bytes()))
	}
	for _, width := range []int{72, DefaultWidth, 140} {
		var b bytes.Buffer
		if err := WriteTable(&b, r, TableOptions{Width: width}); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		checks := false // in the checks section, a table or (narrower) a list
		for i, line := range strings.Split(out, "\n") {
			checks = line == "Checks" || checks && line != ""
			table := strings.ContainsAny(line[:min(len(line), 4)], "┌│├└")
			if w := twwidth.Width(line); w > width && (table || checks) {
				t.Errorf("width %d: line %d is %d columns: %q", width, i+1, w, line)
			}
		}
		texts := cellTexts(out)
		for _, long := range []string{wc.Expr, wc.Message} {
			if !slices.ContainsFunc(texts, func(s string) bool { return strings.Contains(s, noSpace(long)) }) {
				t.Errorf("width %d: %q of the worse() check is not whole in any cell or line", width, long)
			}
		}
		for _, p := range r.Stages[1].Points {
			if row := cells(out, p.Label()); row < 2 {
				t.Errorf("width %d: level %s is in %d table parts, want every part (2 or more at this width)", width, p.Label(), row)
			}
		}
		for _, want := range []string{"1634.12", "188.31", "Goodput", "96.2", "stopped: interrupted"} {
			if !strings.Contains(out, want) {
				t.Errorf("width %d: %q is missing", width, want)
			}
		}
	}
}

// cellTexts is what out holds, without spaces: each table cell's text
// joined across its wrapped lines, and the whole output (a list's values,
// wrapped onto indented lines).
func cellTexts(out string) []string {
	texts := []string{noSpace(out)}
	var group []string
	flush := func() {
		texts = append(texts, group...)
		group = nil
	}
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "│") {
			flush()
			continue
		}
		cells := strings.Split(strings.Trim(line, "│"), "│")
		if strings.TrimSpace(cells[0]) != "" || len(cells) != len(group) {
			flush()
			group = make([]string, len(cells))
		}
		for i, c := range cells {
			group[i] += noSpace(c)
		}
	}
	flush()
	return texts
}

func noSpace(s string) string { return strings.Join(strings.Fields(s), "") }

// cells counts the table rows that start with label.
func cells(out, label string) int {
	n := 0
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "│ "+label+" ") {
			n++
		}
	}
	return n
}

// TestQuickstartTableIsOneBlock: the level table of the quickstart (ten
// columns: the default ones and prefill) at the 100 columns a pipe gets is
// one table, its headers a word a line, not split into a second block
// repeating the level and its counts. Its values are the quickstart's on
// the built-in simulator.
func TestQuickstartTableIsOneBlock(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	st := result.Stage{Name: "sweep", API: "chat", Mode: "pinned", Load: result.LoadConcurrency}
	for _, c := range []struct {
		c, n                                           int
		tps, stream, t50, t95, tpot, itl, e2e, prefill float64
	}{
		{1, 20, 346.94, 366.41, 23.99, 79.92, 2.19, 8.28, 335.06, 3749.5},
		{4, 40, 996.20, 267.42, 54.50, 80.54, 2.65, 23.16, 409.67, 2521.3},
		{16, 80, 2328.97, 173.99, 92.72, 134.04, 3.15, 52.40, 670.50, 1393.1},
	} {
		st.Points = append(st.Points, result.Point{Concurrency: c.c, NRequests: c.n, Completed: c.n, OutputTPSTotal: c.tps, OutputTPSPerStream: c.stream,
			TTFTP50Ms: f(c.t50), TTFTP95Ms: f(c.t95), TPOTP50Ms: f(c.tpot), ITLP99Ms: f(c.itl), E2EP95Ms: f(c.e2e), PrefillTPS: f(c.prefill)})
	}
	var b bytes.Buffer
	if err := WriteTable(&b, &result.Report{Stages: []result.Stage{st}}, TableOptions{Width: DefaultWidth}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	wide := 0
	for _, l := range strings.Split(out, "\n") {
		wide = max(wide, twwidth.Width(l))
	}
	if n := strings.Count(out, "┌"); n != 1 || wide > DefaultWidth || !strings.Contains(out, "Prefill") || !strings.Contains(out, "1393.1") {
		t.Errorf("%d tables, %d columns wide:\n%s", n, wide, out)
	}
}
