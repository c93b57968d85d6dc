package reporters

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runnerbench/runner/result"
)

func mdOf(t *testing.T, r *result.Report) string {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteMarkdown(&buf, r); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestMarkdownContent(t *testing.T) {
	out := mdOf(t, fixture(t))
	for _, want := range []string{
		"## ❌ Runner: ci-smoke FAIL",
		"5 passed, 4 failed, 2 warned, 1 skipped",
		"| Level | OK/Failed | Out tok/s |",
		"| --- | --- | ---: |",
		"| ✅ PASS | no failures | c=1 | `failed == 0` | `failed=0` |",
		"| ❌ FAIL |", "| ⚠️ WARN |", "| ⏭️ SKIP |",
		"- ❌ stage error: interrupted before the stage started",
		`\~44.90`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary.md lacks %q", want)
		}
	}
}

// TestMarkdownTablesKeepTheirShape: every row of every table has as many cells
// as its header, whatever the names and expressions hold (a "||" in an
// expression must not add cells).
func TestMarkdownTablesKeepTheirShape(t *testing.T) {
	r := fixture(t)
	r.Stages[0].Checks[0].Name = "pipes | in | name"
	r.Stages[0].Checks[0].Expr = "a || b | c"
	r.Stages[0].Endpoint.Model = "org/model|<script>"
	out := mdOf(t, r)
	if strings.Contains(out, "<script>") {
		t.Error("raw HTML from a model name reached summary.md")
	}
	cells := func(line string) int {
		return strings.Count(strings.ReplaceAll(line, `\|`, ""), "|") - 1
	}
	want := -1
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "|") {
			want = -1
			continue
		}
		if want < 0 {
			want = cells(line)
			continue
		}
		if got := cells(line); got != want {
			t.Errorf("row has %d cells, header %d: %q", got, want, line)
		}
	}
}

func TestAppendGitHubStepSummary(t *testing.T) {
	path := filepath.Join(t.TempDir(), "step_summary.md")
	if err := os.WriteFile(path, []byte("earlier step\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := fixture(t)
	for range 2 {
		if err := AppendGitHubStepSummary(path, r); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	md := mdOf(t, r)
	if want := "earlier step\n" + md + "\n" + md + "\n"; string(got) != want {
		t.Errorf("step summary not appended as expected:\n%s", got)
	}
	if err := AppendGitHubStepSummary(filepath.Join(t.TempDir(), "no", "such", "dir", "f"), r); err == nil {
		t.Error("want an error for an unwritable path")
	}
}
