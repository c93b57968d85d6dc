package termtable

import (
	"bytes"
	"strings"
	"testing"

	"github.com/olekukonko/tablewriter/pkg/twwidth"
)

func TestWrapText(t *testing.T) {
	for _, c := range []struct {
		in    string
		limit int
		want  string
	}{
		{"a bb ccc dddd", 6, "a bb\nccc\ndddd"},
		{"abcdefghij", 4, "abcd\nefgh\nij"},
		{"x  y", 10, "x y"},
	} {
		if got := wrapText(c.in, c.limit); got != c.want {
			t.Errorf("wrapText(%q, %d) = %q, want %q", c.in, c.limit, got, c.want)
		}
	}
	if got := wrapHeaders([]string{"TTFT p95 (ms)", "Level"}); got[0] != "TTFT p95\n(ms)" || got[1] != "Level" {
		t.Errorf("wrapHeaders: %q", got)
	}
}

// TestHeadersAsWritten: headers keep their case ("TTFT p95 (ms)", not
// "TTFT P95 (MS)"), text left and numbers right.
func TestHeadersAsWritten(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, Table{Headers: []string{"Stage", "TTFT p95 (ms)"}, Rows: [][]string{{"a", "1.5"}, {"bb", "12.25"}}, TextCols: 1}, 0); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "TTFT p95 (ms)") || strings.Contains(out, "STAGE") {
		t.Errorf("headers changed:\n%s", out)
	}
	if !strings.Contains(out, "│ a     │           1.5 │") {
		t.Errorf("not text left, numbers right:\n%s", out)
	}
}

// TestKeptColumnsWrapThenSplit: a table with name columns to keep and a
// long name column to wrap fits its width by wrapping the name, then by
// splitting its numbers into parts that each repeat the kept columns; no
// value is lost.
func TestKeptColumnsWrapThenSplit(t *testing.T) {
	heads := []string{"#", "Run", "Level", "Out tok/s", "TTFT p95 (ms)", "TPOT p50 (ms)", "Failed", "Verdict"}
	rows := [][]string{
		{"1", "engine=alpha gpus=1 2026-12-01 19:47:05Z night-2 with a long note", "c=8", "4692.90", "12.92", "0.95", "0", "pass"},
		{"2", "engine=beta", "c=8", "1433.71", "44.72", "2.97", "0", "fail"},
	}
	tb := Table{Headers: heads, Rows: rows, TextCols: 3, Keep: 3, Wrap: []int{1}}
	for _, width := range []int{0, 80, 50} {
		var b bytes.Buffer
		if err := Write(&b, tb, width); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		for _, l := range strings.Split(out, "\n") {
			if width > 0 && twwidth.Width(l) > width {
				t.Errorf("width %d: a line of %d columns: %q", width, twwidth.Width(l), l)
			}
		}
		flat := strings.Join(strings.Fields(strings.NewReplacer("│", " ", "\n", " ").Replace(out)), " ")
		for _, v := range []string{"4692.90", "44.72", "2.97", "pass", "fail", "night-2", "engine=beta"} {
			if !strings.Contains(flat, v) {
				t.Errorf("width %d: %q lost:\n%s", width, v, out)
			}
		}
		if width == 50 && strings.Count(out, "┌") < 2 {
			t.Errorf("width 50: not split into parts:\n%s", out)
		}
	}
}
