package reporters

import (
	"bytes"
	"strings"
	"testing"

	"github.com/runnerbench/runner/result"
)

func tableText(t *testing.T, r *result.Report) string {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteTable(&buf, r, TableOptions{}); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func rowOf(out, label string) string {
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "│ "+label+" ") {
			return line
		}
	}
	return ""
}

func TestTableContent(t *testing.T) {
	out := tableText(t, fixture(t))
	for _, want := range []string{
		"TTFT p95 (ms)", "E2E p95 (ms)", "Prefill tok/s", "Spec accept (%)", "Goodput (%)", "Achieved rate (req/s)",
		"local (http://127.0.0.1:8000/v1, my-org/my-model) · mode pinned · api chat · load concurrency",
		"~ low confidence",
		"c=8: 1 of 64 requests failed (http_429)",
		"c=32: every request failed; first: timeout: no first token within 30s",
		"stage error: interrupted before the stage started",
		"when: concurrency <= 8 is false",
		"FAIL: 5 passed, 4 failed, 2 warned, 1 skipped",
		"stopped: interrupted",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q", want)
		}
	}
	// c=1's p95 came from 8 requests: flagged; its p50 is not.
	c1 := rowOf(out, "c=1")
	if !strings.Contains(c1, "~44.90") || strings.Contains(c1, "~41.27") {
		t.Errorf("c=1 row low-confidence marks wrong: %q", c1)
	}
	// c=32: every metric null shows the dash, never 0.
	c32 := rowOf(out, "c=32")
	if strings.Count(c32, nullCell) != 7 {
		t.Errorf("c=32 row should show 7 null cells (ttft p50/p95, tpot, itl, e2e, prefill, spec): %q", c32)
	}
	// The check table quotes the expression and the values it read.
	if !strings.Contains(out, "ttft_p95_ms < 150") || !strings.Contains(out, "ttft_p95_ms=188.31") {
		t.Error("checks table lacks expression or measured value")
	}
}

func TestTableOptionalColumns(t *testing.T) {
	r := fixture(t)
	// Without any spec-decoding numbers the column disappears.
	for i := range r.Stages[0].Points {
		r.Stages[0].Points[i].SpecAcceptanceRate = nil
	}
	out := tableText(t, r)
	if strings.Contains(out, "Spec accept") {
		t.Error("spec column shown though no level has spec numbers")
	}
	if strings.Count(out, "Achieved rate (req/s)") != 2 {
		t.Error("rate column should appear only for the open-loop and replay stages")
	}
}

func TestTablePassVerdict(t *testing.T) {
	r := &result.Report{Plan: result.Plan{Name: "p"}, StopReason: result.StopCompleted, Stages: []result.Stage{{
		Name: "s", Points: []result.Point{{Concurrency: 2, NRequests: 4, Completed: 4}},
		Checks: []result.CheckOutcome{{Name: "ok", Expr: "failed == 0", Status: result.StatusPass, LevelLabel: "c=2"}},
	}}}
	out := tableText(t, r)
	if !strings.Contains(out, "PASS: 1 passed, 0 failed, 0 warned, 0 skipped\n") {
		t.Errorf("verdict line wrong:\n%s", out)
	}
	if strings.Contains(out, "stopped") {
		t.Error("a completed run must not print a stop reason")
	}
}

func TestTableNoPanicOnOddInput(t *testing.T) {
	nan := 0.0
	nan = nan / nan
	r := &result.Report{Stages: []result.Stage{{Name: "s\nx", Points: []result.Point{{TTFTP95Ms: &nan, Error: result.Ptr("multi\nline")}},
		Checks: []result.CheckOutcome{{Name: "c", Status: "weird", Values: map[string]any{"x": []any{nil, "s"}}}}}}}
	out := tableText(t, r)
	if !strings.Contains(out, "multi line") || !strings.Contains(out, "WEIRD") || !strings.Contains(out, `x=[null, "s"]`) {
		t.Errorf("odd input rendered badly:\n%s", out)
	}
	if err := WriteTable(&bytes.Buffer{}, &result.Report{}, TableOptions{}); err != nil {
		t.Errorf("empty report: %v", err)
	}
}

// TestVerdictNamesAnEmptyLevel: a level that measured no request, with no
// stage error or interruption to say why, fails the run (its checks are
// skipped: nothing to judge), and the verdict line says why it failed.
func TestVerdictNamesAnEmptyLevel(t *testing.T) {
	r := &result.Report{StopReason: result.StopCompleted, Stages: []result.Stage{{Name: "s",
		Points: []result.Point{{Concurrency: 1}},
		Checks: []result.CheckOutcome{{Name: "no failures", Status: result.StatusSkipped, Message: "the level measured no request: nothing to judge"}},
	}}}
	var b bytes.Buffer
	if err := WriteVerdict(&b, r, false); err != nil {
		t.Fatal(err)
	}
	if want := "FAIL: 0 passed, 0 failed, 0 warned, 1 skipped, 1 level measured no request\n"; b.String() != want {
		t.Errorf("verdict %q, want %q", b.String(), want)
	}
}
