package html

import (
	"strings"
	"testing"

	xhtml "golang.org/x/net/html"

	"github.com/runnerbench/runner/result"
)

// TestChecksTableSaysWhatIsTrue: each check's row says what is true of its
// outcome: a passing check held (no "fail" severity beside it, no failure
// message); a failed one was false and fails the run; a warning was false
// and does not fail it; a skipped one was not judged, and why.
func TestChecksTableSaysWhatIsTrue(t *testing.T) {
	r := &result.Report{Verdict: "fail", StopReason: result.StopCompleted, Stages: []result.Stage{{Name: "s", Checks: []result.CheckOutcome{
		{Name: "fast", Expr: "ttft_p95_ms < 500", Scope: "level", Severity: "fail", LevelLabel: "c=1", Status: result.StatusPass, Values: map[string]any{"ttft_p95_ms": 120.0}},
		{Name: "fast", Expr: "ttft_p95_ms < 500", Scope: "level", Severity: "fail", LevelLabel: "c=8", Status: result.StatusFail, Message: "expression is false", Values: map[string]any{"ttft_p95_ms": 612.0}},
		{Name: "few failures", Expr: "failed < 2", Scope: "level", Severity: "warn", LevelLabel: "c=8", Status: result.StatusWarn, Message: "expression is false"},
		{Name: "spec", Expr: "spec_acceptance_rate > 0.5", Scope: "level", Severity: "fail", LevelLabel: "c=1", Status: result.StatusFail, Message: "metric spec_acceptance_rate is null"},
		{Name: "small", Expr: "ttft_p95_ms < 100", Scope: "level", Severity: "fail", LevelLabel: "c=8", Status: result.StatusSkipped, Message: `when "concurrency <= 4" is false`},
	}}}}
	doc := parse(t, render(t, r, nil))
	want := map[string]string{
		"pass":    "held",
		"fail":    "false: fails the run",
		"warn":    "false: warns only (severity warn), the run does not fail on it",
		"null":    "metric spec_acceptance_rate is null: fails the run",
		"skipped": `not judged: when "concurrency <= 4" is false`,
	}
	got := map[string]string{}
	for _, tr := range findAll(doc, "tr", func(n *xhtml.Node) bool { _, ok := attr(n, "data-check"); return ok }) {
		status, _ := attr(tr, "data-status")
		cells := findAll(tr, "td", nil)
		out := strings.TrimSpace(text(cells[len(cells)-1]))
		row := text(tr)
		if status == "fail" && strings.Contains(row, "null") {
			status = "null"
		}
		got[status] = out
		if status == "pass" && (strings.Contains(row, "fail") || strings.Contains(row, "false")) {
			t.Errorf("a passing check's row says %q", row)
		}
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: outcome %q, want %q", k, got[k], v)
		}
	}
}
