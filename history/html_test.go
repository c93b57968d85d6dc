package history_test

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runnerbench/runner/history"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/store"
	"github.com/runnerbench/runner/store/synthrun"
)

// stepHistory is the history of 30 daily runs, TTFT 30% slower from run 20
// on.
func stepHistory(t *testing.T) *history.History {
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
	return h
}

// stepPage is stepHistory's page: the latencies' charts, and one of a
// metric not judged.
func stepPage(t *testing.T, plan string) string {
	t.Helper()
	h := stepHistory(t)
	var b bytes.Buffer
	if err := h.HTML(&b, plan, []string{"n_requests"}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestHTMLChart: each chart has round value ticks from zero, equally
// spaced, dates on its time axis, a bar for every judged window's interval,
// the change marked; the page fetches nothing (its CSP) and escapes the
// plan's name.
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
	yTick := regexp.MustCompile(`<text class="tick" x="58.00" y="[\d.]+" text-anchor="end" dominant-baseline="middle">([^<]+)</text>`)
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
		if len(vals) < 3 || len(vals) > 9 || vals[0] != 0 {
			t.Errorf("%s: %d value ticks %v, want 3 to 9 from 0", title, len(vals), vals)
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
		var dates []string
		for _, d := range xTick.FindAllStringSubmatch(f, -1) {
			if d[1] != "run (UTC)" {
				dates = append(dates, d[1])
			}
		}
		if len(dates) < 3 || len(dates) > 6 {
			t.Errorf("%s: %d date ticks", title, len(dates))
		}
		for _, d := range dates {
			if !regexp.MustCompile(`^2030-0[34]-\d\d$`).MatchString(d) {
				t.Errorf("%s: date tick %q", title, d)
			}
		}
		if strings.Contains(title, "ttft_p50_ms") {
			if n := strings.Count(f, `class="interval"`); n < 20 {
				t.Errorf("%s: %d interval bars for 25 judged windows", title, n)
			}
			if !strings.Contains(f, `<circle class="worse"`) {
				t.Errorf("%s: the change is not marked", title)
			}
		}
	}
}

// circles are a chart's markers: their x (data) and y (pixels), and
// whether each is marked (worse or better).
type circle struct {
	x, cy  float64
	marked string
}

var circleRE = regexp.MustCompile(`<circle(?: class="(\w+)")? cx="[\d.]+" cy="([\d.]+)" r="[\d.]+" data-x="([\d.e+]+)"`)

func circles(t *testing.T, fig string) []circle {
	t.Helper()
	var out []circle
	for _, m := range circleRE.FindAllStringSubmatch(fig, -1) {
		cy, _ := strconv.ParseFloat(m[2], 64)
		x, _ := strconv.ParseFloat(m[3], 64)
		out = append(out, circle{x: x, cy: cy, marked: m[1]})
	}
	return out
}

// figure is the page's chart whose caption ends with the metric.
func figure(t *testing.T, page, metric string) string {
	t.Helper()
	for _, f := range strings.Split(page, "<figure>")[1:] {
		if strings.HasSuffix(f[:strings.Index(f, "</figcaption>")], " "+metric) {
			return f
		}
	}
	t.Fatalf("no chart of %s in\n%s", metric, page)
	return ""
}

// TestMarkWhereTheChangeBegan: TTFT 30% slower from run 20 on is found by
// a window ending a run or two later; the page marks run 20, where the
// change began, and only it, and the terminal's mark stands under run 20.
func TestMarkWhereTheChangeBegan(t *testing.T) {
	h := stepHistory(t)
	var b bytes.Buffer
	if err := h.HTML(&b, "nightly", nil); err != nil {
		t.Fatal(err)
	}
	step := float64(h.Runs[20].StartedAt.Unix())
	for _, metric := range []string{"ttft_p50_ms", "ttft_p95_ms"} {
		var marked []float64
		for _, c := range circles(t, figure(t, b.String(), metric)) {
			if c.marked != "" {
				marked = append(marked, c.x)
			}
		}
		if len(marked) != 1 || marked[0] != step {
			t.Errorf("%s: marked runs at %v, want only run 20 (%v), where the change began", metric, marked, step)
		}
	}
	var text bytes.Buffer
	if err := h.Text(&text, "nightly", nil); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(text.String(), "\n")
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "ttft_p50_ms ") {
			// The sparkline and the marks under it start at column 29, a
			// run a column.
			mark := lines[i+1]
			if strings.IndexRune(mark, '!') != 29+20 || strings.Count(mark, "!") != 1 {
				t.Errorf("the terminal's mark is not under run 20:\n%s\n%s", l, mark)
			}
			if !strings.Contains(l, "from "+h.RunName(20)) {
				t.Errorf("the change is not said to begin at run 20: %s", l)
			}
		}
	}
}

