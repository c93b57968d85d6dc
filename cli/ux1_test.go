package cli

// End-to-end tests of issue 23's points 5-8 and 12: interrupted stages, the
// wait for an endpoint, re-gating records with a new plan, --set, and the
// log-spaced latency charts. Each runs the real binary over loopback.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/sim"
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

// TestE2EWaitingIsVisible: an endpoint nobody answers on, with the plan's
// ready_timeout of a minute, gives up after --ready-timeout's 2 s, and says
// while it waits what the endpoint answers, with the URL's password
// redacted.
func TestE2EWaitingIsVisible(t *testing.T) {
	t.Parallel()
	addr := closedPort(t)
	dir := t.TempDir()
	plan := writeFile(t, filepath.Join(dir, "gone.yaml"), fmt.Sprintf(`version: 1
name: e2e-wait
endpoints:
  gone:
    base_url: http://user:pw-not-shown@%s/v1
    ready_timeout: 1m
prompts:
  p: {synthetic: {input_tokens: 16, sizing: reference}}
stages:
  - {name: s, endpoint: gone, prompts: p, concurrency: [1], requests: 1}
`, addr))
	start := time.Now()
	code, stdout, stderr := runRunner(t, childEnv(), plan, "--out", filepath.Join(dir, "out"), "--ready-timeout", "2s", "--no-progress")
	took := time.Since(start)
	if code != 3 {
		t.Fatalf("exit %d, want 3\n%s\n%s", code, stdout, stderr)
	}
	if took < 1900*time.Millisecond || took > 20*time.Second {
		t.Errorf("gave up after %s, want about --ready-timeout's 2s (the plan says 1m)", took)
	}
	if !strings.Contains(stderr, "timeout=2s") || !strings.Contains(stderr, "not ready after 2s") {
		t.Errorf("the wait is not --ready-timeout's:\n%s", stderr)
	}
	// A refused connection is said at once: before the first "still
	// waiting" line, which comes after a quarter of the wait.
	refused, waiting := strings.Index(stderr, "connection refused: nothing listens there yet"), strings.Index(stderr, "still waiting")
	if refused < 0 || waiting >= 0 && refused > waiting {
		t.Errorf("the refused connection is not said before the first wait line:\n%s", stderr)
	}
	// Every 500 ms within a 2 s timeout: at least twice on a busy machine.
	if n := strings.Count(stderr, "still waiting for the endpoint"); n < 2 {
		t.Errorf("%d lines while waiting, want at least 2:\n%s", n, stderr)
	}
	for _, line := range strings.Split(stderr, "\n") {
		if strings.Contains(line, "still waiting") && !strings.Contains(line, "connection refused") {
			t.Errorf("a waiting line without the last error: %s", line)
		}
	}
	if strings.Contains(stderr, "pw-not-shown") {
		t.Errorf("the URL's password is in the log:\n%s", stderr)
	}
	code, _, stderr = runRunner(t, childEnv(), plan, "--ready-timeout", "-1s")
	if code != 2 || !strings.Contains(stderr, "--ready-timeout") {
		t.Errorf("a negative --ready-timeout: exit %d\n%s", code, stderr)
	}
}

// setPlanBody is a plan whose endpoint is wrong (a closed port) and whose
// stage has three levels: --set points it at a real server and runs one.
const setPlanBody = `version: 1
name: e2e-set
endpoints:
  target:
    base_url: http://%s/v1
    ready_timeout: 2s
prompts:
  p: {synthetic: {input_tokens: 16, sizing: reference}}
stages:
  - name: sweep
    endpoint: target
    prompts: p
    output_tokens: 4
    concurrency: [1, 2, 4]
    warmup: 0
    checks:
      - {name: no failures, expr: failed == 0}
`

