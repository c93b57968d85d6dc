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