// handmade is a history of two metrics built by hand: output_tps_total
// moving by 0.1% between 86.63 and 86.72 tok/s, and ttft_p95_ms around
// 100 ms whose windows' intervals reach from -200 to 340 ms.
func handmade() *history.History {
	h := &history.History{Window: 3, Before: 10, Confidence: 0.95, Each: 0.95}
	tps := history.Series{Stage: "s", Label: "c=4", Metric: "output_tps_total"}
	ttft := history.Series{Stage: "s", Label: "c=4", Metric: "ttft_p95_ms", Judged: true}
	for i := range 8 {
		h.Runs = append(h.Runs, &store.Run{ID: strconv.Itoa(i), StartedAt: time.Date(2030, 3, 1+i, 2, 0, 0, 0, time.UTC)})
		tps.Points = append(tps.Points, history.Point{Run: i, Value: []float64{86.63, 86.72}[i%2], Judgeable: true})
		p := history.Point{Run: i, Value: 100 + float64(i%3), Judgeable: true}
		if i >= 5 {
			p.Verdict, p.Low, p.High, p.Since, p.Base = "inconclusive", result.Ptr(-200.0), result.Ptr(340.0), i-2, 3
		}
		ttft.Points = append(ttft.Points, p)
	}
	h.Series = []history.Series{tps, ttft}
	h.Judged, h.Windows = 1, 3 // the windows ending at runs 5, 6 and 7
	return h
}

// TestValueAxisDoesNotMagnifyNoise: a 0.1% wobble (86.63 to 86.72 tok/s)
// moves its points by less than 1% of the plot's height.
func TestValueAxisDoesNotMagnifyNoise(t *testing.T) {
	var b bytes.Buffer
	if err := handmade().HTML(&b, "p", []string{"output_tps_total"}); err != nil {
		t.Fatal(err)
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	cs := circles(t, figure(t, b.String(), "output_tps_total"))
	for _, c := range cs {
		lo, hi = math.Min(lo, c.cy), math.Max(hi, c.cy)
	}
	const plotH = 140.0 // the wide chart's plot, in SVG units
	if len(cs) != 8 || hi-lo > 0.01*plotH {
		t.Errorf("%d points spread over %.1f of %v units for a 0.1%% change", len(cs), hi-lo, plotH)
	}
}

// TestLatencyIntervalNotBelowZero: an interval reaching -200 ms is drawn
// from 0 (no negative latency on the axis), and its hover says the
// interval as computed and that it was drawn from 0.
func TestLatencyIntervalNotBelowZero(t *testing.T) {
	var b bytes.Buffer
	if err := handmade().HTML(&b, "p", nil); err != nil {
		t.Fatal(err)
	}
	f := figure(t, b.String(), "ttft_p95_ms")
	if regexp.MustCompile(`>-\d`).MatchString(f) {
		t.Errorf("a negative value on the TTFT axis:\n%s", f)
	}
	bars := regexp.MustCompile(`<line class="(?:interval|bar)"[^>]*y1="([\d.]+)"`).FindAllStringSubmatch(f, -1)
	zero := regexp.MustCompile(`y="([\d.]+)" text-anchor="end" dominant-baseline="middle">0</text>`).FindStringSubmatch(f)
	if len(bars) != 3 || zero == nil || bars[0][1] != zero[1] {
		t.Errorf("%d interval bars, want 3 from the axis' 0 (%v):\n%s", len(bars), zero, f)
	}
	if !strings.Contains(f, "interval -200 to 340 (drawn from 0") {
		t.Errorf("the hover does not give the interval as computed:\n%s", f)
	}
}

// TestSummarySaysWhatIsTrue: two runs are too few to judge anything, and
// the summary says so and how many a judgement needs, instead of "0
// windows".
func TestSummarySaysWhatIsTrue(t *testing.T) {
	s, samples := memHistory(t, 1, []float64{100, 100}, synthrun.Spec{Requests: 50}, latencies...)
	h, err := history.Build(s, samples, history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := h.Summary("nightly")
	if strings.Contains(got, "0 windows") || strings.Contains(got, "series judged") ||
		!strings.Contains(got, "nothing judged yet") || !strings.Contains(got, "needs 6 runs") || !strings.Contains(got, "has is 2") {
		t.Errorf("summary of 2 runs: %s", got)
	}
	s, samples = memHistory(t, 1, steady(8), synthrun.Spec{Requests: 50}, latencies...)
	if h, err = history.Build(s, samples, history.Options{}); err != nil {
		t.Fatal(err)
	}
	if got := h.Summary("nightly"); !strings.Contains(got, fmt.Sprintf("%d series judged, %d windows", h.Judged, h.Windows)) || h.Windows != 3*h.Judged {
		t.Errorf("summary of 8 runs: %s (%d windows)", got, h.Windows)
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
