package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runnerbench/runner/records"
)

// TestE2ELabels: the plan's labels and --label's reach run.jsonl's header
// and report.json, --label overriding the plan's value, with the host beside
// them; `runner report` recomputes them from the records; a bad --label is
// exit 2 before anything runs.
func TestE2ELabels(t *testing.T) {
	t.Parallel()
	plan := writePlan(t, `version: 1
name: labelled
labels:
  engine: sim
  hardware: laptop
  note: "<b>markup</b> & | pipes |"
endpoints:
  sim:
    simulator: {ttft_ms: 5, prefill_ms_per_token: 0.001, itl_ms: 1}
prompts:
  p: {synthetic: {input_tokens: 16}}
stages:
  - name: s
    endpoint: sim
    prompts: p
    output_tokens: 4
    concurrency: [1]
    requests: 2
    warmup: 0
`)
	out := filepath.Join(t.TempDir(), "out")
	code, _, stderr := runRunner(t, childEnv(), plan, "--out", out, "--quiet", "--report", "json",
		"--label", "hardware=h200", "--label", "commit=0123abc")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	want := "commit=0123abc engine=sim hardware=h200 note=<b>markup</b> & | pipes |"
	rep := loadReport(t, out)
	host, _ := os.Hostname()
	if rep.Labels.String() != want || rep.Host != host {
		t.Errorf("report.json: labels %q host %q, want %q and %q", rep.Labels.String(), rep.Host, want, host)
	}
	h, err := records.ReadHeader(out)
	if err != nil {
		t.Fatal(err)
	}
	if h.Labels.String() != want || h.Host != host {
		t.Errorf("run.jsonl header: labels %q host %q", h.Labels.String(), h.Host)
	}
	again := filepath.Join(t.TempDir(), "again")
	if code, _, stderr := runRunner(t, childEnv(), "report", out, "--out", again, "--quiet", "--report", "json"); code != 0 {
		t.Fatalf("report: exit %d\n%s", code, stderr)
	}
	if a, b := readFile(t, filepath.Join(out, "report.json")), readFile(t, filepath.Join(again, "report.json")); a != b {
		t.Errorf("recomputed report differs:\n%s", firstDiff([]byte(a), []byte(b)))
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(out, "report.json"))), &raw); err != nil || raw["labels"] == nil {
		t.Errorf("report.json has no labels object: %v", err)
	}
	for _, bad := range []string{"bad key=x", "k=two\nlines", "novalue", "k=" + strings.Repeat("v", 257)} {
		code, _, stderr := runRunner(t, childEnv(), plan, "--out", filepath.Join(t.TempDir(), "x"), "--quiet", "--label", bad)
		if code != 2 || !strings.Contains(stderr, "label") {
			t.Errorf("--label %q: exit %d, want 2 naming the label\n%s", bad, code, stderr)
		}
	}
}
