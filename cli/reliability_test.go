package cli

// Reliability through the real binary: secrets never leak into any output,
// bad input is one clear line and exit 2, plan timeouts are enforced, and TLS
// is verified unless the plan says otherwise (which is warned about).

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/sim"
)

// startSimHandler serves a fast simulator's handler over loopback, through
// wrap when given.
func startSimHandler(t *testing.T, cfg sim.Config, tlsServer bool, wrap func(http.Handler) http.Handler) *httptest.Server {
	t.Helper()
	s, err := sim.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	h := s.Handler()
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewUnstartedServer(h)
	// Refused handshakes are what TestTLSThroughCLI wants; do not log them.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	if tlsServer {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv
}

func writeFile(t *testing.T, path, body string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSecretsNeverLeak runs plans holding a known API key, header values and
// a URL password against a simulator that requires them, through faults,
// sporadic 401s and an unreachable second endpoint, at debug level in both log
// formats with every report format, then searches every byte the runner
// wrote (stdout, stderr, every file in --out, the step summary) for them.
func TestSecretsNeverLeak(t *testing.T) {
	t.Parallel()
	const (
		key     = "sk-e2e-KEY-7f3a9c11"
		hdr     = "hdr-e2e-ORG-55d0e2"
		hdr2    = "hdr-e2e-AUTH-91bb4f"
		urlPass = "pw-e2e-URL-0c7e3a"
	)
	secrets := []string{key, hdr, hdr2, urlPass}

	cfg := sim.FastConfig()
	cfg.Faults = sim.Faults{HTTP429: 0.1, HTTP500: 0.1, Malformed: 0.1, HTML: 0.1, ErrorInStream: 0.1, Disconnect: 0.1, Stall: 0.05, AfterTokens: 2}
	var authorized, rejected atomic.Int64
	var completions atomic.Int64
	var (
		rejectedMu    sync.Mutex
		rejectedPaths []string
	)
	srv := startSimHandler(t, cfg, false, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// The runner scrapes /metrics without credentials (as vLLM
			// serves it, outside --api-key); everything else needs them.
			if r.URL.Path != "/metrics" && (r.Header.Get("Authorization") != "Bearer "+key || r.Header.Get("X-Org-Token") != hdr) {
				rejected.Add(1)
				rejectedMu.Lock()
				rejectedPaths = append(rejectedPaths, r.Method+" "+r.URL.Path)
				rejectedMu.Unlock()
				http.Error(w, `{"error":{"message":"missing or wrong credentials","type":"invalid_request_error"}}`, http.StatusUnauthorized)
				return
			}
			authorized.Add(1)
			if strings.HasSuffix(r.URL.Path, "/completions") && completions.Add(1)%7 == 0 {
				// A sporadic 401, as from a gateway rotating keys.
				http.Error(w, `{"error":{"message":"invalid api key","type":"invalid_request_error"}}`, http.StatusUnauthorized)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	gone := closedPort(t)
	dir := t.TempDir()
	plan := writeFile(t, filepath.Join(dir, "secret.yaml"), fmt.Sprintf(`version: 1
name: e2e-secrets
endpoints:
  guarded:
    base_url: http://bench:${TEST_URLPASS}@%s/v1
    api_key: ${TEST_KEY}
    headers: {X-Org-Token: "${TEST_HDR}"}
    timeouts: {idle: 300ms}
  gone:
    base_url: http://bench:${TEST_URLPASS}@%s/v1
    headers: {Authorization: "Bearer ${TEST_HDR2}"}
    ready_timeout: 1s
prompts:
  p: {synthetic: {input_tokens: 16, sizing: reference}}
stages:
  - name: faulty
    endpoint: guarded
    prompts: p
    output_tokens: 6
    concurrency: [4]
    requests: 40
    warmup: 1
    checks:
      - {name: no failures, expr: failed == 0}
  - {name: never, endpoint: gone, prompts: p, concurrency: [1], requests: 1}
`, strings.TrimPrefix(srv.URL, "http://"), gone))
	// Every secret is a credential for loopback only, as a job would allow it.
	env := childEnv("TEST_KEY="+key, "TEST_HDR="+hdr, "TEST_HDR2="+hdr2, "TEST_URLPASS="+urlPass, "RUNNER_ALLOW_ENV=*@localhost")

	type run struct {
		name, stdout, stderr, out string
		code                      int
	}
	var runs []run
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		// Faults and 401s against the guarded endpoint: checks fail (exit 1).
		{"json", []string{"--stage", "faulty", "--log-format", "json"}, 1},
		// The unreachable endpoint stops the run before any stage (exit 3).
		{"text", []string{"--log-format", "text"}, 3},
	} {
		out := filepath.Join(dir, "out-"+tc.name)
		summary := filepath.Join(dir, "summary-"+tc.name+".md")
		args := append([]string{plan, "--out", out, "--log-level", "debug", "--report", "table,json,junit,markdown,html"}, tc.args...)
		p := startRunner(t, append(env, "GITHUB_STEP_SUMMARY="+summary), args...)
		code := p.wait(t, 60*time.Second)
		if code != tc.want {
			t.Errorf("%s run: exit %d, want %d\n%s", tc.name, code, tc.want, p.stderr.String())
		}
		runs = append(runs, run{tc.name, p.stdout.String(), p.stderr.String(), out, code})
	}
	if authorized.Load() < 40 || completions.Load() < 40 {
		t.Fatalf("the simulator saw the credentials on %d requests (%d completions); the secrets did not flow", authorized.Load(), completions.Load())
	}
	if rejected.Load() != 0 {
		rejectedMu.Lock()
		t.Errorf("%d requests came without the right credentials: %v", rejected.Load(), rejectedPaths)
		rejectedMu.Unlock()
	}
	// The faulty run must really have gone through failures, or the search
	// below would prove little.
	rep := loadReport(t, runs[0].out)
	kinds := rep.Stages[0].Points[0].ErrorsByKind
	if kinds["http_401"] == 0 || kinds["http_429"]+kinds["http_500"]+kinds[result.ErrMalformed]+kinds[result.ErrServer] == 0 {
		t.Errorf("faulty run errors %v: want 401s and injected faults", kinds)
	}
	if !strings.Contains(runs[0].stderr, `"level":"debug"`) {
		t.Errorf("json run printed no debug logs:\n%.2000s", runs[0].stderr)
	}
	if !strings.Contains(runs[1].stderr, "bench@") && !strings.Contains(runs[1].stderr, gone) {
		t.Errorf("text run does not name the unreachable endpoint:\n%s", runs[1].stderr)
	}

	var searched int
	check := func(where, s string) {
		searched++
		for _, sec := range secrets {
			if strings.Contains(s, sec) {
				t.Errorf("%s contains the secret %q", where, sec)
			}
		}
	}
	for _, r := range runs {
		check(r.name+" stdout", r.stdout)
		check(r.name+" stderr", r.stderr)
	}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path == plan {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		check(path, string(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// 2 runs × 2 streams + report.json, junit.xml, summary.md, report.html,
	// requests.jsonl for both runs + 2 step summaries.
	if searched < 4+2*5+2 {
		t.Errorf("searched only %d outputs", searched)
	}
}

// oneLineExit2 asserts an exit 2 with exactly one line on stderr holding
// every want, and no stack trace.
func oneLineExit2(t *testing.T, name string, code int, stderr string, want ...string) {
	t.Helper()
	if code != 2 {
		t.Errorf("%s: exit %d, want 2\n%s", name, code, stderr)
		return
	}
	if n := strings.Count(stderr, "\n"); n != 1 {
		t.Errorf("%s: %d lines on stderr, want one:\n%s", name, n, stderr)
	}
	for _, w := range want {
		if !strings.Contains(stderr, w) {
			t.Errorf("%s: stderr lacks %q:\n%s", name, w, stderr)
		}
	}
	if strings.Contains(stderr, "goroutine") || strings.Contains(stderr, "panic") {
		t.Errorf("%s: stack trace:\n%s", name, stderr)
	}
}

// TestBadPromptFiles: a prompt file that is missing, empty, not JSON on some
// line, too large, or a pipe is a plan error (exit 2, one line naming the
// file and, for a bad line, its number) before any traffic: the run
// directory is never created. How long the refusal takes is not asserted: a
// line over the limit is read to its end (streamed, see promptfile), 64 MiB
// that took 1.1 s to 1.7 s beside two busy loops and longer beside the
// whole suite; runRunner's 60 s bound catches a hang.
func TestBadPromptFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "empty.jsonl"), "")
	writeFile(t, filepath.Join(dir, "broken.jsonl"), "{\"prompt\": \"one\"}\n{\"prompt\": \"two\"}\n{\"prompt\": oops\n{\"prompt\": \"four\"}\n")
	// A sparse file over the 64 MiB limit (costs no disk): one line of zero
	// bytes longer than an entry may be.
	huge := filepath.Join(dir, "huge.jsonl")
	writeFile(t, huge, "")
	if err := os.Truncate(huge, 65<<20); err != nil {
		t.Fatal(err)
	}
	pipe := filepath.Join(dir, "pipe.jsonl")
	havePipe := syscall.Mkfifo(pipe, 0o600) == nil

	for _, tc := range []struct {
		file string
		want []string
	}{
		{"missing.jsonl", []string{"missing.jsonl"}},
		{"empty.jsonl", []string{"empty.jsonl"}},
		{"broken.jsonl", []string{"broken.jsonl:3:", "not valid JSON"}},
		{"huge.jsonl", []string{"huge.jsonl:1: line is longer than 64 MiB"}},
		{"pipe.jsonl", []string{"pipe.jsonl"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			if tc.file == "pipe.jsonl" && !havePipe {
				t.Skip("mkfifo not available")
			}
			plan := writeFile(t, filepath.Join(dir, "plan-"+tc.file+".yaml"), `version: 1
name: bad-prompts
endpoints:
  sim: {simulator: {ttft_ms: 5, itl_ms: 1}}
prompts:
  p: {file: `+tc.file+`}
stages:
  - {name: s, endpoint: sim, prompts: p, concurrency: [1], requests: 1}
`)
			out := filepath.Join(dir, "out-"+tc.file)
			code, _, stderr := runRunner(t, childEnv(), plan, "--out", out)
			oneLineExit2(t, tc.file, code, stderr, tc.want...)
			if _, err := os.Stat(out); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s: the run directory exists after a plan error (%v): the plan was run", tc.file, err)
			}
		})
	}
}

// TestHostilePlans: absurd values and an oversized plan are rejected with one
// clear line (exit 2) without allocating what they ask for: the refusing
// process peaks under 256 MiB (19 to 30 MiB measured), where a billion of
// anything would take gigabytes. Memory, not time: a 10 s bound on the
// refusal (80 to 150 ms on a quiet machine) is one a loaded machine can pass.
func TestHostilePlans(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := readFile(t, e2ePlan("gate.yaml"))
	for _, tc := range []struct {
		name, old, new string
		want           []string
	}{
		{"concurrency 1e9", "concurrency: [1, 2]", "concurrency: [1000000000]", []string{"concurrency"}},
		{"requests 1e12", "requests: 4", "requests: 1000000000000", []string{"requests"}},
		{"negative duration", "requests: 4", "duration: -5s", []string{"duration"}},
		{"negative ready timeout", "simulator: {ttft_ms: 5", "ready_timeout: -1s\n    simulator: {ttft_ms: 5", []string{"ready_timeout"}},
		{"output tokens 1e9", "output_tokens: 8", "output_tokens: 1000000000", []string{"output_tokens"}},
		{"rate 1e12", "concurrency: [1, 2]", "rate: [1000000000000]\n    duration: 1s", []string{"rate"}},
		{"5 MB plan", "name: e2e-gate", "name: e2e-gate\ndescription: " + strings.Repeat("x", 5<<20), []string{"4 MiB"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := strings.Replace(base, tc.old, tc.new, 1)
			if body == base {
				t.Fatalf("%q not in the plan", tc.old)
			}
			plan := writeFile(t, filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".yaml"), body)
			p := startRunner(t, childEnv(), plan, "--out", filepath.Join(dir, "out"))
			code := p.wait(t, 60*time.Second)
			oneLineExit2(t, tc.name, code, p.stderr.String(), tc.want...)
			if ru, ok := p.cmd.ProcessState.SysUsage().(*syscall.Rusage); !ok {
				t.Error("no resource usage for the refusing process")
			} else if ru.Maxrss > 256<<10 { // KiB
				t.Errorf("peak RSS %d KiB refusing the plan", ru.Maxrss)
			}
		})
	}
}

