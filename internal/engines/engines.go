// Package engines starts real serving engines on loopback for tests: the
// llama.cpp server shipped beside the repository (../shared/engines) and
// llm-d-inference-sim, built from the tools module tools/engines. Each
// engine gets a free loopback port, is waited for until it answers
// /health, and is stopped (SIGTERM, then SIGKILL) when the test binary is
// done with it; on Linux it also dies with the test binary.
//
// An engine that cannot be had on this machine (no ../shared, no module
// proxy to build the simulator) is an *UnavailableError: tests skip with its
// one-line reason, unless RUNNER_REQUIRE_ENGINES=1 (set by .ci/run) makes
// them fail instead, so CI cannot pass by skipping.
package engines

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// RequireEnv names the environment variable that turns an unavailable
// engine from a skip into a failure.
const RequireEnv = "RUNNER_REQUIRE_ENGINES"

// UnavailableError says why an engine cannot run on this machine.
type UnavailableError struct{ Reason string }

func (e *UnavailableError) Error() string { return e.Reason }

// Unavailable ends t: a skip with err's one-line reason when err is an
// *UnavailableError and RUNNER_REQUIRE_ENGINES is not set, a failure otherwise.
func Unavailable(t testing.TB, err error) {
	t.Helper()
	var ue *UnavailableError
	if errors.As(err, &ue) && os.Getenv(RequireEnv) != "1" {
		t.Skip("engine unavailable: " + ue.Reason)
	}
	t.Fatalf("engine: %v", err)
}

// TestContext is the context to build or start an engine under for t: it
// ends halfway between now and the test binary's deadline (go test's
// -timeout, 10 minutes by default), so a first build that would outlast the
// binary (Prometheus took an hour on two busy cores) gives up with an
// *UnavailableError, and the test skips with one line, instead of the
// binary panicking on its timeout with every other test of the package.
func TestContext(t testing.TB) (context.Context, context.CancelFunc) {
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if dl, ok := d.Deadline(); ok {
			return context.WithDeadline(context.Background(), time.Now().Add(time.Until(dl)/2))
		}
	}
	return context.WithCancel(context.Background())
}

// Engine is a running engine process.
type Engine struct {
	Name    string
	BaseURL string // http://127.0.0.1:PORT/v1
	Origin  string // http://127.0.0.1:PORT

	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	log  *tail
	stop sync.Once
}

// Log returns the end of the engine's output, for failure messages ("" for
// an Engine a test made itself, such as a proxy in front of one).
func (e *Engine) Log() string {
	if e.log == nil {
		return ""
	}
	return e.log.String()
}

// Stop ends the process: SIGTERM, and SIGKILL after 5 s. Safe to call twice.
func (e *Engine) Stop() {
	e.stop.Do(func() {
		_ = e.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-e.done:
		case <-time.After(5 * time.Second):
			_ = e.cmd.Process.Kill()
			<-e.done
		}
	})
}

// RepoRoot is the directory of the main module's go.mod, found upwards from
// the working directory (a test's package directory).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(b), "module github.com/runnerbench/runner\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod of github.com/runnerbench/runner above the working directory")
		}
		dir = parent
	}
}

// start runs bin with args (PORT replaced by a free loopback port) and waits
// until GET /health answers 200. A port taken between choosing and binding
// makes the process exit; that is retried on another port.
func start(ctx context.Context, name, bin string, env, args []string) (*Engine, error) {
	return startAt(ctx, name, "/health", bin, env, args)
}

// startAt is start for an engine whose health is answered at path health.
func startAt(ctx context.Context, name, health, bin string, env, args []string) (*Engine, error) {
	var last error
	for range 3 {
		e, err := startOnce(ctx, name, health, bin, env, args)
		if err == nil {
			return e, nil
		}
		last = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, last
}

func startOnce(ctx context.Context, name, health, bin string, env, args []string) (*Engine, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	ps := strconv.Itoa(port)
	argv := make([]string, len(args))
	for i, a := range args {
		argv[i] = strings.ReplaceAll(a, "PORT", ps)
	}
	e := &Engine{
		Name: name, Origin: "http://127.0.0.1:" + ps, done: make(chan struct{}), log: &tail{max: 64 << 10},
	}
	e.BaseURL = e.Origin + "/v1"
	e.cmd = exec.Command(bin, argv...)
	e.cmd.Env = append(os.Environ(), env...)
	e.cmd.Stdout, e.cmd.Stderr = e.log, e.log
	e.cmd.SysProcAttr = procAttr()
	if err := e.cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	go func() { _ = e.cmd.Wait(); close(e.done) }()
	if err := e.waitHealthy(ctx, health, 60*time.Second); err != nil {
		e.Stop()
		return nil, fmt.Errorf("%s on port %d: %w\n%s", name, port, err, e.Log())
	}
	return e, nil
}

// waitHealthy polls health (/health) until it answers 200, the process
// exits or the timeout passes.
func (e *Engine) waitHealthy(ctx context.Context, health string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.Origin+health, nil)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-e.done:
			return fmt.Errorf("exited before it was ready (%v)", e.cmd.ProcessState)
		case <-ctx.Done():
			return errors.New("not healthy after " + timeout.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
