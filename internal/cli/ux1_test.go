package cli

// End-to-end tests of issue 23's points 5-8 and 12: interrupted stages, the
// wait for an endpoint, re-gating records with a new plan, --set, and the
// log-spaced latency charts. Each runs the real binary over loopback.

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runnerbench/runner/result"
)

// crawlPlan is interrupt.yaml with a stage check: c=1 finishes quickly, c=4
// crawls, so a signal after c=1's "level done" lands inside c=4.
const crawlPlan = `version: 1
name: e2e-crawl
endpoints:
  sim:
    simulator: {ttft_ms: 5, prefill_ms_per_token: 0.001, itl_ms: 1, itl_ms_per_seq: 200}
prompts:
  p:
    synthetic: {input_tokens: 32, sizing: reference}
stages:
  - name: crawl
    endpoint: sim
    prompts: p
    output_tokens: 16
    concurrency: [1, 4]
    requests: 4
    warmup: 0
    checks:
      - name: no failures
        expr: failed == 0
      - name: throughput grows
        scope: stage
        expr: len(points) >= 1
`

// TestE2EInterruptedStageIsNotJudged: after SIGINT inside the second level,
// the stage check is skipped (as the cut level's checks are), live and when
// the report is recomputed from the records; the finished level is judged.
func TestE2EInterruptedStageIsNotJudged(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plan := writeFile(t, filepath.Join(dir, "crawl.yaml"), crawlPlan)
	out := filepath.Join(dir, "out")
	p := startRunner(t, childEnv(), plan, "--out", out, "--no-progress", "--report", "json")
	p.waitStderr(t, "level done", 30*time.Second)
	p.waitRunning(t, 4)
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t, 10*time.Second); code != 130 {
		t.Fatalf("exit %d, want 130\n%s", code, p.stderr.String())
	}
	judge := func(rep *result.Report, from string) {
		t.Helper()
		if !rep.Stages[0].Interrupted {
			t.Errorf("%s: the stage is not marked interrupted", from)
		}
		if o := outcome(t, rep, "crawl", "throughput grows", ""); o.Status != result.StatusSkipped || !strings.Contains(o.Message, "interrupted") {
			t.Errorf("%s: stage check %s %q, want skipped (interrupted)", from, o.Status, o.Message)
		}
		if o := outcome(t, rep, "crawl", "no failures", "c=1"); o.Status != result.StatusPass {
			t.Errorf("%s: the finished level's check is %s, want pass", from, o.Status)
		}
		if o := outcome(t, rep, "crawl", "no failures", "c=4"); o.Status != result.StatusSkipped {
			t.Errorf("%s: the cut level's check is %s, want skipped", from, o.Status)
		}
	}
	judge(loadReport(t, out), "live")
	again := filepath.Join(dir, "again")
	code, stdout, stderr := runRunner(t, childEnv(), "report", out, "--out", again, "--report", "json")
	if code != 130 {
		t.Fatalf("runner report: exit %d, want 130\n%s\n%s", code, stdout, stderr)
	}
	judge(loadReport(t, again), "recomputed")
}