// TestPlanTimeoutsThroughCLI: each plan timeout (idle, first_token, request)
// reaches the engine from the plan and classifies requests as timeout with a
// sample naming it; a run whose every request failed exits 3.
func TestPlanTimeoutsThroughCLI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plan := writeFile(t, filepath.Join(dir, "timeouts.yaml"), `version: 1
name: e2e-timeouts
endpoints:
  stalls:
    simulator: {ttft_ms: 5, itl_ms: 1, faults: {stall: 1, after_tokens: 2}}
    timeouts: {idle: 150ms}
  slow-start:
    simulator: {ttft_ms: 5000, itl_ms: 1}
    timeouts: {first_token: 150ms}
  long:
    simulator: {ttft_ms: 5, itl_ms: 5}
    timeouts: {request: 150ms}
prompts:
  p: {synthetic: {input_tokens: 16, sizing: reference}}
stages:
  - {name: idle, endpoint: stalls, prompts: p, output_tokens: 8, concurrency: [2], warmup: 0}
  - {name: first-token, endpoint: slow-start, prompts: p, output_tokens: 8, concurrency: [2], warmup: 0}
  - {name: request, endpoint: long, prompts: p, output_tokens: 500, concurrency: [2], warmup: 0}
`)
	out := filepath.Join(dir, "out")
	start := time.Now()
	code, stdout, stderr := runRunner(t, childEnv(), plan, "--out", out, "--quiet", "--log-level", "debug")
	if code != 3 || !strings.Contains(stderr, "every request failed") {
		t.Fatalf("exit %d, want 3 (every request failed)\n%s\n%s", code, stdout, stderr)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("took %s; the timeouts did not bound the requests\n%s", took, stderr)
	}
	rep := loadReport(t, out)
	if rep.Verdict != result.StatusFail {
		t.Errorf("report.json verdict %q for a run that exited 3", rep.Verdict)
	}
	want := map[string]string{"idle": "idle timeout", "first-token": "first token", "request": "request timeout"}
	if len(rep.Stages) != len(want) {
		t.Fatalf("%d stages", len(rep.Stages))
	}
	for _, st := range rep.Stages {
		p := st.Points[0]
		if p.Failed != 2 || p.ErrorsByKind[result.ErrTimeout] != 2 || !strings.Contains(p.ErrorSamples[result.ErrTimeout], want[st.Name]) {
			t.Errorf("stage %s: failed %d kinds %v samples %v", st.Name, p.Failed, p.ErrorsByKind, p.ErrorSamples)
		}
	}
}

