package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestE2EQuietPrintsTheVerdictOnly: --quiet prints the verdict line on
// stdout, on a pass and on a failure alike, and nothing else; stderr keeps
// only warnings and errors.
func TestE2EQuietPrintsTheVerdictOnly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, c := range []struct {
		plan, verdict string
		code          int
	}{{"regress-fast.yaml", "PASS: ", 0}, {"violated.yaml", "FAIL: ", 1}} {
		code, stdout, stderr := runRunner(t, childEnv(), e2ePlan(c.plan), "--out", filepath.Join(dir, c.plan), "--quiet")
		if code != c.code {
			t.Fatalf("%s: exit %d, want %d\n%s\n%s", c.plan, code, c.code, stdout, stderr)
		}
		if !strings.HasPrefix(stdout, c.verdict) || strings.Count(stdout, "\n") != 1 || !strings.HasSuffix(stdout, "\n") {
			t.Errorf("%s: stdout is not the verdict line alone:\n%s", c.plan, stdout)
		}
		if strings.Contains(stderr, " INF ") {
			t.Errorf("%s: --quiet logged info lines:\n%s", c.plan, stderr)
		}
	}
}

// TestE2ELevelLogLines: without a terminal (no progress bar), each finished
// level is one log line, so a CI log is never silent for a whole level.
func TestE2ELevelLogLines(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runRunner(t, childEnv(), e2ePlan("regress-fast.yaml"), "--out", filepath.Join(t.TempDir(), "out"), "--report", "json")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	var lines []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, "level done") {
			lines = append(lines, l)
		}
	}
	// regress-fast.yaml: sweep c=1, c=2, other c=1.
	if len(lines) != 3 || !strings.Contains(lines[1], "level_label=c=2") || !strings.Contains(lines[1], "stage=sweep") || !strings.Contains(lines[1], "ok=8") {
		t.Fatalf("want 3 level lines, got %d:\n%s", len(lines), stderr)
	}
}

// TestE2EOutHoldsOneRun: a run into a directory that holds an earlier run
// replaces it whole (no report of the earlier run is left beside the new
// ones); a directory holding anything Runner did not write is refused with
// exit 2 and left as it was; so is a --baseline inside the directory to be
// replaced.
func TestE2EOutHoldsOneRun(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "out")
	if code, stdout, stderr := runRunner(t, childEnv(), e2ePlan("regress-fast.yaml"), "--out", out); code != 0 {
		t.Fatalf("first run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr := runRunner(t, childEnv(), e2ePlan("violated.yaml"), "--out", out, "--report", "table,json")
	if code != 1 {
		t.Fatalf("second run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "replacing the earlier run") || !strings.Contains(stderr, "e2e-regress") {
		t.Errorf("no word of the replaced run:\n%s", stderr)
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if got := strings.Join(names, " "); got != "plan.yaml report.json requests.jsonl run.jsonl telemetry.jsonl" {
		t.Errorf("out holds %s, want the second run's files alone", got)
	}
	if rep := loadReport(t, out); rep.Plan.Name != "e2e-violated" {
		t.Errorf("report.json is plan %q's", rep.Plan.Name)
	}

	if code, stdout, stderr := runRunner(t, childEnv(), e2ePlan("violated.yaml"), "--out", out, "--baseline", filepath.Join(out, "report.json")); code != 2 || !strings.Contains(stderr, "is inside --out") {
		t.Errorf("a baseline inside --out: exit %d\n%s\n%s", code, stdout, stderr)
	}
	notes := filepath.Join(out, "notes.txt")
	if err := os.WriteFile(notes, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runRunner(t, childEnv(), e2ePlan("regress-fast.yaml"), "--out", out)
	if code != 2 || !strings.Contains(stderr, `"notes.txt"`) || !strings.Contains(stderr, "deletes only its own files") {
		t.Errorf("a directory with a foreign file: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if rep := loadReport(t, out); rep.Plan.Name != "e2e-violated" || readFile(t, notes) != "mine" {
		t.Error("the refused directory was changed")
	}

	// runner report --out: the reports alone, into a directory of their own,
	// which the next such call may replace.
	again := filepath.Join(t.TempDir(), "again")
	for i := range 2 {
		if code, stdout, stderr := runRunner(t, childEnv(), "report", filepath.Dir(notes), "--out", again, "--report", "json,markdown"); code != 1 {
			t.Fatalf("report --out, call %d: exit %d\n%s\n%s", i+1, code, stdout, stderr)
		}
	}
	if rep := loadReport(t, again); rep.Plan.Name != "e2e-violated" {
		t.Errorf("report --out wrote plan %q's report", rep.Plan.Name)
	}
}
