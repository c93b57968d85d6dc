package html

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBrowserCheck renders the fixtures (a run with a baseline, and a sliced
// run with its charts over time) in headless Chromium through
// scripts/html-check.sh, in light and dark mode (each fitting 1280 px without
// sideways scroll), and proves the check can fail: a page with a deliberate
// JS error, one that scrolls sideways and one that tries to load a remote
// image must all be rejected. It needs Chromium (the script installs it as root),
// so it runs only with RUNNER_BROWSER_CHECK=1 (CI sets it).
func TestBrowserCheck(t *testing.T) {
	if os.Getenv("RUNNER_BROWSER_CHECK") != "1" {
		t.Skip("set RUNNER_BROWSER_CHECK=1 to render the report in headless Chromium")
	}
	script, err := filepath.Abs(filepath.Join("..", "..", "scripts", "html-check.sh"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	run := func(page, png string, args ...string) (string, error) {
		cmd := exec.Command(script, append([]string{page, png}, args...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}

	report := write("report.html", render(t, loadReport(t, "report.json"), loadReport(t, "baseline.json")))
	sliced := write("sliced.html", render(t, loadReport(t, slicedFixture), nil))
	for _, c := range []struct{ page, mode string }{{report, "light"}, {report, "dark"}, {sliced, "light"}, {sliced, "dark"}} {
		mode := c.mode
		png := filepath.Join(dir, strings.TrimSuffix(filepath.Base(c.page), ".html")+"-"+mode+".png")
		var args []string
		if mode == "dark" {
			args = []string{"--dark"}
		}
		if out, err := run(c.page, png, args...); err != nil {
			t.Fatalf("%s %s: html-check failed: %v\n%s", c.page, mode, err, out)
		}
		b, err := os.ReadFile(png)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) || len(b) < 10_000 {
			t.Fatalf("%s: %s is not a plausible screenshot (%d bytes)", mode, png, len(b))
		}
	}

	// The check must really catch a console error...
	bad := write("bad.html", []byte(`<!DOCTYPE html><html><body><p>x</p><script>notDefined();</script></body></html>`))
	out, err := run(bad, filepath.Join(dir, "bad.png"))
	if err == nil || !strings.Contains(out, "Uncaught ReferenceError") {
		t.Fatalf("a page with a JS error passed the check (err %v):\n%s", err, out)
	}
	// ...and a page that scrolls sideways at 1280 px, as the levels table
	// once did (inside its own scrolling box, so the page itself did not)...
	wide := write("wide.html", []byte(`<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'"><style>.scroll{overflow-x:auto}</style></head><body><div class="scroll"><table class="levels"><tr><td style="min-width:2000px">x</td></tr></table></div></body></html>`))
	out, err = run(wide, filepath.Join(dir, "wide.png"))
	if err == nil || !strings.Contains(out, "scrolls sideways at 1280 px: div holding table.levels: 20") {
		t.Fatalf("a page that scrolls sideways passed the check (err %v):\n%s", err, out)
	}
	// ...and a fetch attempt, blocked by the same CSP the report carries.
	fetch := write("fetch.html", []byte(`<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'"></head><body><img src="https://example.invalid/x.png"></body></html>`))
	out, err = run(fetch, filepath.Join(dir, "fetch.png"))
	if err == nil || !strings.Contains(out, "Content Security Policy") {
		t.Fatalf("a page loading a remote image passed the check (err %v):\n%s", err, out)
	}
}