// TestTLSThroughCLI: an https endpoint with a self-signed certificate is
// refused by default (exit 3, the certificate named), trusted with ca_file,
// and reached with insecure_skip_verify, which is warned about in the log and
// in report.json.
func TestTLSThroughCLI(t *testing.T) {
	t.Parallel()
	srv := startSimHandler(t, sim.FastConfig(), true, nil)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "ca.pem"), string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})))
	planFor := func(name, tls string) string {
		return writeFile(t, filepath.Join(dir, name+".yaml"), fmt.Sprintf(`version: 1
name: e2e-tls-%s
endpoints:
  secure:
    base_url: %s/v1
    ready_timeout: 2s
%s
prompts:
  p: {synthetic: {input_tokens: 16, sizing: reference}}
stages:
  - {name: s, endpoint: secure, prompts: p, output_tokens: 4, concurrency: [1], requests: 2, warmup: 0}
`, name, srv.URL, tls))
	}
	var wg sync.WaitGroup
	type res struct {
		code           int
		stdout, stderr string
		out            string
	}
	results := map[string]*res{}
	for name, tls := range map[string]string{
		"default":  "",
		"ca-file":  "    tls: {ca_file: ca.pem}",
		"insecure": "    tls: {insecure_skip_verify: true}",
	} {
		r := &res{out: filepath.Join(dir, "out-"+name)}
		results[name] = r
		plan := planFor(name, tls)
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := startRunner(t, childEnv(), plan, "--out", r.out, "--report", "table,json,markdown")
			select {
			case <-p.done:
			case <-time.After(30 * time.Second):
				_ = p.cmd.Process.Kill()
				<-p.done
			}
			r.code, r.stdout, r.stderr = p.cmd.ProcessState.ExitCode(), p.stdout.String(), p.stderr.String()
		}()
	}
	wg.Wait()
	if r := results["default"]; r.code != 3 || !strings.Contains(r.stderr, "certificate") {
		t.Errorf("self-signed certificate without ca_file: exit %d, want 3 naming the certificate\n%s", r.code, r.stderr)
	}
	if r := results["ca-file"]; r.code != 0 || strings.Contains(r.stderr, "insecure") {
		t.Errorf("ca_file: exit %d\n%s", r.code, r.stderr)
	}
	r := results["insecure"]
	if r.code != 0 {
		t.Fatalf("insecure_skip_verify: exit %d\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "WRN") || !strings.Contains(r.stderr, "insecure_skip_verify") {
		t.Errorf("no warning in the log:\n%s", r.stderr)
	}
	rep := loadReport(t, r.out)
	warned := false
	for _, w := range append(append([]string{}, rep.Warnings...), rep.Stages[0].Warnings...) {
		warned = warned || strings.Contains(w, "insecure_skip_verify")
	}
	if !warned {
		t.Errorf("report.json does not carry the insecure_skip_verify warning: report %q stage %q", rep.Warnings, rep.Stages[0].Warnings)
	}
	if md := readFile(t, filepath.Join(r.out, "summary.md")); !strings.Contains(strings.ReplaceAll(md, `\_`, "_"), "insecure_skip_verify") {
		t.Error("summary.md does not carry the insecure_skip_verify warning")
	}
	if !strings.Contains(r.stdout, "insecure_skip_verify") {
		t.Error("the table does not carry the insecure_skip_verify warning")
	}
}

