package engines

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOffline: a build that could not download its modules is told apart
// from one that failed to compile, and the reason is the line that says so.
func TestOffline(t *testing.T) {
	for _, c := range []struct {
		out, line string
		ok        bool
	}{
		{"go: downloading github.com/x/y v1\ngo: github.com/x/y@v1: module lookup disabled by GOPROXY=off\n", "go: github.com/x/y@v1: module lookup disabled by GOPROXY=off", true},
		{"go: downloading a v1\nverifying a@v1: Get \"https://sum.golang.org/lookup/a@v1\": dial tcp: lookup sum.golang.org: no such host", "verifying a@v1: Get \"https://sum.golang.org/lookup/a@v1\": dial tcp: lookup sum.golang.org: no such host", true},
		{"# github.com/x/y\n./a.go:3:1: syntax error: non-declaration statement outside function body", "", false},
	} {
		line, ok := offline(c.out)
		if ok != c.ok || line != c.line {
			t.Errorf("offline(%q) = %q, %v; want %q, %v", c.out, line, ok, c.line, c.ok)
		}
	}
}

// TestTail keeps the end of the output within its bound.
func TestTail(t *testing.T) {
	tl := &tail{max: 10}
	for _, s := range []string{"abc", "defghij", "klmno"} {
		_, _ = tl.Write([]byte(s))
	}
	if got := tl.String(); got != "fghijklmno" {
		t.Errorf("tail = %q", got)
	}
	_, _ = tl.Write([]byte(strings.Repeat("z", 25)))
	if got := tl.String(); got != strings.Repeat("z", 10) {
		t.Errorf("tail after a long write = %q", got)
	}
}

// TestBuildGivesUpInTime: a tool's build that cannot finish before its
// context ends (TestContext: half of what the test binary has left), or a
// wait on another process's build of it, is an *UnavailableError saying how
// to build it beforehand: the test skips with that line instead of the test
// binary panicking on go test's -timeout (a first Prometheus build took an
// hour on two busy cores).
func TestBuildGivesUpInTime(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := os.UserCacheDir()
	dir = filepath.Join(dir, "runner-test-engines")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	unlock, err := lockFile(ctx, filepath.Join(dir, "prometheus.lock")) // another build under way
	if err != nil {
		t.Fatal(err)
	}
	_, err = BuildPrometheus(ctx, root)
	unlock()
	var ue *UnavailableError
	if !errors.As(err, &ue) || !strings.Contains(ue.Reason, "another process's build of it did not finish") || !strings.Contains(ue.Reason, "build it beforehand") {
		t.Errorf("waiting on another build: %v", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	// The lock is free now; the build itself is out of time. (An expired
	// context fails to take even the lock on a loaded machine: both say
	// how to build it beforehand.)
	if _, err = BuildPrometheus(ctx, root); !errors.As(err, &ue) || !strings.Contains(ue.Reason, "build it beforehand") {
		t.Errorf("a build out of time: %v", err)
	}
	tctx, tcancel := TestContext(t)
	defer tcancel()
	if dl, ok := t.Deadline(); ok {
		if got, _ := tctx.Deadline(); !got.Before(dl) {
			t.Errorf("TestContext ends at %v, not before the binary's deadline %v", got, dl)
		}
	}
}