// TestE2ESetOverridesThePlan: --set points the endpoint at a simulator and
// runs one level instead of three; the recorded plan.yaml holds both (its
// sha256 is the report's plan hash) and recomputes the same report; a bad
// value is one line naming the flag, for run and validate alike.
func TestE2ESetOverridesThePlan(t *testing.T) {
	t.Parallel()
	srv, err := sim.Start(context.Background(), sim.FastConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	dir := t.TempDir()
	plan := writeFile(t, filepath.Join(dir, "set.yaml"), fmt.Sprintf(setPlanBody, closedPort(t)))
	out := filepath.Join(dir, "out")
	code, stdout, stderr := runRunner(t, childEnv(), plan, "--out", out, "--quiet",
		"--set", "endpoints.target.base_url="+srv.URL(), "--set", "stages.sweep.concurrency=[2]")
	if code != 0 {
		t.Fatalf("exit %d, want 0\n%s\n%s", code, stdout, stderr)
	}
	rep := loadReport(t, out)
	if pts := rep.Stages[0].Points; len(pts) != 1 || pts[0].Concurrency != 2 || pts[0].Completed != 2 {
		t.Errorf("points %+v, want one level c=2", pts)
	}
	recorded := readFile(t, filepath.Join(out, "plan.yaml"))
	if !strings.Contains(recorded, srv.URL()) || !strings.Contains(recorded, "concurrency: [2]") {
		t.Errorf("the recorded plan lacks the overrides:\n%s", recorded)
	}
	if sum := sha256.Sum256([]byte(recorded)); hex.EncodeToString(sum[:]) != rep.Plan.Hash {
		t.Errorf("the report's plan hash %s is not plan.yaml's", rep.Plan.Hash)
	}
	code, _, stderr = runRunner(t, childEnv(), "validate", filepath.Join(out, "plan.yaml"))
	if code != 0 {
		t.Errorf("the recorded plan does not validate: %s", stderr)
	}
	again := filepath.Join(dir, "again")
	if code, _, stderr := runRunner(t, childEnv(), "report", out, "--out", again, "--quiet"); code != 0 {
		t.Fatalf("runner report: exit %d\n%s", code, stderr)
	}
	sameReports(t, out, again, "recomputed from a plan with --set differs from the live one")

	for _, cmd := range [][]string{{plan, "--out", filepath.Join(dir, "bad")}, {"validate", plan}} {
		code, stdout, stderr := runRunner(t, childEnv(), append(cmd, "--set", "stages.sweep.concurrency=[0]")...)
		stderr = strings.TrimSpace(stderr)
		if code != 2 || !strings.HasPrefix(stderr, "--set stages.sweep.concurrency: ") || strings.Contains(stderr, "\n") {
			t.Errorf("%s with a bad --set: exit %d, want 2 and one line naming the flag:\n%s%s", cmd[0], code, stdout, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "bad")); err == nil {
		t.Error("an invalid --set created the output directory")
	}
}

// regatePlan is a fast two-level plan with a level check and a stage check.
const regatePlan = `version: 1
name: e2e-regate
endpoints:
  sim:
    simulator: {ttft_ms: 2, prefill_ms_per_token: 0.001, itl_ms: 0.5}
prompts:
  p:
    synthetic: {input_tokens: 16, sizing: reference}
stages:
  - name: sweep
    endpoint: sim
    prompts: p
    output_tokens: 4
    concurrency: [1, 2]
    requests: 4
    warmup: 0
    checks:
      - {name: no failures, expr: failed == 0}
      - {name: every level, scope: stage, expr: len(points) == 2}
`

// TestE2EReportWithAnotherPlan: runner report DIR --plan NEW judges the
// records with NEW's checks and SLO and says which changed; a NEW that
// sends another load is exit 2 naming the difference; an edited plan.yaml
// in DIR is named, with what to do, by runner report and refused by --plan.
func TestE2EReportWithAnotherPlan(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plan := writeFile(t, filepath.Join(dir, "plan.yaml"), regatePlan)
	out := filepath.Join(dir, "out")
	if code, stdout, stderr := runRunner(t, childEnv(), plan, "--out", out, "--quiet"); code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	next := writeFile(t, filepath.Join(dir, "next.yaml"), strings.Replace(strings.Replace(regatePlan,
		"{name: no failures, expr: failed == 0}", "{name: no failures, expr: failed < 0}", 1),
		"      - {name: every level, scope: stage, expr: len(points) == 2}\n",
		"      - {name: goodput, expr: goodput >= 0.5}\n    slo: {ttft_ms: 60000}\n", 1))
	again := filepath.Join(dir, "again")
	code, stdout, stderr := runRunner(t, childEnv(), "report", out, "--plan", next, "--out", again)
	if code != 1 {
		t.Fatalf("report --plan: exit %d, want 1 (the changed check fails)\n%s\n%s", code, stdout, stderr)
	}
	rep := loadReport(t, again)
	if rep.Regated == nil || rep.Regated.Plan.Path != next {
		t.Fatalf("the report does not say which plan judged it: %+v", rep.Regated)
	}
	want := []result.CheckChange{
		{Stage: "sweep", Check: "no failures", Change: result.CheckChanged},
		{Stage: "sweep", Check: "every level", Change: result.CheckRemoved},
		{Stage: "sweep", Check: "goodput", Change: result.CheckAdded},
	}
	if fmt.Sprint(rep.Regated.Checks) != fmt.Sprint(want) || fmt.Sprint(rep.Regated.SLOChanged) != "[sweep]" {
		t.Errorf("changes %+v slo %v, want %+v and [sweep]", rep.Regated.Checks, rep.Regated.SLOChanged, want)
	}
	if o := outcome(t, rep, "sweep", "no failures", "c=2"); o.Status != result.StatusFail {
		t.Errorf("the changed check is %s, want fail", o.Status)
	}
	if o := outcome(t, rep, "sweep", "goodput", "c=1"); o.Status != result.StatusPass || rep.Stages[0].Points[0].Goodput == nil {
		t.Errorf("the added check on the new SLO's goodput: %s %q", o.Status, o.Message)
	}
	for _, f := range []string{"summary.md", "report.html"} {
		if s := readFile(t, filepath.Join(again, f)); !strings.Contains(s, "every level removed") || !strings.Contains(s, "judged with the checks") {
			t.Errorf("%s does not say which checks changed", f)
		}
	}
	if !strings.Contains(stdout, "goodput added") {
		t.Errorf("the table does not say which checks changed:\n%s", stdout)
	}

	other := writeFile(t, filepath.Join(dir, "other.yaml"), strings.Replace(regatePlan, "concurrency: [1, 2]", "concurrency: [1, 4]", 1))
	code, _, stderr = runRunner(t, childEnv(), "report", out, "--plan", other, "--out", filepath.Join(dir, "x"))
	if code != 2 || !strings.Contains(stderr, "stages[sweep].concurrency: [1, 2] in the run's plan, [1, 4] in "+other) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Errorf("another load: exit %d, want 2 and one line naming the difference:\n%s", code, stderr)
	}

	recorded := filepath.Join(out, "plan.yaml")
	writeFile(t, recorded, strings.Replace(regatePlan, "failed == 0", "failed < 0", 1))
	code, _, stderr = runRunner(t, childEnv(), "report", out, "--out", filepath.Join(dir, "y"))
	if code != 0 || !strings.Contains(stderr, recorded+" is not the plan the run recorded") || !strings.Contains(stderr, "--plan") {
		t.Errorf("an edited plan.yaml: exit %d (want 0: the recorded checks), and stderr must name it and say what to do:\n%s", code, stderr)
	}
	code, _, stderr = runRunner(t, childEnv(), "report", out, "--plan", next, "--out", filepath.Join(dir, "z"))
	if code != 2 || !strings.Contains(stderr, recorded+" is not the plan the run recorded") {
		t.Errorf("--plan over an edited plan.yaml: exit %d, want 2 naming it:\n%s", code, stderr)
	}
}