// TestFileLimit: a level needing more sockets than the hard open-file limit
// allows stops before sending anything, exit 3 with a message naming the
// stage and both numbers; with a low soft but high enough hard limit the same
// plan runs. (300 streams to an in-process simulator are 600 descriptors.)
func TestFileLimit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plan := writeFile(t, filepath.Join(dir, "wide.yaml"), `version: 1
name: e2e-wide
endpoints:
  sim: {simulator: {ttft_ms: 5, itl_ms: 1, max_num_seqs: 512}}
prompts:
  p: {synthetic: {input_tokens: 16, sizing: reference}}
stages:
  - {name: narrow, endpoint: sim, prompts: p, output_tokens: 4, concurrency: [2], requests: 2, warmup: 0}
  - {name: wide, endpoint: sim, prompts: p, output_tokens: 4, concurrency: [1, 300], requests: 300, warmup: 0}
`)
	low := filepath.Join(dir, "low")
	p := startRunnerNofile(t, 200, 200, childEnv(), plan, "--out", low, "--quiet")
	if code := p.wait(t, 30*time.Second); code != 3 {
		t.Fatalf("hard limit 200: exit %d, want 3\n%s", code, p.stderr.String())
	}
	msg := p.stderr.String()
	for _, w := range []string{"stage wide", "600", "hard limit is 200", "open-file limit"} {
		if !strings.Contains(msg, w) {
			t.Errorf("message lacks %q:\n%s", w, msg)
		}
	}
	if recs := readRequests(t, low); len(recs) != 0 {
		t.Errorf("%d requests sent before stopping", len(recs))
	}
	if rep := loadReport(t, low); rep.StopReason != result.StopError || len(rep.Stages) != 0 {
		t.Errorf("report: stop %q, %d stages", rep.StopReason, len(rep.Stages))
	}

	// --stage narrow needs few sockets: the same limit is enough.
	p = startRunnerNofile(t, 200, 200, childEnv(), plan, "--out", filepath.Join(dir, "narrow"), "--quiet", "--stage", "narrow")
	if code := p.wait(t, 30*time.Second); code != 0 {
		t.Errorf("--stage narrow under hard limit 200: exit %d\n%s", code, p.stderr.String())
	}

	// A low soft limit under a sufficient hard one is raised, and the run completes.
	high := filepath.Join(dir, "high")
	p = startRunnerNofile(t, 64, 4096, childEnv(), plan, "--out", high, "--quiet")
	if code := p.wait(t, 60*time.Second); code != 0 {
		t.Fatalf("soft 64, hard 4096: exit %d\n%s", code, p.stderr.String())
	}
	rep := loadReport(t, high)
	if len(rep.Stages) != 2 || rep.Stages[1].Points[1].Completed != 300 {
		t.Errorf("wide level did not complete: %+v", rep.Stages)
	}
}

