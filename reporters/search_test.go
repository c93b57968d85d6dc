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

// TestSearchAndNotesAt100Columns: at the 100 columns a pipe gets, a
// capacity search's targets too wide for their table are listed with every
// figure labelled (the figures at capacity were once a line of bare
// numbers under the summary), and a note every probe carries word for word
// (how server latencies are read: 14 times in this search) is said once
// for the stage, in the terminal and in summary.md.
func TestSearchAndNotesAt100Columns(t *testing.T) {
	r := searchFixture(t)
	const same = "server_* latencies come from the server's own histograms over the window"
	st := &r.Stages[0]
	for i := range st.Points {
		st.Points[i].Notes = append(st.Points[i].Notes, same)
	}
	st.Points[1].Notes = append(st.Points[1].Notes, "a note of one level")
	var b bytes.Buffer
	if err := WriteTable(&b, r, TableOptions{Width: DefaultWidth}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	search := out[strings.Index(out, "capacity search over"):]
	search = search[:strings.Index(search, "\n\n")]
	for _, l := range strings.Split(search, "\n") {
		if strings.TrimSpace(strings.Trim(l, "0123456789.–~ ")) == "" {
			t.Errorf("an unlabelled line under the search: %q\n%s", l, search)
		}
	}
	if !strings.Contains(search, "Out tok/s at capacity: 3000.00") {
		t.Errorf("the figures at capacity are not labelled:\n%s", search)
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	for name, doc := range map[string]string{"table": out, "summary.md": md.String()} {
		same := same
		if name == "summary.md" {
			same = mdText(same)
		}
		if n := strings.Count(doc, same); n != 1 || !strings.Contains(doc, "every level: "+same) {
			t.Errorf("%s: the note every level carries is said %d times, want once for every level", name, n)
		}
		if !strings.Contains(doc, st.Points[1].Label()+": a note of one level") {
			t.Errorf("%s: a level's own note lost its level", name)
		}
	}
}
