package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/olekukonko/tablewriter/pkg/twwidth"

	"github.com/runnerbench/runner/reporters"
)

// TestTableFitsTheTerminal: the terminal table of a run fits 100 columns
// when stdout is not a terminal, the terminal's width when it is, and with
// --wide is as wide as its content.
func TestTableFitsTheTerminal(t *testing.T) {
	root := t.TempDir()
	run := filepath.Join(root, "run")
	if code, _, errs := runCLI(t, nil, e2ePlan("gate.yaml"), "--out", run, "--quiet"); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, errs)
	}
	widest := func(out string) int {
		n := 0 // over the tables' lines: prose is the terminal's to wrap
		for _, l := range strings.Split(out, "\n") {
			if strings.ContainsAny(l[:min(len(l), 4)], "┌│├└") {
				n = max(n, twwidth.Width(l))
			}
		}
		return n
	}
	_, wide, _ := runCLI(t, nil, "report", run, "--out", filepath.Join(root, "a"), "--wide", "--report", "table")
	if widest(wide) <= reporters.DefaultWidth {
		t.Fatalf("--wide table is %d columns: the test needs one wider than %d", widest(wide), reporters.DefaultWidth)
	}
	_, piped, _ := runCLI(t, nil, "report", run, "--out", filepath.Join(root, "b"), "--report", "table")
	if w := widest(piped); w > reporters.DefaultWidth {
		t.Errorf("table to a pipe is %d columns, want at most %d:\n%s", w, reporters.DefaultWidth, piped)
	}
	env := &Env{StdoutIsTerminal: true, StdoutColumns: 80}
	if w := tableWidth(env, &RunOptions{}); w != 80 {
		t.Errorf("an 80-column terminal fits the table to %d", w)
	}
	if w := tableWidth(env, &RunOptions{Wide: true}); w != 0 {
		t.Errorf("--wide fits the table to %d, want 0 (its content's)", w)
	}
}
