package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/runnerbench/runner/result"
)

// versionShapes classify what runner version prints as its version: a
// release's, a commit's pseudo-version (clean or dirty), or dev.
var versionShapes = []struct{ name, re string }{
	{"release", `v[0-9]+\.[0-9]+\.[0-9]+`},
	{"pseudo-version", `v0\.0\.0-[0-9]{14}-[0-9a-f]{12}`},
	{"dirty pseudo-version", `v0\.0\.0-[0-9]{14}-[0-9a-f]{12}\+dirty`},
	{"dev", `dev`},
}

var versionLine = regexp.MustCompile(`^runner (\S+) \((go[0-9][^,]*), ([a-z0-9]+/[a-z0-9]+), report schema ([0-9]+)\)$`)

// shapeOf names the shape of a printed version ("" for none).
func shapeOf(v string) string {
	for _, s := range versionShapes {
		if regexp.MustCompile(`^` + s.re + `$`).MatchString(v) {
			return s.name
		}
	}
	return ""
}

// readmeVersionLines are the lines of the README's Install section that
// show what runner version prints.
func readmeVersionLines(t *testing.T) []string {
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	install, _, _ := strings.Cut(string(b[strings.Index(string(b), "## Install"):]), "## Getting started")
	var out []string
	for _, l := range strings.Split(install, "\n") {
		if strings.HasPrefix(l, "runner ") && strings.Contains(l, "report schema") {
			out = append(out, l)
		}
	}
	return out
}

// TestReadmeVersionText: the README shows every shape runner version can
// print, each line as cmdVersion formats it, and a build from this checkout
// (go build ./cmd/runner, with the environment's GOFLAGS) prints one of the
// shapes the README shows.
func TestReadmeVersionText(t *testing.T) {
	t.Parallel() // the build takes seconds: beside the package's other tests
	lines := readmeVersionLines(t)
	shown := map[string]bool{}
	for _, l := range lines {
		m := versionLine.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("README version line %q is not what runner version prints", l)
			continue
		}
		if m[4] != strconv.Itoa(result.SchemaVersion) {
			t.Errorf("README version line %q: report schema is %d", l, result.SchemaVersion)
		}
		shown[shapeOf(m[1])] = true
	}
	for _, s := range versionShapes {
		if !shown[s.name] {
			t.Errorf("the README's Install section shows no %s version", s.name)
		}
	}
	// What each kind of build gives.
	pseudo := "v0.0.0-20261201050706-393d5774c956+dirty"
	for _, c := range []struct {
		set  string
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{"v1.2.3", &debug.BuildInfo{Main: debug.Module{Version: pseudo}}, true, "v1.2.3"},
		{"", &debug.BuildInfo{Main: debug.Module{Version: pseudo}}, true, pseudo},
		{"", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, true, "dev"},
		{"", nil, false, "dev"},
	} {
		if got := versionOf(c.set, c.info, c.ok); got != c.want || shapeOf(got) == "" {
			t.Errorf("versionOf(%q, %v) = %q, want %q", c.set, c.info, got, c.want)
		}
	}

	bin := filepath.Join(t.TempDir(), "runner")
	build := exec.Command("go", "build", "-o", bin, "./cmd/runner")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/runner: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("runner version: %v", err)
	}
	line := strings.TrimSpace(string(out))
	m := versionLine.FindStringSubmatch(line)
	if m == nil || m[2] != runtime.Version() || m[3] != runtime.GOOS+"/"+runtime.GOARCH || !shown[shapeOf(m[1])] {
		t.Fatalf("a checkout build printed %q: not a shape the README shows (%q)", line, lines)
	}
	t.Logf("a checkout build prints %q (%s)", line, shapeOf(m[1]))
}