// TestReadinessWaits: the runner waits for an endpoint that comes up late,
// falling back to /health when /v1/models is not served, and sends no
// completion before it is ready.
func TestReadinessWaits(t *testing.T) {
	t.Parallel()
	const warmUp = 800 * time.Millisecond
	var up atomic.Int64 // unix nanos of the first ready answer
	var early atomic.Int64
	started := time.Now()
	srv := startSimHandler(t, sim.FastConfig(), false, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ready := time.Since(started) >= warmUp
			switch {
			case r.URL.Path == "/v1/models":
				http.NotFound(w, r) // like a server without a model list
			case r.URL.Path == "/health" && !ready:
				http.Error(w, "loading", http.StatusServiceUnavailable)
			default:
				if r.URL.Path == "/health" {
					up.CompareAndSwap(0, time.Now().UnixNano())
				}
				if strings.HasSuffix(r.URL.Path, "/completions") && !ready {
					early.Add(1)
				}
				h.ServeHTTP(w, r)
			}
		})
	})
	dir := t.TempDir()
	plan := writeFile(t, filepath.Join(dir, "late.yaml"), fmt.Sprintf(`version: 1
name: e2e-late
endpoints:
  late:
    base_url: %s/v1
    ready_timeout: 10s
prompts:
  p: {synthetic: {input_tokens: 16, sizing: reference}}
stages:
  - {name: s, endpoint: late, prompts: p, output_tokens: 4, concurrency: [1], requests: 2, warmup: 0}
`, srv.URL))
	code, stdout, stderr := runRunner(t, childEnv(), plan, "--out", filepath.Join(dir, "out"), "--quiet")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if up.Load() == 0 || early.Load() != 0 {
		t.Errorf("ready via /health: %v; completions sent before ready: %d", up.Load() != 0, early.Load())
	}
	if rep := loadReport(t, filepath.Join(dir, "out")); rep.Stages[0].Points[0].Completed != 2 {
		t.Errorf("completed %d", rep.Stages[0].Points[0].Completed)
	}
}

