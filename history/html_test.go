package history_test

import (
	"bytes"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/runnerbench/runner/history"
	"github.com/runnerbench/runner/store/synthrun"
)

// stepPage is the HTML history of 30 daily runs, TTFT 30% slower from run
// 20 on: the latencies' charts, and one of a metric not judged.
func stepPage(t *testing.T, plan string) string {
	t.Helper()
	ttft := steady(30)
	for i := 20; i < 30; i++ {
		ttft[i] = 130
	}
	s, samples := memHistory(t, 3, ttft, synthrun.Spec{Requests: 200}, latencies...)
	h, err := history.Build(s, samples, history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := h.HTML(&b, plan, []string{"n_requests"}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestHTMLChart: each chart has round value ticks, equally spaced, dates
// on its time axis, a bar for every judged window's interval, the change
// marked; the page fetches nothing (its CSP) and escapes the plan's name.
func TestHTMLChart(t *testing.T) {
	page := stepPage(t, `<img src=x onerror=alert(1)>`)
	if strings.Contains(page, "<img") || !strings.Contains(page, "&lt;img") {
		t.Error("the plan's name reached the page unescaped")
	}
	if !strings.Contains(page, `content="default-src 'none'; style-src 'unsafe-inline'"`) {
		t.Error("no Content-Security-Policy")
	}
	figs := strings.Split(page, "<figure>")[1:]
	if len(figs) < 2 {
		t.Fatalf("%d charts", len(figs))
	}
	yTick := regexp.MustCompile(`<text class="axis" x="[\d.]+" dx="-6" y="[\d.]+" dy="4" text-anchor="end">([^<]+)</text>`)
	xTick := regexp.MustCompile(`text-anchor="middle">([^<]+)</text>`)
	for _, f := range figs {
		title := f[len("<figcaption>"):strings.Index(f, "</figcaption>")]
		var vals []float64
		for _, m := range yTick.FindAllStringSubmatch(f, -1) {
			v, err := strconv.ParseFloat(strings.TrimSuffix(m[1], "%"), 64)
			if err != nil {
				t.Fatalf("%s: tick %q", title, m[1])
			}
			vals = append(vals, v)
		}
		if len(vals) < 3 || len(vals) > 9 {
			t.Errorf("%s: %d value ticks %v", title, len(vals), vals)
			continue
		}
		step := vals[1] - vals[0]
		mant := step / pow10(step)
		if !(near(mant, 1) || near(mant, 2) || near(mant, 5)) {
			t.Errorf("%s: ticks %v step by %v, not 1, 2 or 5 times a power of ten", title, vals, step)
		}
		for i := 1; i < len(vals); i++ {
			if !near(vals[i]-vals[i-1], step) || math.Abs(vals[i]/step-math.Round(vals[i]/step)) > 1e-6 {
				t.Errorf("%s: ticks %v are not multiples of one step", title, vals)
				break
			}
		}
		dates := xTick.FindAllStringSubmatch(f, -1)
		if len(dates) < 3 || len(dates) > 6 {
			t.Errorf("%s: %d date ticks", title, len(dates))
		}
		for _, d := range dates {
			if !regexp.MustCompile(`^2030-0[34]-\d\d$`).MatchString(d[1]) {
				t.Errorf("%s: date tick %q", title, d[1])
			}
		}
		if strings.Contains(title, "ttft_p50_ms") {
			if n := strings.Count(f, `class="bar"`); n < 20 {
				t.Errorf("%s: %d interval bars for 25 judged windows", title, n)
			}
			if !strings.Contains(f, `class="dot worse"`) {
				t.Errorf("%s: the change is not marked", title)
			}
		}
	}
}

func pow10(x float64) float64 { return math.Pow(10, math.Floor(math.Log10(x)+1e-9)) }

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

// TestBrowserCheck renders a history page in headless Chromium
// (scripts/html-check.sh, light and dark): no console error, no sideways
// scroll at 1280 px, a screenshot. Needs Chromium, so it runs with
// RUNNER_BROWSER_CHECK=1 (as CI does).
func TestBrowserCheck(t *testing.T) {
	if os.Getenv("RUNNER_BROWSER_CHECK") != "1" {
		t.Skip("set RUNNER_BROWSER_CHECK=1 to render the history page in headless Chromium")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "history.html")
	if err := os.WriteFile(path, []byte(stepPage(t, "nightly")), 0o644); err != nil {
		t.Fatal(err)
	}
	script, _ := filepath.Abs(filepath.Join("..", "scripts", "html-check.sh"))
	for _, mode := range []string{"", "--dark"} {
		png := filepath.Join(dir, "shot"+mode+".png")
		args := []string{path, png}
		if mode != "" {
			args = append(args, mode)
		}
		if out, err := exec.Command(script, args...).CombinedOutput(); err != nil {
			t.Fatalf("html-check %s: %v\n%s", mode, err, out)
		}
		if b, err := os.ReadFile(png); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) || len(b) < 10_000 {
			t.Errorf("%s: no plausible screenshot (%d bytes, %v)", mode, len(b), err)
		}
		if dst := os.Getenv("RUNNER_HISTORY_SHOTS"); dst != "" {
			b, _ := os.ReadFile(png)
			_ = os.WriteFile(filepath.Join(dst, "history"+mode+".png"), b, 0o644)
		}
	}
}
