package reporters

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runnerbench/runner/result"
)

// searchFixture is a capacity search's report whose outcome package search
// computed from its probes: interactive found but not confident (c=7 stayed
// unclear over four probes), roomy holding at max, strict failing at min
// (each confirmed by a second probe), mid unresolved when the probe budget
// ran out.
func searchFixture(t testing.TB) *result.Report {
	t.Helper()
	return readFixture(t, filepath.Join("testdata", "search.json"))
}

// TestSearchInEveryTextReport: the terminal table, summary.md and junit.xml
// each show every target's capacity (or none), how sure the search is, its
// bracket and why it stopped.
func TestSearchInEveryTextReport(t *testing.T) {
	r := searchFixture(t)
	var md, junit bytes.Buffer
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteJUnit(&junit, r); err != nil {
		t.Fatal(err)
	}
	table := tableText(t, r)
	rows := map[string][]string{
		"interactive": {"6", "found, not confident", "c=6 (2 probes)", "c=7 (4 probes, unclear)", "3000.00"},
		"roomy":       {"≥ 16", "holds at max, confident", "c=16 (2 probes)", nullCell},
		"strict":      {nullCell, "fails at min, confident", nullCell, "c=1 (2 probes)"},
		"mid":         {nullCell, "unresolved", "c=8 (2 probes)", "c=16 (2 probes)"},
	}
	for target, cells := range rows {
		line := rowOf(table, target)
		for _, c := range cells {
			if !strings.Contains(line, c) {
				t.Errorf("table row %s lacks %q: %q", target, c, line)
			}
		}
		mdRow := "| " + target + " | " + strings.Join(cells[:2], " | ")
		if !strings.Contains(md.String(), mdRow) {
			t.Errorf("summary.md lacks %q", mdRow)
		}
		if !strings.Contains(junit.String(), `name="capacity / capacity search / `+target+`"`) {
			t.Errorf("junit.xml has no testcase for %s", target)
		}
	}
	line := "capacity search over concurrency 1–16, precision 1: 14 probes, 14.1 s measured; stopped: the probe budget ran out (budget 14 probes)"
	note := "interactive: c=7 stayed statistically unclear after 4 probes and was decided by its estimate"
	for name, doc := range map[string]string{"table": table, "summary.md": md.String(), "junit.xml": junit.String()} {
		if !strings.Contains(doc, line) || !strings.Contains(doc, "c=7 stayed statistically unclear after 4 probes") {
			t.Errorf("%s lacks the search line or the note", name)
		}
	}
	if !strings.Contains(table, "! "+note) || !strings.Contains(md.String(), "- ⚠️ "+note) {
		t.Error("the note is not marked as a warning")
	}
	if !strings.Contains(junit.String(), `<property name="search_stop" value="probe_budget">`) {
		t.Error("junit.xml lacks the search's stop property")
	}
	// Probes are levels, labelled in the order they ran.
	if rowOf(table, "probe 14 c=1") == "" || !strings.Contains(md.String(), "| probe 8 c=7 |") {
		t.Error("probe levels missing")
	}
}
