package board

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/olekukonko/tablewriter/pkg/twwidth"

	"github.com/runnerbench/runner/internal/render/termtable"
	"github.com/runnerbench/runner/records"
)

var (
	update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")
	regen  = flag.Bool("regen", false, "rerun the fixture runs under testdata/results against the simulator (then -update)")
)

// fixtures is testdata/results: real result directories from runs of small
// plans against the built-in simulator (recorded once with -regen, so the
// golden files stay put), and the broken directories a board must skip or
// set apart.
const fixtures = "testdata/results"

// hostileNote is a label value that is markup in every output format.
const hostileNote = `<img src=x onerror=alert(1)> | *bold* [link](javascript:x) ` + "`code`" + ` & &lt;`

func regenFixtures(t *testing.T) {
	if err := os.RemoveAll(fixtures); err != nil {
		t.Fatal(err)
	}
	at := func(p string) string { return filepath.Join(fixtures, p) }
	runPlan(t, at("alpha/night-1"), sweepPlan(1, 5), labelsOf("engine=alpha gpus=1 hardware=sim"))
	runPlan(t, at("alpha/night-2"), sweepPlan(1, 5), labelsOf("engine=alpha gpus=1 hardware=sim"))
	beta := labelsOf("engine=beta gpus=2 hardware=sim")
	beta["note"] = hostileNote
	runPlan(t, at("beta/night-1"), sweepPlan(3, 20), beta)
	runPlan(t, at("search/one"), searchPlan, labelsOf("engine=alpha"))
	// Broken: a truncated report beside no records, one from a newer
	// Runner, and a run killed before its end (no report.json).
	report, err := os.ReadFile(at("alpha/night-1/report.json"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(p string, b []byte) {
		if err := os.MkdirAll(filepath.Dir(at(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(at(p), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("broken/truncated/report.json", report[:len(report)/3])
	write("broken/newer/report.json", bytes.Replace(report, []byte(`"schema_version": 1`), []byte(`"schema_version": 9`), 1))
	copyDir(t, at("beta/night-1"), at("broken/killed"))
	os.Remove(at("broken/killed/report.json"))
	run, _ := os.ReadFile(at("broken/killed/" + records.FileRun))
	lines := bytes.SplitAfter(bytes.TrimRight(run, "\n"), []byte("\n"))
	write("broken/killed/"+records.FileRun, bytes.Join(lines[:len(lines)-1], nil))
}

// golden compares got with testdata/golden/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./board -run TestGolden -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test ./board -run TestGolden -update rewrites it):\n%s", name, lineDiff(want, got))
	}
}

// lineDiff shows the first line where two texts differ.
func lineDiff(want, got []byte) string {
	a, b := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return "line " + strconv.Itoa(i+1) + ":\nwant: " + a[i] + "\ngot:  " + b[i]
		}
	}
	return "lengths differ: " + strconv.Itoa(len(a)) + " and " + strconv.Itoa(len(b)) + " lines"
}

var regenOnce sync.Once

// goldenBoard is the board of the fixtures.
func goldenBoard(t *testing.T, rank string) *Board {
	t.Helper()
	if *regen {
		regenOnce.Do(func() { regenFixtures(t) })
	}
	runs, skips, err := Load([]string{fixtures}, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := ParseRank(rank)
	if err != nil {
		t.Fatal(err)
	}
	b := mustBuild(t, runs, Options{Rank: r})
	b.Skipped = skips
	return b
}

// TestGolden: the fixtures' board as Markdown, JSON and a terminal table,
// byte for byte; with a rank condition too.
func TestGolden(t *testing.T) {
	b := goldenBoard(t, "")
	if len(b.Groups) != 2 || len(b.Apart) != 1 || len(b.Skipped) != 2 {
		t.Fatalf("fixtures: %d groups, %d apart, %d skipped (want 2, 1, 2)", len(b.Groups), len(b.Apart), len(b.Skipped))
	}
	for _, f := range []struct {
		name  string
		write func(*bytes.Buffer, *Board) error
	}{
		{"board.md", func(w *bytes.Buffer, b *Board) error { return WriteMarkdown(w, b) }},
		{"board.json", func(w *bytes.Buffer, b *Board) error { return WriteJSON(w, b) }},
		{"board.txt", func(w *bytes.Buffer, b *Board) error { return WriteTable(w, b, 0) }},
	} {
		var buf bytes.Buffer
		if err := f.write(&buf, b); err != nil {
			t.Fatal(err)
		}
		golden(t, f.name, buf.Bytes())
	}
	var buf bytes.Buffer
	if err := WriteMarkdown(&buf, goldenBoard(t, "ttft_p95_ms at concurrency >= 4")); err != nil {
		t.Fatal(err)
	}
	golden(t, "board-rank.md", buf.Bytes())
}

// TestTableFitsItsWidth: the board's terminal table is fitted as the run's
// is: at 100 and 80 columns no table line is wider (long run names wrap,
// then the numbers go into parts that repeat place, run and level), and
// every run's figures are still there.
func TestTableFitsItsWidth(t *testing.T) {
	b := goldenBoard(t, "")
	var wide bytes.Buffer
	if err := WriteTable(&wide, b, 0); err != nil {
		t.Fatal(err)
	}
	if termtable.Widest(wide.Bytes()) <= 100 {
		t.Fatalf("the board's table is %d columns: the test needs one wider than 100", termtable.Widest(wide.Bytes()))
	}
	for _, width := range []int{100, 80} {
		var buf bytes.Buffer
		if err := WriteTable(&buf, b, width); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		for _, l := range strings.Split(out, "\n") {
			if strings.ContainsAny(l[:min(len(l), 4)], "┌│├└") && twwidth.Width(l) > width {
				t.Errorf("width %d: a table line of %d columns: %q", width, twwidth.Width(l), l)
			}
		}
		for _, v := range []string{"4692.90", "1433.71", "44.72", "2885.97", "night-2"} {
			if !strings.Contains(out, v) {
				t.Errorf("width %d: %s lost:\n%s", width, v, out)
			}
		}
	}
}
