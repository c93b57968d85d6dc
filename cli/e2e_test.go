package cli

// End-to-end tests: they build the real runner binary once and run it as a
// child process against plans that start the built-in simulator in-process on
// loopback, then read what a CI job would read: the exit code, stdout, stderr
// and the files in --out. Plans live in testdata/e2e.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/runnerbench/runner/internal/testutil"
	"github.com/runnerbench/runner/result"
)

var (
	binDir   string // temporary directory holding the built binary
	binOnce  sync.Once
	binPath  string
	binBuild error
)

// Environment of the test binary re-executed as a wrapper that lowers
// RLIMIT_NOFILE to "soft:hard" and then execs the runner binary.
const (
	nofileEnv = "RUNNER_E2E_NOFILE"
	execEnv   = "RUNNER_E2E_EXEC"
)

func TestMain(m *testing.M) {
	if lim := os.Getenv(nofileEnv); lim != "" {
		os.Exit(execWithFileLimit(lim))
	}
	dir, err := os.MkdirTemp("", "runner-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	// Build before any test starts its clock: a build on a busy machine can
	// take tens of seconds, which must not count against a timing bound.
	binOnce.Do(buildBinary)
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		// In-process runs (simulators, engines, httptest servers) must not
		// leave goroutines behind.
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// execWithFileLimit sets RLIMIT_NOFILE to lim ("soft:hard") and replaces
// this process with the binary in $RUNNER_E2E_EXEC, passing on the
// arguments; it returns only when that fails.
func execWithFileLimit(lim string) int {
	soft, hard, _ := strings.Cut(lim, ":")
	s, err1 := strconv.ParseUint(soft, 10, 64)
	h, err2 := strconv.ParseUint(hard, 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 125
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: s, Max: h}); err != nil {
		fmt.Fprintln(os.Stderr, "setrlimit:", err)
		return 125
	}
	bin := os.Getenv(execEnv)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, nofileEnv+"=") && !strings.HasPrefix(kv, execEnv+"=") {
			env = append(env, kv)
		}
	}
	err := syscall.Exec(bin, append([]string{bin}, os.Args[1:]...), env)
	fmt.Fprintln(os.Stderr, "exec:", err)
	return 125
}

// buildBinary builds ./cmd/runner into binDir, once per test process.
func buildBinary() {
	binPath = filepath.Join(binDir, "runner")
	cmd := exec.Command("go", "build", "-o", binPath, "./cmd/runner")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		binBuild = fmt.Errorf("go build ./cmd/runner: %v\n%s", err, out)
	}
}

// runnerBinary returns the binary TestMain built (failing the test if the
// build failed).
func runnerBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(buildBinary)
	if binBuild != nil {
		t.Fatal(binBuild)
	}
	return binPath
}

// proc is a running runner binary.
type proc struct {
	cmd    *exec.Cmd
	stdout testutil.SyncBuffer
	stderr testutil.SyncBuffer
	done   chan struct{}
	err    error // from Wait, valid after done
}

// childEnv is the environment the binary runs in: the test's own, minus
// variables that would change its behaviour (a CI runner's step summary,
// NO_COLOR), plus extra ("K=V").
func childEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GITHUB_") || k == "NO_COLOR" || k == "RUNNER_TRACEBACK" || k == "RUNNER_ALLOW_ENV" || strings.HasPrefix(k, "TEST_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// startRunner starts the binary; it is killed at the end of the test if it is
// still running.
func startRunner(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	return startProc(t, exec.Command(runnerBinary(t), args...), env)
}

// startRunnerNofile starts the binary with RLIMIT_NOFILE set to soft and
// hard, through this test binary as a wrapper (a child cannot be given
// limits with os/exec alone).
func startRunnerNofile(t *testing.T, soft, hard uint64, env []string, args ...string) *proc {
	t.Helper()
	env = append(env, fmt.Sprintf("%s=%d:%d", nofileEnv, soft, hard), execEnv+"="+runnerBinary(t))
	return startProc(t, exec.Command(os.Args[0], args...), env)
}

func startProc(t *testing.T, cmd *exec.Cmd, env []string) *proc {
	t.Helper()
	p := &proc{cmd: cmd, done: make(chan struct{})}
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// wait waits up to limit for the process and returns its exit code (-1 when
// a signal killed it).
func (p *proc) wait(t *testing.T, limit time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(limit):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("runner did not exit within %s\nstdout:\n%s\nstderr:\n%s", limit, p.stdout.String(), p.stderr.String())
	}
	var ee *exec.ExitError
	if p.err != nil && !errors.As(p.err, &ee) {
		t.Fatal(p.err)
	}
	return p.cmd.ProcessState.ExitCode()
}

// signaled reports the signal that killed the process, if one did.
func (p *proc) signaled() (syscall.Signal, bool) {
	ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return 0, false
	}
	return ws.Signal(), true
}

