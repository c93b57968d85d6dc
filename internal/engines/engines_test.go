package engines

import (
	"strings"
	"testing"
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