// TestPrintRedactsURLCredentials: validate --print shows no password or
// credential-like query value from base_url or metrics_url.
func TestPrintRedactsURLCredentials(t *testing.T) {
	t.Parallel()
	const pw = "hunter2-url-secret"
	plan := writePlan(t, `version: 1
name: t
endpoints:
  e:
    base_url: http://bench:${PW}@127.0.0.1:9/v1?api-version=2024-02-01&api_key=${PW}
    metrics_url: http://bench:${PW}@127.0.0.1:9/metrics
prompts:
  p: {synthetic: {input_tokens: 16}}
stages:
  - {name: s, endpoint: e, prompts: p, concurrency: [1]}
`)
	code, out, errs := runCLI(t, map[string]string{"PW": pw}, "validate", "--allow-env", "PW@localhost", "--print", plan)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if strings.Contains(out, pw) {
		t.Errorf("--print shows the URL credentials:\n%s", out)
	}
	for _, want := range []string{"bench:%5BREDACTED%5D@127.0.0.1:9/v1", "api-version=2024-02-01", "api_key=%5BREDACTED%5D", "bench:%5BREDACTED%5D@127.0.0.1:9/metrics"} {
		if !strings.Contains(out, want) {
			t.Errorf("--print lacks %q:\n%s", want, out)
		}
	}
	if code, _, errs := runCLI(t, nil, "validate", writePlan(t, out)); code != 0 {
		t.Errorf("the printed plan does not validate: %s", errs)
	}
}