// waitStderr waits until stderr contains s.
func (p *proc) waitStderr(t *testing.T, s string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !strings.Contains(p.stderr.String(), s) {
		select {
		case <-p.done:
			t.Fatalf("runner exited before printing %q\nstderr:\n%s", s, p.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q on stderr within %s:\n%s", s, limit, p.stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitRunning waits until the runner's in-process simulator (its URL is in
// the "simulator started" log line) has n requests running, read from its
// /metrics: the event a signal test must wait for, not a fixed sleep.
func (p *proc) waitRunning(t *testing.T, n int) {
	t.Helper()
	m := regexp.MustCompile(`url=(http://127\.0\.0\.1:\d+)/v1`).FindStringSubmatch(p.stderr.String())
	if m == nil {
		t.Fatalf("no simulator URL in the log:\n%s", p.stderr.String())
	}
	want := regexp.MustCompile(fmt.Sprintf(`(?m)^vllm:num_requests_running(\{[^}]*\})? %d$`, n))
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(m[1] + "/metrics")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if want.Match(b) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the simulator never had %d requests running", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// runRunner runs the binary to completion (at most 60 s) and returns the exit
// code and both streams.
func runRunner(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	p := startRunner(t, env, args...)
	code := p.wait(t, 60*time.Second)
	return code, p.stdout.String(), p.stderr.String()
}

func e2ePlan(name string) string { return filepath.Join("testdata", "e2e", name) }

// runUnstarved runs the runner once with --out out, and logs any level
// whose client was the bottleneck. A busy machine (the other test packages,
// on two cores) can hold the runner's readers off a core for more than the
// 1 ms a 1-5 ms ITL allows; then the comparison rightly calls that level's
// verdicts inconclusive ("the client was the bottleneck"), and the tests
// that judge a verdict accept that, as they accept the simulator falling
// behind its model (machineBehind, simBehind). No run is repeated: a test
// asserts what a busy machine leaves true.
func runUnstarved(t *testing.T, out string, args ...string) (int, string, string) {
	t.Helper()
	_ = os.RemoveAll(out)
	code, stdout, stderr := runRunner(t, childEnv(), append(args, "--out", out)...)
	if b, err := os.ReadFile(filepath.Join(out, "report.json")); err == nil {
		var rep result.Report
		if err := json.Unmarshal(b, &rep); err != nil {
			t.Errorf("%s: report.json: %v", out, err)
			return code, stdout, stderr
		}
		for _, st := range rep.Stages {
			for _, p := range st.Points {
				if p.ClientBottleneck {
					t.Logf("%v: %s %s: the client was the bottleneck: %s", args, st.Name, p.Label(), strings.Join(p.Warnings, "; "))
				}
			}
		}
	}
	return code, stdout, stderr
}

func loadReport(t *testing.T, dir string) *result.Report {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r result.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("report.json: %v", err)
	}
	return &r
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// readRequests parses requests.jsonl, failing the test on any line that is
// not a complete JSON record.
func readRequests(t *testing.T, dir string) []result.Request {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []result.Request
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		var r result.Request
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("requests.jsonl line %d is not a valid record: %v: %q", n, err, sc.Text())
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// statuses counts the report's check outcomes by status.
func statuses(r *result.Report) map[string]int {
	m := map[string]int{}
	for _, st := range r.Stages {
		for _, c := range st.Checks {
			m[c.Status]++
		}
	}
	return m
}

func outcome(t *testing.T, r *result.Report, stage, name, level string) result.CheckOutcome {
	t.Helper()
	for _, st := range r.Stages {
		for _, c := range st.Checks {
			if st.Name == stage && c.Name == name && c.LevelLabel == level {
				return c
			}
		}
	}
	t.Fatalf("no outcome %s / %s / %q in the report", stage, name, level)
	return result.CheckOutcome{}
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestE2EGatePasses: every fail-severity check passes, so the exit code is 0
// even though a warn check fails and a when-filtered check is skipped; every
// report shows each of those outcomes.
func TestE2EGatePasses(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	code, stdout, stderr := runRunner(t, childEnv(), e2ePlan("gate.yaml"), "--out", out, "--report", "table,json,junit,markdown")
	if code != 0 {
		t.Fatalf("exit %d, want 0\n%s\n%s", code, stdout, stderr)
	}
	rep := loadReport(t, out)
	if rep.Verdict != result.StatusPass || rep.StopReason != result.StopCompleted {
		t.Errorf("verdict %q stop %q", rep.Verdict, rep.StopReason)
	}
	// 2 levels × (no failures, advisory) + 1 when-check on 2 levels + 1 stage check.
	got := statuses(rep)
	want := map[string]int{result.StatusPass: 4, result.StatusWarn: 2, result.StatusSkipped: 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("outcomes %v, want %v", got, want)
	}
	// Level checks ran on every level; the when filter skipped c=2 only.
	if c := outcome(t, rep, "sweep", "first token on light load", "c=2"); c.Status != result.StatusSkipped || !strings.Contains(c.Message, "concurrency == 1") {
		t.Errorf("when-filtered outcome %+v", c)
	}
	if c := outcome(t, rep, "sweep", "first token on light load", "c=1"); c.Status != result.StatusPass {
		t.Errorf("c=1 outcome %+v", c)
	}
	if c := outcome(t, rep, "sweep", "every level completed", ""); c.Scope != "stage" || c.Status != result.StatusPass {
		t.Errorf("stage outcome %+v", c)
	}
	junit := readFile(t, filepath.Join(out, "junit.xml"))
	for _, s := range []string{`failures="0"`, `skipped="1"`, "<skipped", "WARNING (severity warn", "sweep / c=2 / advisory impossible latency", "sweep / every level completed"} {
		if !strings.Contains(junit, s) {
			t.Errorf("junit.xml lacks %q", s)
		}
	}
	md := readFile(t, filepath.Join(out, "summary.md"))
	table := stdout
	for name, doc := range map[string]string{"summary.md": md, "table": table} {
		for _, s := range []string{"PASS", "WARN", "SKIP", "advisory impossible latency", "every level completed"} {
			if !strings.Contains(strings.ToUpper(doc), strings.ToUpper(s)) {
				t.Errorf("%s lacks %q", name, s)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(out, "report.html")); err == nil {
		t.Error("--report without html wrote report.html")
	}
}

// TestE2EViolatedCheck: a failed check exits 1 and junit.xml carries the
// failure with the measured value; a check on a metric the run could not
// produce fails and names it.
func TestE2EViolatedCheck(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	code, stdout, stderr := runRunner(t, childEnv(), e2ePlan("violated.yaml"), "--out", out)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "2 check(s) failed") || !strings.Contains(stderr, "impossible first token") || !strings.Contains(stderr, "speculation pays") {
		t.Errorf("stderr does not name the failed checks:\n%s", stderr)
	}
	rep := loadReport(t, out)
	if rep.Verdict != result.StatusFail {
		t.Errorf("verdict %q", rep.Verdict)
	}
	if got := fmt.Sprint(statuses(rep)); got != fmt.Sprint(map[string]int{"fail": 2, "pass": 1, "warn": 1}) {
		t.Errorf("outcomes %s", got)
	}
	ttft := outcome(t, rep, "sweep", "impossible first token", "c=1")
	v, ok := ttft.Values["ttft_p95_ms"].(float64)
	if ttft.Status != result.StatusFail || !ok || v <= 0 {
		t.Fatalf("ttft outcome %+v", ttft)
	}
	if p := rep.Stages[0].Points[0]; p.TTFTP95Ms == nil || *p.TTFTP95Ms != v {
		t.Errorf("check read ttft_p95_ms=%v, the level reports %v", v, p.TTFTP95Ms)
	}
	spec := outcome(t, rep, "sweep", "speculation pays", "c=1")
	if spec.Status != result.StatusFail || !strings.Contains(spec.Message, "spec_acceptance_rate") || !strings.Contains(spec.Message, "null") {
		t.Errorf("null-metric outcome %+v", spec)
	}
	junit := readFile(t, filepath.Join(out, "junit.xml"))
	measured := "measured: ttft_p95_ms=" + strconv.FormatFloat(v, 'f', -1, 64)
	if !strings.Contains(junit, `failures="2"`) || !strings.Contains(junit, "<failure") || !strings.Contains(junit, measured) {
		t.Errorf("junit.xml lacks the failure with %q:\n%s", measured, junit)
	}
	if !strings.Contains(junit, "spec_acceptance_rate is null") {
		t.Errorf("junit.xml does not name the null metric")
	}
	md := readFile(t, filepath.Join(out, "summary.md"))
	if !strings.Contains(md, "FAIL") || !strings.Contains(md, strconv.FormatFloat(v, 'f', -1, 64)) {
		t.Errorf("summary.md lacks the failure and its value")
	}
	if !strings.Contains(stdout, "FAIL") || !strings.Contains(stdout, "ttft_p95_ms="+strconv.FormatFloat(v, 'f', -1, 64)) || !strings.Contains(stdout, "spec_acceptance_rate=null") {
		t.Errorf("the table lacks the failures and their values:\n%s", stdout)
	}
}

// TestE2EInvalidPlan: a plan error exits 2 with file:line:col on stderr, one
// line per problem, and no stack trace; no traffic, no output directory.
func TestE2EInvalidPlan(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plan := filepath.Join(dir, "bad.yaml")
	body := strings.Replace(readFile(t, e2ePlan("gate.yaml")), "concurrency: [1, 2]", "concurency: [1, 2]", 1)
	body = strings.Replace(body, "expr: failed == 0", "expr: faild == 0", 1)
	if err := os.WriteFile(plan, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	code, stdout, stderr := runRunner(t, childEnv(), plan, "--out", out)
	if code != 2 {
		t.Fatalf("exit %d, want 2\n%s\n%s", code, stdout, stderr)
	}
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	pos := regexp.MustCompile(`^` + regexp.QuoteMeta(plan) + `:\d+:\d+: `)
	var located int
	for _, l := range lines {
		if pos.MatchString(l) {
			located++
		}
	}
	if located < 2 || !strings.Contains(stderr, `"concurency"`) || !strings.Contains(stderr, "faild") {
		t.Errorf("want both problems as %s:line:col, got:\n%s", plan, stderr)
	}
	if strings.Contains(stderr, "goroutine") || strings.Contains(stderr, "panic") {
		t.Errorf("stack trace on stderr:\n%s", stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("an invalid plan created the output directory")
	}
}

// TestE2EUnreachable: an endpoint nobody answers on exits 3 within its
// ready_timeout (2 s), naming the URL.
func TestE2EUnreachable(t *testing.T) {
	t.Parallel()
	addr := closedPort(t)
	dir := t.TempDir()
	plan := filepath.Join(dir, "gone.yaml")
	body := fmt.Sprintf(`version: 1
name: e2e-gone
endpoints:
  gone:
    base_url: http://%s/v1
    ready_timeout: 2s
prompts:
  p: {synthetic: {input_tokens: 16, sizing: reference}}
stages:
  - {name: s, endpoint: gone, prompts: p, concurrency: [1], requests: 1}
`, addr)
	if err := os.WriteFile(plan, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	start := time.Now()
	code, stdout, stderr := runRunner(t, childEnv(), plan, "--out", out, "--quiet")
	took := time.Since(start)
	if code != 3 {
		t.Fatalf("exit %d, want 3\n%s\n%s", code, stdout, stderr)
	}
	if took < 1900*time.Millisecond || took > 8*time.Second {
		t.Errorf("gave up after %s, want about the 2s ready_timeout", took)
	}
	url := "http://" + addr + "/v1/models"
	if !strings.Contains(stderr, url) || !strings.Contains(stderr, "not ready after 2s") {
		t.Errorf("stderr does not name %s:\n%s", url, stderr)
	}
	if strings.Count(stderr, "not ready after") != 1 {
		t.Errorf("the readiness message repeats itself:\n%s", stderr)
	}
	rep := loadReport(t, out)
	if rep.StopReason != result.StopError || len(rep.Warnings) == 0 || !strings.Contains(rep.Warnings[0], addr) {
		t.Errorf("report stop %q warnings %q", rep.StopReason, rep.Warnings)
	}
	if junit := readFile(t, filepath.Join(out, "junit.xml")); !strings.Contains(junit, `type="run_error"`) || !strings.Contains(junit, url) {
		t.Errorf("junit.xml does not show the run error:\n%s", junit)
	}
}

// TestE2EPortLimit: a level with more connections to one server than one
// source address has ephemeral ports (70,000: more than any port range)
// exits 3 before sending anything, with one line saying what to change.
func TestE2EPortLimit(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/sys/net/ipv4/ip_local_port_range"); err != nil {
		t.Skip("the ephemeral port range is read on Linux only")
	}
	addr := closedPort(t)
	dir := t.TempDir()
	plan := filepath.Join(dir, "ports.yaml")
	body := fmt.Sprintf(`version: 1
name: e2e-ports
endpoints:
  far: {base_url: http://%s/v1, ready_timeout: 2s}
prompts:
  p: {synthetic: {input_tokens: 16, sizing: reference}}
stages:
  - {name: many, endpoint: far, prompts: p, concurrency: [70000], requests: 70000}
`, addr)
	if err := os.WriteFile(plan, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	code, stdout, stderr := runRunner(t, childEnv(), plan, "--out", filepath.Join(dir, "out"), "--quiet")
	if code != 3 {
		t.Fatalf("exit %d, want 3\n%s\n%s", code, stdout, stderr)
	}
	if took := time.Since(start); took > 1900*time.Millisecond {
		t.Errorf("took %s: it waited for the endpoint (ready_timeout 2s) before refusing", took)
	}
	for _, want := range []string{"stage many", "concurrency 70000", addr, "ephemeral ports", "ip_local_port_range"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "goroutine") {
		t.Errorf("stack trace on stderr:\n%s", stderr)
	}
}

// TestE2EInterrupt: SIGINT or SIGTERM in the middle of the second level exits
// 130; every report is written and marked interrupted, holds the finished
// first level, and the second level's in-flight requests are in
// requests.jsonl as interrupted.
func TestE2EInterrupt(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			testInterrupt(t, sig)
		})
	}
}

func testInterrupt(t *testing.T, sig syscall.Signal) {
	out := t.TempDir()
	p := startRunner(t, childEnv(), e2ePlan("interrupt.yaml"), "--out", out, "--log-level", "debug", "--no-progress", "--report", "table,json,junit,markdown,html")
	p.waitStderr(t, "level done", 30*time.Second) // c=1 finished; c=4 crawls
	p.waitRunning(t, 4)                           // every request of c=4 is in flight
	sent := time.Now()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	code := p.wait(t, 10*time.Second)
	if code != 130 {
		t.Fatalf("exit %d, want 130\n%s", code, p.stderr.String())
	}
	if took := time.Since(sent); took > 5*time.Second {
		t.Errorf("took %s to stop after %s", took, sig)
	}
	rep := loadReport(t, out)
	if rep.StopReason != result.StopInterrupted || rep.Verdict != result.StatusFail {
		t.Errorf("stop %q verdict %q", rep.StopReason, rep.Verdict)
	}
	if len(rep.Stages) != 1 || len(rep.Stages[0].Points) != 2 {
		t.Fatalf("report holds %d stages; want the stage with its 2 levels", len(rep.Stages))
	}
	done, cut := rep.Stages[0].Points[0], rep.Stages[0].Points[1]
	if done.Interrupted || done.Completed != 4 || done.Failed != 0 {
		t.Errorf("finished level: interrupted %v completed %d failed %d", done.Interrupted, done.Completed, done.Failed)
	}
	if !cut.Interrupted || cut.ErrorsByKind[result.ErrInterrupted] == 0 {
		t.Errorf("interrupted level: interrupted %v kinds %v", cut.Interrupted, cut.ErrorsByKind)
	}
	var level0, inflight int
	for _, r := range readRequests(t, out) {
		switch {
		case r.Level == 0 && r.OK:
			level0++
		case r.Level == 1 && r.ErrorKind == result.ErrInterrupted && !r.OK:
			inflight++
		default:
			t.Errorf("unexpected record: level %d ok %v kind %q", r.Level, r.OK, r.ErrorKind)
		}
	}
	if level0 != 4 || inflight != 4 {
		t.Errorf("requests.jsonl: %d finished level-0 records (want 4), %d interrupted in-flight (want 4)", level0, inflight)
	}
	if s := readFile(t, filepath.Join(out, "junit.xml")); !strings.Contains(s, `type="run_interrupted"`) || !strings.Contains(s, `<property name="stop_reason" value="interrupted">`) {
		t.Errorf("junit.xml is not marked interrupted:\n%s", s)
	}
	if s := readFile(t, filepath.Join(out, "summary.md")); !strings.Contains(s, "stopped: interrupted") {
		t.Errorf("summary.md is not marked interrupted:\n%s", s)
	}
	if s := readFile(t, filepath.Join(out, "report.html")); !strings.Contains(s, `data-stop-reason="interrupted"`) {
		t.Error("report.html is not marked interrupted")
	}
	if !strings.Contains(p.stdout.String(), "interrupted") {
		t.Errorf("the table does not say the run was interrupted:\n%s", p.stdout.String())
	}
}

// TestE2ESecondSignal: a second SIGINT ends the process at once, even while
// the first one's shutdown is blocked (here on writing the GitHub step
// summary into a FIFO nobody reads).
func TestE2ESecondSignal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "summary.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	out := filepath.Join(dir, "out")
	p := startRunner(t, childEnv("GITHUB_STEP_SUMMARY="+fifo), e2ePlan("interrupt.yaml"), "--out", out, "--log-level", "debug", "--no-progress")
	p.waitStderr(t, "level done", 30*time.Second)
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	// The first signal's shutdown writes report.json, then blocks opening the
	// FIFO for the step summary. (Had it not blocked, it would exit 130 on
	// its own, and the check below that SIGINT killed it would fail.)
	p.waitStderr(t, "appending to the GitHub step summary", 10*time.Second)
	if _, err := os.Stat(filepath.Join(out, "report.json")); err != nil {
		t.Fatalf("no report.json after the first SIGINT: %v\n%s", err, p.stderr.String())
	}
	sent := time.Now()
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	p.wait(t, 5*time.Second)
	if took := time.Since(sent); took > 3*time.Second {
		t.Errorf("second SIGINT took %s to end the process", took)
	}
	if sig, ok := p.signaled(); !ok || sig != syscall.SIGINT {
		t.Errorf("process ended with %v (signaled %v %v), want killed by SIGINT", p.err, ok, sig)
	}
	if rep := loadReport(t, out); rep.StopReason != result.StopInterrupted {
		t.Errorf("report.json stop %q", rep.StopReason)
	}
}

// TestE2EKill9: after kill -9 in the middle of a level, requests.jsonl holds a
// valid JSON line for every request that finished before the kill.
func TestE2EKill9(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	p := startRunner(t, childEnv(), e2ePlan("interrupt.yaml"), "--out", out, "--log-level", "debug", "--no-progress")
	p.waitStderr(t, "level done", 30*time.Second) // the 4 requests of c=1 finished
	p.waitRunning(t, 4)                           // c=4 is under way
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.wait(t, 5*time.Second)
	if sig, ok := p.signaled(); !ok || sig != syscall.SIGKILL {
		t.Fatalf("not killed: %v", p.err)
	}
	recs := readRequests(t, out)
	var level0 []int
	for _, r := range recs {
		if r.Level == 0 {
			if !r.OK || r.Stage != "crawl" || r.TTFTMs == nil {
				t.Errorf("level-0 record ok %v stage %q ttft %v", r.OK, r.Stage, r.TTFTMs)
			}
			level0 = append(level0, r.Seq)
		}
	}
	slices.Sort(level0)
	if fmt.Sprint(level0) != "[0 1 2 3]" {
		t.Errorf("level-0 records by seq %v, want [0 1 2 3]", level0)
	}
	if _, err := os.Stat(filepath.Join(out, "report.json")); err == nil {
		t.Error("a killed run wrote report.json")
	}
	// Nothing measured is lost: the report recomputed from the killed run's
	// records holds the finished level and, marked interrupted, the level it
	// was killed in, with every request of it that had finished.
	again := filepath.Join(t.TempDir(), "again")
	code, _, stderr := runRunner(t, childEnv(), "report", out, "--out", again, "--report", "json")
	rep := loadReport(t, again)
	if code != 130 || rep.StopReason != result.StopInterrupted || len(rep.Stages) != 1 || len(rep.Stages[0].Points) != 2 {
		t.Fatalf("report of a killed run: exit %d stop %q stages %d\n%s", code, rep.StopReason, len(rep.Stages), stderr)
	}
	done, cut := rep.Stages[0].Points[0], rep.Stages[0].Points[1]
	level1 := len(recs) - len(level0)
	if done.Completed != 4 || done.Interrupted || !cut.Interrupted || cut.NRequests != level1 {
		t.Errorf("finished level completed %d interrupted %v; killed level interrupted %v with %d requests, %d recorded",
			done.Completed, done.Interrupted, cut.Interrupted, cut.NRequests, level1)
	}
}

// TestE2EBaselineCompareAndStages records a baseline on a fast simulator, runs
// the same stage on a slower one with --baseline (the regression checks fail,
// the classic one and worse()), refuses before any traffic a baseline that
// does not match the run, recomputes the compared report from the records
// with runner report --baseline byte for byte, filters stages with --stage
// together with --out, --baseline and --report, and compares the two runs
// with runner compare.
func TestE2EBaselineCompareAndStages(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fast, slow, only := filepath.Join(dir, "fast"), filepath.Join(dir, "slow"), filepath.Join(dir, "only")
	code, stdout, stderr := runUnstarved(t, fast, e2ePlan("regress-fast.yaml"), "--quiet")
	if code != 0 {
		t.Fatalf("baseline run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	base := filepath.Join(fast, "report.json")
	if c := outcome(t, loadReport(t, fast), "sweep", "has a baseline", "c=1"); c.Status != result.StatusWarn {
		t.Errorf("without --baseline, baseline is not nil: %+v", c)
	}

	code, stdout, stderr = runUnstarved(t, slow, e2ePlan("regress-slow.yaml"), "--baseline", base, "--quiet")
	rep := loadReport(t, slow)
	if want := exitOf(rep); code != want {
		t.Fatalf("regressed run: exit %d, its checks say %d\n%s\n%s", code, want, stdout, stderr)
	}
	if rep.Baseline != base || rep.Comparison == nil || !rep.Comparison.Records || rep.Comparison.Gated == 0 {
		t.Errorf("report baseline %q, comparison %+v", rep.Baseline, rep.Comparison)
	}
	baseRep := loadReport(t, fast)
	behind := simBehind(t, fast, slow)
	for i, label := range []string{"c=1", "c=2"} {
		// The slow simulator's 150 ms TTFT is a floor no machine lowers;
		// the fast one's 5 ms is not, as a busy machine stretches its
		// p95 (of 8 requests: about the slowest): 9 to 48 ms beside two
		// busy loops. So the check fails exactly where the slow p95 is
		// more than 10% above the baseline's, and where a stall lifted
		// the baseline that far it rightly passes.
		c := outcome(t, rep, "sweep", "ttft within 10% of the baseline", label)
		got, want := rep.Stages[0].Points[i].TTFTP95Ms, baseRep.Stages[0].Points[i].TTFTP95Ms
		if got == nil || want == nil || *got < 150 || c.Values["ttft_p95_ms"] != *got || c.Values["baseline.ttft_p95_ms"] != *want {
			t.Fatalf("%s: outcome %+v, ttft_p95_ms %v, baseline's %v (the simulator's TTFT is 150 ms)", label, c, got, want)
		}
		if regressed := *got > *want*1.10; c.Status != statusIf(regressed) {
			t.Errorf("%s: ttft_p95_ms %v against the baseline's %v: outcome %s", label, *got, *want, c.Status)
		} else if !regressed {
			t.Logf("%s: this busy machine stretched the baseline's TTFT p95 to %v ms, within 10%% of the slow run's %v: the check rightly passed", label, *want, *got)
		}
		w := outcome(t, rep, "sweep", "ttft p50 not significantly worse by more than 10%", label)
		read, _ := w.Values["worse(ttft_p50_ms)"].(string)
		if behind && w.Status == result.StatusPass && busyReason(read) {
			t.Logf("%s: the simulator fell behind its model or the client was the bottleneck on this busy machine, so worse() is rightly inconclusive: %s", label, read)
		} else if w.Status != result.StatusFail || !strings.Contains(read, "worse (p50 of 8 and 8 requests)") {
			t.Errorf("%s: worse() outcome %+v", label, w)
		}
		if h := outcome(t, rep, "sweep", "has a baseline", label); h.Status != result.StatusPass {
			t.Errorf("%s: baseline is nil with --baseline: %+v", label, h)
		}
		if len(rep.Stages[0].Points[i].BaselineComparison) == 0 {
			t.Errorf("%s: no baseline_comparison in report.json", label)
		}
	}
	// Likewise throughput: the slow run's c=1 is at most 8 tokens per 150 ms.
	got, was := rep.Stages[0].Points[0].OutputTPSTotal, baseRep.Stages[0].Points[0].OutputTPSTotal
	if c := outcome(t, rep, "sweep", "throughput kept", ""); got > 8/0.150 || c.Status != statusIf(got < was*0.5) {
		t.Errorf("stage check against the baseline (output tok/s %v, the baseline's %v): %+v", got, was, c)
	}
	if c := outcome(t, rep, "other", "no failures", "c=1"); c.Status != result.StatusPass {
		t.Errorf("other stage: %+v", c)
	}
	if len(rep.Warnings) != 0 {
		t.Errorf("a matching baseline with records: warnings %q", rep.Warnings)
	}

	// The comparison is a function of the records: recomputed from them with
	// the same baseline, every report is the live run's, byte for byte.
	again := filepath.Join(dir, "again")
	code2, _, stderr := runRunner(t, childEnv(), "report", slow, "--baseline", base, "--out", again, "--quiet")
	if code2 != code {
		t.Fatalf("report --baseline: exit %d, the run exited %d\n%s", code2, code, stderr)
	}
	for _, f := range []string{"report.json", "junit.xml", "summary.md", "report.html"} {
		a, _ := os.ReadFile(filepath.Join(slow, f))
		b, err := os.ReadFile(filepath.Join(again, f))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s recomputed with --baseline differs from the live one (%v):\n%s", f, err, firstDiff(a, b))
		}
	}

	// A baseline that does not match the run is refused before any traffic,
	// in one line naming what does not match.
	mismatch := writeFile(t, filepath.Join(dir, "mismatch.yaml"), strings.Replace(strings.Replace(
		readFile(t, e2ePlan("regress-slow.yaml")), "concurrency: [1, 2]", "concurrency: [1, 2, 3]", 1), "  - name: other", "  - name: extra\n    endpoint: sim\n    prompts: p\n    concurrency: [1]\n  - name: other", 1))
	for plan, want := range map[string]string{
		mismatch:             `does not match the run: it has no level c=3 of stage "sweep" (it has c=1, c=2); it has no stage "extra" (it has "sweep", "other")`,
		e2ePlan("gate.yaml"): `does not match the run: it is a run of plan "e2e-regress", not "e2e-gate"`,
	} {
		out := filepath.Join(dir, "refused")
		code, _, stderr := runRunner(t, childEnv(), plan, "--out", out, "--baseline", base, "--quiet")
		if code != 2 || !strings.Contains(stderr, want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%s: exit %d, want 2 with one line saying %q\n%s", plan, code, want, stderr)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%s: a mismatched baseline still ran the plan", plan)
		}
	}

	// --stage composes with --out, --baseline and --report.
	code, stdout, stderr = runRunner(t, childEnv(), "run", e2ePlan("regress-slow.yaml"), "--stage", "other", "--baseline", base, "--report", "json", "--out", only)
	if code != 0 {
		t.Fatalf("--stage other: exit %d\n%s\n%s", code, stdout, stderr)
	}
	o := loadReport(t, only)
	if len(o.Stages) != 1 || o.Stages[0].Name != "other" || o.Baseline != base {
		t.Errorf("--stage other ran %d stages (%v), baseline %q", len(o.Stages), o.Stages, o.Baseline)
	}
	entries, _ := os.ReadDir(only)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if fmt.Sprint(names) != "[plan.yaml report.json requests.jsonl run.jsonl telemetry.jsonl]" {
		t.Errorf("--report json wrote %v", names)
	}
	if stdout != "" {
		t.Errorf("--report json printed a table:\n%s", stdout)
	}
	for _, r := range readRequests(t, only) {
		if r.Stage != "other" {
			t.Errorf("--stage other sent a request for stage %q", r.Stage)
		}
	}
	compareRuns(t, dir, fast, slow, behind)
}

// statusIf is the status of a fail-severity check whose violation is bad.
func statusIf(bad bool) string {
	if bad {
		return result.StatusFail
	}
	return result.StatusPass
}

// exitOf is the exit code a run's checks call for: 1 if a fail-severity
// check failed, else 0.
func exitOf(r *result.Report) int {
	for _, st := range r.Stages {
		for _, c := range st.Checks {
			if c.Severity == "fail" && c.Status == result.StatusFail {
				return 1
			}
		}
	}
	return 0
}

// simBehind reports whether the simulator fell behind its model
// (sim_behind), or the client was the bottleneck, at some level of one of
// the runs: then a comparison of them may rightly be inconclusive, and the
// verdict is logged, not asserted.
func simBehind(t *testing.T, runs ...string) bool {
	t.Helper()
	for _, dir := range runs {
		for _, st := range loadReport(t, dir).Stages {
			for _, p := range st.Points {
				if p.SimBehind || p.ClientBottleneck {
					t.Logf("%s %s %s: %s", dir, st.Name, p.Label(), strings.Join(p.Warnings, "; "))
					return true
				}
			}
		}
	}
	return false
}

// busyReason reports whether a comparison's text says a busy machine made
// its verdict inconclusive: the simulator fell behind its model, or the
// client was the bottleneck.
func busyReason(s string) bool {
	return strings.Contains(s, "simulator fell behind its own timing model") || strings.Contains(s, "the client was the bottleneck")
}

// compareRuns runs runner compare on the baseline and the slow run: report
// files or directories, the gate and its listing, Markdown, and a report
// without its records. Where the simulator fell behind its model (behind),
// the verdicts may rightly be inconclusive: those are logged, not asserted.
func compareRuns(t *testing.T, dir, fast, slow string, behind bool) {
	base, slowJSON := filepath.Join(fast, "report.json"), filepath.Join(slow, "report.json")
	code, stdout, stderr := runRunner(t, childEnv(), "compare", base, slowJSON)
	if code != 0 || !strings.Contains(stdout, "ttft_p50_ms") {
		t.Errorf("compare: exit %d\n%s\n%s", code, stdout, stderr)
	} else if !strings.Contains(stdout, "worse") || !strings.Contains(stdout, "p50 of 8 and 8 requests") {
		if !behind || !busyReason(stdout) {
			t.Errorf("compare: exit %d\n%s\n%s", code, stdout, stderr)
		}
	}
	code, _, stderr = runRunner(t, childEnv(), "compare", fast, slow, "--fail-above", "50")
	if behind && code == 0 {
		t.Logf("compare --fail-above 50 passed where the simulator fell behind its model or the client was the bottleneck")
	} else if code != 1 || !strings.Contains(stderr, "significantly worse by more than 50%") || !strings.Contains(stderr, "ttft_p50_ms: +") ||
		!strings.Contains(stderr, "worse (p50 of 8 and 8 requests)") {
		t.Errorf("compare --fail-above 50: exit %d\n%s", code, stderr)
	}
	// The same run against itself regressed nowhere.
	if code, _, stderr = runRunner(t, childEnv(), "compare", slow, slow, "--fail-above", "0"); code != 0 {
		t.Errorf("compare a run with itself --fail-above 0: exit %d\n%s", code, stderr)
	}
	code, stdout, _ = runRunner(t, childEnv(), "compare", base, slowJSON, "--markdown")
	// Where the machine was busy, c=1 may be inconclusive and left out of
	// the table's rows.
	if code != 0 || !strings.HasPrefix(stdout, "## ") || !behind && (!strings.Contains(stdout, "| sweep | c=1 | `ttft_p50_ms` |") || !strings.Contains(stdout, "🔴 **worse**")) || strings.Contains(stdout, "┌") {
		t.Errorf("compare --markdown: exit %d\n%s", code, stdout)
	}
	// A report.json without its records: point changes, no intervals, said.
	alone := filepath.Join(dir, "alone")
	if err := os.MkdirAll(alone, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(alone, "report.json"), readFile(t, base))
	code, stdout, stderr = runRunner(t, childEnv(), "compare", alone, slow, "--fail-above", "50")
	if code != 0 || !strings.Contains(stdout, "no request records of the baseline") || !strings.Contains(stderr, "--fail-above cannot fail") {
		t.Errorf("compare without records: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// Checks without worse() run against it, their comparisons without
	// intervals, and the report says why.
	plain := filepath.Join(dir, "plain")
	code, _, stderr = runRunner(t, childEnv(), e2ePlan("regress-slow.yaml"), "--stage", "other", "--baseline", alone, "--out", plain, "--quiet", "--report", "json")
	if rep := loadReport(t, plain); code != 0 || rep.Comparison == nil || rep.Comparison.Records ||
		!slices.ContainsFunc(rep.Warnings, func(w string) bool { return strings.Contains(w, "no request records of the baseline") }) {
		t.Errorf("--baseline without records: exit %d, comparison %+v, warnings %q\n%s", code, rep.Comparison, rep.Warnings, stderr)
	}
	// A plan whose checks call worse() cannot be gated on it: refused.
	code, _, stderr = runRunner(t, childEnv(), "report", slow, "--baseline", alone, "--out", filepath.Join(dir, "no-records"), "--quiet")
	if code != 2 || !strings.Contains(stderr, "has no request records") || !strings.Contains(stderr, "which worse() in check") {
		t.Errorf("report --baseline without records, worse() in the plan: exit %d\n%s", code, stderr)
	}
	// The plan's gate judged the slow run (its worse() on TTFT p50, failed
	// at every level a busy machine left conclusive): runner compare on the
	// same pair at the same percentage fails exactly where it failed.
	var failedAt []string
	slowRep := loadReport(t, slow)
	for _, l := range []string{"c=1", "c=2"} {
		if outcome(t, slowRep, "sweep", "ttft p50 not significantly worse by more than 10%", l).Status == result.StatusFail {
			failedAt = append(failedAt, l)
		}
	}
	code, _, stderr = runRunner(t, childEnv(), "compare", fast, slow, "--fail-above", "10")
	if want := map[bool]int{true: 1, false: 0}[len(failedAt) > 0]; code != want || !behind && len(failedAt) != 2 {
		t.Errorf("compare --fail-above 10, where the slow run's worse() failed at %v: exit %d\n%s", failedAt, code, stderr)
	}
	for _, l := range failedAt {
		if !strings.Contains(stderr, "sweep "+l+" ttft_p50_ms: +") {
			t.Errorf("compare --fail-above 10 does not name %s, where the slow run's worse() failed:\n%s", l, stderr)
		}
	}
	judgedNothing(t, dir, fast, plain)
	if code, _, stderr = runRunner(t, childEnv(), "compare", fast, slow, "--confidence", "1.5"); code != 2 || !strings.Contains(stderr, "--confidence") {
		t.Errorf("--confidence 1.5: exit %d\n%s", code, stderr)
	}
}

// judgedNothing: against a baseline whose every level is marked not
// judgeable (here client_bottleneck, as a starved machine marks it), the
// run's comparison judges nothing and says so first, in every report;
// --fail-inconclusive makes that exit 1 and the verdict fail (issue 23,
// point 1). plain is a run of stage "other" of the plan fast ran.
func judgedNothing(t *testing.T, dir, fast, plain string) {
	t.Helper()
	starved := filepath.Join(dir, "starved")
	if err := os.MkdirAll(starved, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"plan.yaml", "run.jsonl", "requests.jsonl"} {
		writeFile(t, filepath.Join(starved, f), readFile(t, filepath.Join(fast, f)))
	}
	writeFile(t, filepath.Join(starved, "report.json"), strings.ReplaceAll(readFile(t, filepath.Join(fast, "report.json")), `"client_bottleneck": false`, `"client_bottleneck": true`))
	out := filepath.Join(dir, "judged-nothing")
	code, stdout, stderr := runRunner(t, childEnv(), "report", plain, "--baseline", starved, "--out", out)
	if code != 0 || !strings.Contains(stdout, "Against the baseline "+starved+"\nJudged nothing: gated ") {
		t.Errorf("report --baseline, every level starved: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if md := readFile(t, filepath.Join(out, "summary.md")); !strings.Contains(md, "\n\nJudged nothing: gated ") {
		t.Errorf("summary.md does not say the gate judged nothing:\n%s", md)
	}
	out = filepath.Join(dir, "judged-nothing-fails")
	code, stdout, stderr = runRunner(t, childEnv(), "report", plain, "--baseline", starved, "--out", out, "--fail-inconclusive")
	if rep := loadReport(t, out); code != 1 || rep.Verdict != result.StatusFail || !strings.Contains(stderr, "--fail-inconclusive: the comparison with the baseline judged nothing") {
		t.Errorf("report --fail-inconclusive: exit %d, verdict %s\n%s\n%s", code, rep.Verdict, stdout, stderr)
	}
}

// TestE2EStatisticalGate: two runs of one plan on the simulator do not fail
// runner compare --fail-above 20 (an A/A pair), and a run whose simulator is
// 50% slower per token (itl_ms ×1.5) fails it on TPOT, named with its
// interval and samples. The margins (20% against 50%) keep it robust on a
// loaded machine; docs/statistics.md has the measured rates at 10%.
func TestE2EStatisticalGate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plan := e2ePlan("gate-stat.yaml")
	slowPlan := writeFile(t, filepath.Join(dir, "slow.yaml"), strings.Replace(readFile(t, plan), "itl_ms: 5}", "itl_ms: 7.5}", 1))
	runs := map[string]string{"a": plan, "a2": plan, "b": slowPlan}
	var wg sync.WaitGroup
	for name, p := range runs {
		wg.Go(func() {
			if code, stdout, stderr := runUnstarved(t, filepath.Join(dir, name), p, "--quiet", "--report", "json"); code != 0 {
				t.Errorf("run %s: exit %d\n%s\n%s", name, code, stdout, stderr)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	a, a2, b := filepath.Join(dir, "a"), filepath.Join(dir, "a2"), filepath.Join(dir, "b")
	if code, stdout, stderr := runRunner(t, childEnv(), "compare", a, a2, "--fail-above", "20"); code != 0 {
		t.Errorf("A/A pair failed the gate: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr := runRunner(t, childEnv(), "compare", a, b, "--fail-above", "20", "--metrics", "all", "--all")
	if (code != 0 || !machineBehind(t, stdout, "c=1", "tpot_p50_ms", a, b)) &&
		(code != 1 || !strings.Contains(stderr, "one c=1 tpot_p50_ms: +") || !strings.Contains(stderr, "worse (p50 of 19 and 19 requests)")) {
		t.Errorf("itl_ms ×1.5 not found: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// One gate, one answer (issue 23, point 2): the plan gates TTFT, which
	// itl_ms does not move; its worse() check with --baseline and runner
	// compare --fail-above judge that family alone, and agree.
	runCode, _, runErr := runRunner(t, childEnv(), "report", b, "--baseline", a, "--out", filepath.Join(dir, "b-gated"), "--quiet")
	cmpCode, cmpOut, cmpErr := runRunner(t, childEnv(), "compare", a, b, "--fail-above", "20")
	if runCode != cmpCode || cmpCode != 0 || !strings.Contains(cmpOut, "judged: the plan's worse() metrics (ttft_p50_ms)") {
		t.Errorf("the plan's gate exits %d (%s), runner compare %d on the same pair:\n%s\n%s", runCode, runErr, cmpCode, cmpOut, cmpErr)
	}
	if rep := loadReport(t, filepath.Join(dir, "b-gated")); rep.Comparison == nil || rep.Comparison.Family == nil || rep.Comparison.Family.Source != "plan" {
		t.Errorf("the report does not say which family was judged: %+v", rep.Comparison)
	}
}

// machineBehind reports whether the comparison table in out shows the
// change of metric at label as inconclusive where the simulator fell behind
// its model (sim_behind), or the client was the bottleneck, in one of the
// runs (result directories): on a machine that busy, its lateness (or the
// noise it adds) can make a change that size, the verdict is rightly
// inconclusive, and the test logs it instead of asserting the verdict.
func machineBehind(t *testing.T, out, label, metric string, runs ...string) bool {
	t.Helper()
	behind := false
	for _, dir := range runs {
		for _, st := range loadReport(t, dir).Stages {
			for _, p := range st.Points {
				behind = behind || (p.SimBehind || p.ClientBottleneck) && p.Label() == label
			}
		}
	}
	for line := range strings.Lines(out) {
		if behind && strings.Contains(line, " "+label+" ") && strings.Contains(line, " "+metric+" ") && strings.Contains(line, "inconclusive") {
			t.Logf("the simulator fell behind its model or the client was the bottleneck on this busy machine, so %s %s is rightly inconclusive:\n%s", label, metric, strings.TrimSpace(line))
			return true
		}
	}
	return false
}

// TestE2EReplicatedGate is TestE2EStatisticalGate with replicates: each
// request is recorded with its replicate and each replicate's window in
// run.jsonl, an A/A pair passes --fail-above 20, a twice slower inter-token
// latency fails it on a TPOT or E2E statistic with the replicates named
// (which one is not asserted: two streams make TPOT bimodal, a
// 12-request replicate's median flips between the modes, and a busy
// machine's stalls widen the mean's interval), and runner report
// recomputes the comparison byte for byte.
func TestE2EReplicatedGate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plan := e2ePlan("gate-replicates.yaml")
	slowPlan := writeFile(t, filepath.Join(dir, "slow.yaml"), strings.Replace(readFile(t, plan), "itl_ms: 5}", "itl_ms: 10}", 1))
	for name, p := range map[string]string{"a": plan, "a2": plan} {
		if code, stdout, stderr := runUnstarved(t, filepath.Join(dir, name), p, "--quiet", "--report", "json"); code != 0 {
			t.Fatalf("run %s: exit %d\n%s\n%s", name, code, stdout, stderr)
		}
	}
	a, a2, b := filepath.Join(dir, "a"), filepath.Join(dir, "a2"), filepath.Join(dir, "b")
	if code, stdout, stderr := runUnstarved(t, b, slowPlan, "--quiet", "--baseline", a); code != 0 {
		t.Fatalf("run b: exit %d\n%s\n%s", code, stdout, stderr)
	}
	reps := map[int]int{}
	for _, line := range strings.Split(strings.TrimSpace(readFile(t, filepath.Join(a, "requests.jsonl"))), "\n") {
		var r result.Request
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		if !r.Warmup {
			reps[r.Replicate]++
		}
	}
	if len(reps) != 4 || reps[0] != 12 || reps[3] != 12 {
		t.Errorf("measured requests by replicate: %v, want 4 of 12", reps)
	}
	for _, line := range strings.Split(strings.TrimSpace(readFile(t, filepath.Join(a, "run.jsonl"))), "\n") {
		var ev struct {
			Kind  string              `json:"kind"`
			Level *result.LevelRecord `json:"level"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Kind != "level" {
			continue
		}
		var wall int64
		for _, w := range ev.Level.Windows {
			wall += w.WallNs
		}
		if len(ev.Level.Windows) != 4 || wall != ev.Level.WallNs {
			t.Errorf("level record: %d replicate windows of %d ns in all, want 4 adding up to the level's %d ns", len(ev.Level.Windows), wall, ev.Level.WallNs)
		}
	}
	if code, stdout, stderr := runRunner(t, childEnv(), "compare", a, a2, "--fail-above", "20"); code != 0 {
		t.Errorf("A/A pair failed the gate: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr := runRunner(t, childEnv(), "compare", a, b, "--fail-above", "20", "--all")
	// What slows is every token: the gate fails on a TPOT or E2E statistic
	// judged over the replicates (on a busy machine the mean may be
	// inconclusive while the median decides, or the other way round), or,
	// where the simulator fell behind in both runs, passes with TPOT's mean
	// rightly inconclusive.
	slowed := regexp.MustCompile(`two c=2 (tpot|e2e)_[a-z0-9]+_ms: \+[0-9.]+% \[[^]]*\] worse \((mean|p50) of 48 and 48 requests in 4 and 4 replicates\)`)
	if (code != 0 || !machineBehind(t, stdout, "c=2", "tpot_mean_ms", a, b)) && (code != 1 || !slowed.MatchString(stderr)) {
		t.Errorf("itl_ms ×2 not found with replicates: exit %d\n%s\n%s", code, stdout, stderr)
	}
	again := filepath.Join(dir, "again")
	if code, _, stderr := runRunner(t, childEnv(), "report", b, "--baseline", a, "--out", again, "--quiet"); code != 0 {
		t.Fatalf("report: exit %d\n%s", code, stderr)
	}
	if live, re := readFile(t, filepath.Join(b, "report.json")), readFile(t, filepath.Join(again, "report.json")); live != re || !strings.Contains(live, `"replicates_base": 4`) {
		t.Errorf("recomputed report.json differs from the live one or has no replicates (%d vs %d bytes)", len(live), len(re))
	}
}

// TestE2EExamplePlans runs the shipped examples on the simulator:
// plans/slo-gate.yaml passes, and plans/baseline-regression.yaml's two steps
// (record, then --baseline) compare every level with the recorded one. The
// second step's verdict is checked against the values its checks read, so
// run-to-run noise on a busy machine cannot make the test flaky, only a wrong
// verdict can fail it.
func TestE2EExamplePlans(t *testing.T) {
	t.Parallel()
	t.Run("slo-gate", func(t *testing.T) {
		t.Parallel()
		out := t.TempDir()
		code, stdout, stderr := runRunner(t, childEnv(), filepath.Join("..", "plans", "slo-gate.yaml"), "--out", out, "--quiet")
		rep := loadReport(t, out)
		// Its latency gates are real: on a machine loaded enough they may
		// fail, so the test holds the run to a consistent verdict, not to a
		// pass: every level ran without errors, every check read real values,
		// and the exit code is 1 exactly when a fail-severity check failed.
		if rep.StopReason != result.StopCompleted || len(rep.Stages) != 1 || len(rep.Stages[0].Points) != 2 {
			t.Fatalf("exit %d, stop %q\n%s\n%s", code, rep.StopReason, stdout, stderr)
		}
		for _, p := range rep.Stages[0].Points {
			if p.Failed != 0 || p.Completed == 0 || p.Goodput == nil {
				t.Errorf("%s: completed %d failed %d goodput %v", p.Label(), p.Completed, p.Failed, p.Goodput)
			}
		}
		failed := false
		for _, c := range rep.Stages[0].Checks {
			if c.Status == result.StatusFail {
				failed = true
			}
			if c.Status != result.StatusPass && c.Message != "expression is false" {
				t.Errorf("%s %s: %s (%s)", c.Name, c.LevelLabel, c.Status, c.Message)
			}
		}
		if wantCode := map[bool]int{false: 0, true: 1}[failed]; code != wantCode || (rep.Verdict == result.StatusPass) == failed {
			t.Errorf("exit %d verdict %s, want exit %d\n%s", code, rep.Verdict, wantCode, stderr)
		}
		if statuses(rep)[result.StatusPass] == 0 {
			t.Errorf("no check passed: %v", statuses(rep))
		}
	})
	t.Run("baseline-regression", func(t *testing.T) {
		t.Parallel()
		plan := filepath.Join("..", "plans", "baseline-regression.yaml")
		dir := t.TempDir()
		base, next := filepath.Join(dir, "baseline"), filepath.Join(dir, "next")
		if code, stdout, stderr := runRunner(t, childEnv(), plan, "--out", base, "--quiet"); code != 0 {
			t.Fatalf("record: exit %d\n%s\n%s", code, stdout, stderr)
		}
		code, stdout, stderr := runRunner(t, childEnv(), plan, "--out", next, "--quiet", "--baseline", base)
		rep := loadReport(t, next)
		// Each worse() check's status is the gate's rule on the comparison
		// report.json carries, whatever the machine's noise made of it.
		compared := 0
		failed := false
		for _, c := range rep.Stages[0].Checks {
			metric, _, ok := strings.Cut(strings.TrimPrefix(c.Expr, `baseline == nil || !worse("`), `"`)
			if !ok || c.Level == nil {
				continue
			}
			compared++
			var cmp *result.Comparison
			for i, x := range rep.Stages[0].Points[*c.Level].BaselineComparison {
				if x.Metric == metric {
					cmp = &rep.Stages[0].Points[*c.Level].BaselineComparison[i]
				}
			}
			if cmp == nil || cmp.Interval == nil {
				t.Fatalf("%s %s: no comparison with an interval of %s", c.Name, c.LevelLabel, metric)
			}
			want := result.StatusPass
			if cmp.Fails(10) {
				want = map[string]string{"fail": result.StatusFail, "warn": result.StatusWarn}[c.Severity]
				failed = failed || c.Severity == "fail"
			}
			if c.Status != want {
				t.Errorf("%s %s: %s: status %s, want %s", c.Name, c.LevelLabel, cmp.Describe(), c.Status, want)
			}
		}
		if compared != 6 {
			t.Errorf("%d worse() outcomes, want 3 checks on 2 levels", compared)
		}
		// Two runs on a shared machine may differ by more than the plan's
		// 10% throughput bound: the exit code must follow whatever the
		// fail-severity checks decided, each on the values it read.
		for _, c := range rep.Stages[0].Checks {
			if c.Severity == "fail" && c.Status == result.StatusFail {
				failed = true
			}
		}
		if wantCode := map[bool]int{false: 0, true: 1}[failed]; code != wantCode {
			t.Errorf("exit %d, want %d\n%s\n%s", code, wantCode, stdout, stderr)
		}
		if len(rep.Warnings) != 0 {
			t.Errorf("same plan, same levels: want no baseline warnings, got %q", rep.Warnings)
		}
	})
}

// TestE2EEdgeExits: Ctrl-C while waiting for an endpoint exits 130 at once
// with an interrupted report; an output directory that cannot be created is
// exit 3; a --baseline that is not a report is exit 2.
func TestE2EEdgeExits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plan := writeFile(t, filepath.Join(dir, "wait.yaml"), fmt.Sprintf(`version: 1
name: e2e-wait
endpoints:
  gone: {base_url: "http://%s/v1", ready_timeout: 60s}
prompts:
  p: {synthetic: {input_tokens: 16, sizing: reference}}
stages:
  - {name: s, endpoint: gone, prompts: p, concurrency: [1], requests: 1}
`, closedPort(t)))

	t.Run("interrupt while waiting", func(t *testing.T) {
		out := filepath.Join(dir, "out-wait")
		p := startRunner(t, childEnv(), plan, "--out", out, "--no-progress")
		p.waitStderr(t, "waiting for the endpoint", 30*time.Second)
		sent := time.Now()
		if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		if code := p.wait(t, 10*time.Second); code != 130 {
			t.Fatalf("exit %d, want 130\n%s", code, p.stderr.String())
		}
		if took := time.Since(sent); took > 3*time.Second {
			t.Errorf("took %s to stop", took)
		}
		if rep := loadReport(t, out); rep.StopReason != result.StopInterrupted {
			t.Errorf("stop %q", rep.StopReason)
		}
	})
	t.Run("output directory", func(t *testing.T) {
		file := writeFile(t, filepath.Join(dir, "not-a-dir"), "x")
		code, _, stderr := runRunner(t, childEnv(), e2ePlan("gate.yaml"), "--out", filepath.Join(file, "sub"))
		if code != 3 || !strings.Contains(stderr, "not-a-dir") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("exit %d, want 3 with one line naming the path\n%s", code, stderr)
		}
	})
	t.Run("bad baseline", func(t *testing.T) {
		bad := writeFile(t, filepath.Join(dir, "bad.json"), "{not json")
		code, _, stderr := runRunner(t, childEnv(), e2ePlan("gate.yaml"), "--baseline", bad, "--out", filepath.Join(dir, "out-bad"))
		if code != 2 || !strings.Contains(stderr, "bad.json") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("exit %d, want 2 with one line naming the file\n%s", code, stderr)
		}
		code, _, stderr = runRunner(t, childEnv(), e2ePlan("gate.yaml"), "--baseline", filepath.Join(dir, "missing.json"), "--out", filepath.Join(dir, "out-bad"))
		if code != 2 || !strings.Contains(stderr, "missing.json") {
			t.Errorf("missing baseline: exit %d\n%s", code, stderr)
		}
		if _, err := os.Stat(filepath.Join(dir, "out-bad")); err == nil {
			t.Error("a bad --baseline still ran the plan")
		}
	})
}

// TestE2ERecomputeEqualsLive runs every example plan, then recomputes its
// reports from the result directory's records alone (runner report DIR):
// every report file must be byte for byte the one the live run wrote.
func TestE2ERecomputeEqualsLive(t *testing.T) {
	t.Parallel()
	plans, _ := filepath.Glob(filepath.Join("..", "plans", "*.yaml"))
	if len(plans) < 5 {
		t.Fatalf("example plans: %v", plans)
	}
	for _, plan := range plans {
		name := strings.TrimSuffix(filepath.Base(plan), ".yaml")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			live, again := filepath.Join(t.TempDir(), "live"), filepath.Join(t.TempDir(), "again")
			code, _, stderr := runRunner(t, childEnv(), plan, "--out", live, "--quiet", "--report", "json,junit,markdown,html")
			if code != 0 && code != 1 {
				t.Fatalf("run: exit %d\n%s", code, stderr)
			}
			code2, _, stderr := runRunner(t, childEnv(), "report", live, "--out", again, "--quiet", "--report", "json,junit,markdown,html")
			if code2 != code {
				t.Fatalf("report: exit %d, the run exited %d\n%s", code2, code, stderr)
			}
			sameReports(t, live, again, "recomputed from the records differs from the live one")
		})
	}
}

// sameReports fails the test for each report file of dir b that is not, byte
// for byte, dir a's.
func sameReports(t *testing.T, a, b, differs string) {
	t.Helper()
	for _, f := range []string{"report.json", "junit.xml", "summary.md", "report.html"} {
		x, err := os.ReadFile(filepath.Join(a, f))
		if err != nil {
			t.Fatal(err)
		}
		y, err := os.ReadFile(filepath.Join(b, f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(x, y) {
			t.Errorf("%s %s:\n%s", f, differs, firstDiff(x, y))
		}
	}
}

// firstDiff shows where two files first differ.
func firstDiff(a, b []byte) string {
	al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d:\nlive:      %s\nrecomputed: %s", i+1, al[i], bl[i])
		}
	}
	return fmt.Sprintf("lengths differ: %d vs %d lines", len(al), len(bl))
}

// TestE2ECapacitySearch: a search whose budget runs out reports the target
// it resolved and leaves the other's capacity null, which fails the check
// that reads it (exit 1), naming it; with --baseline, stage checks read the
// baseline's capacities, a null one failing by name too.
func TestE2ECapacitySearch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, again := filepath.Join(dir, "run"), filepath.Join(dir, "again")
	code, stdout, stderr := runRunner(t, childEnv(), e2ePlan("capacity-budget.yaml"), "--out", out, "--report", "table,json,junit,markdown,html")
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, stdout, stderr)
	}
	rep := loadReport(t, out)
	st := rep.Stages[0]
	sr := st.Search
	if sr == nil || sr.Stop != result.SearchStopProbeBudget || sr.Probes != 4 || len(st.Points) != 4 {
		t.Fatalf("search %+v, %d points", sr, len(st.Points))
	}
	for i, want := range []string{"probe 1 c=1", "probe 2 c=2", "probe 3 c=4", "probe 4 c=3"} {
		if got := st.Points[i].Label(); got != want {
			t.Errorf("probe %d is %q, want %q", i+1, got, want)
		}
	}
	a, b := sr.Targets[0], sr.Targets[1]
	if a.Status != result.SearchFound || a.Capacity == nil || *a.Capacity != 2 || !a.Confident || a.Fail.Load != 3 {
		t.Errorf("target a: %+v", a)
	}
	if b.Status != result.SearchUnresolved || b.Capacity != nil || b.Pass.Load != 4 || b.Fail != nil {
		t.Errorf("target b: %+v", b)
	}
	if c := outcome(t, rep, "search", "a found", ""); c.Status != result.StatusPass || c.Values[`capacity["a"]`] != 2.0 {
		t.Errorf("a found: %+v", c)
	}
	if c := outcome(t, rep, "search", "b found", ""); c.Status != result.StatusFail || !strings.Contains(c.Message, `capacity["b"] is null`) {
		t.Errorf("b found: %+v", c)
	}
	for name, doc := range map[string]string{"table": stdout, "summary.md": readFile(t, filepath.Join(out, "summary.md")),
		"junit.xml": readFile(t, filepath.Join(out, "junit.xml")), "report.html": readFile(t, filepath.Join(out, "report.html"))} {
		for _, s := range []string{"probe budget", "unresolved"} {
			if !strings.Contains(doc, s) {
				t.Errorf("%s does not say %q", name, s)
			}
		}
	}

	// Against itself as the baseline: the found capacity compares, the
	// null one fails by name; the report comes from the records alone.
	code, _, stderr = runRunner(t, childEnv(), "report", out, "--out", again, "--baseline", filepath.Join(out, "report.json"), "--report", "json")
	if code != 1 {
		t.Fatalf("report --baseline: exit %d\n%s", code, stderr)
	}
	rep = loadReport(t, again)
	if c := outcome(t, rep, "search", "a kept", ""); c.Status != result.StatusPass || c.Values[`baseline.capacity["a"]`] != 2.0 {
		t.Errorf("a kept: %+v", c)
	}
	if c := outcome(t, rep, "search", "baseline b", ""); c.Status != result.StatusFail || !strings.Contains(c.Message, `baseline.capacity["b"] is null`) {
		t.Errorf("baseline b: %+v", c)
	}
	if len(rep.Warnings) != 0 {
		t.Errorf("a probe's baseline is the baseline's probe at its load: want no gaps, got %q", rep.Warnings)
	}
}
