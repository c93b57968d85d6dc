package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// lengthsPlan is a tiny closed loop on the simulator asking for in tokens
// in and out tokens out, in a plan named name.
func lengthsPlan(t *testing.T, name string, in, out int) string {
	t.Helper()
	return writePlan(t, fmt.Sprintf(`version: 1
name: %s
endpoints:
  sim:
    simulator: {ttft_ms: 2, prefill_ms_per_token: 0.001, itl_ms: 1}
prompts:
  p: {synthetic: {input_tokens: %d, sizing: reference}}
stages:
  - name: s
    endpoint: sim
    prompts: p
    output_tokens: %d
    concurrency: [1]
    requests: 4
    warmup: 0
`, name, in, out))
}

// TestCompareAgreesWithBaseline (issue 38, item 3): runs that asked the
// server for other lengths, or of another plan, are refused by runner
// compare as --baseline refuses them before any traffic: exit 2, one line,
// the same reason in both; a pair that does match is still compared.
func TestCompareAgreesWithBaseline(t *testing.T) {
	dir := t.TempDir()
	run := func(plan, out string) {
		t.Helper()
		if code, _, errs := runCLI(t, nil, plan, "--out", out, "--quiet", "--report", "json"); code != 0 {
			t.Fatalf("run %s: exit %d\n%s", plan, code, errs)
		}
	}
	small, again, large, other := filepath.Join(dir, "small"), filepath.Join(dir, "again"), filepath.Join(dir, "large"), filepath.Join(dir, "other")
	smallPlan, largePlan := lengthsPlan(t, "lengths", 128, 32), lengthsPlan(t, "lengths", 256, 64)
	otherPlan := lengthsPlan(t, "another", 128, 32)
	run(smallPlan, small)
	run(smallPlan, again)
	run(largePlan, large)
	run(otherPlan, other)

	for _, c := range []struct {
		newPlan, newDir, why string
	}{
		{largePlan, large, `its stage "s" ran another load (baseline → this run: input tokens 128 → 256, output tokens 32 → 64)`},
		{otherPlan, other, `it is a run of plan "lengths", not "another"`},
	} {
		code, out, errs := runCLI(t, nil, "compare", small, c.newDir, "--all")
		want := fmt.Sprintf("runner: compare: %s does not match %s: %s\n", small, c.newDir, c.why)
		if code != 2 || out != "" || errs != want {
			t.Errorf("compare %s: exit %d, want 2\nstdout %q\nstderr %q\nwant   %q", c.newDir, code, out, errs, want)
		}
		refused := filepath.Join(dir, "refused")
		code, _, errs = runCLI(t, nil, c.newPlan, "--out", refused, "--baseline", small, "--quiet")
		want = fmt.Sprintf("--baseline %s does not match the run: %s", small, c.why)
		if code != 2 || !strings.Contains(errs, want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("--baseline: exit %d, want 2 with one line %q\n%s", code, want, errs)
		}
		if _, err := os.Stat(refused); err == nil {
			t.Errorf("a mismatched baseline still ran %s", c.newPlan)
		}
	}
	// The same load is compared, by both.
	if code, out, errs := runCLI(t, nil, "compare", small, again, "--all"); code != 0 || !strings.Contains(out, "ttft_p95_ms") {
		t.Errorf("compare of one load: exit %d\n%s\n%s", code, out, errs)
	}
	if code, _, errs := runCLI(t, nil, smallPlan, "--out", filepath.Join(dir, "with-baseline"), "--baseline", small, "--quiet", "--report", "json"); code != 0 {
		t.Errorf("--baseline of one load: exit %d\n%s", code, errs)
	}
}
