package board

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runnerbench/runner/result"
)

func renderHTML(t *testing.T, b *Board) string {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteHTML(&buf, b); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// TestHTMLEscapesHostileLabels: a label holding markup is text on the page,
// in the table, the charts' hover text, the frontier list and the runs set
// apart; the page's only script is its own, allowed by its hash, and it
// fetches nothing.
func TestHTMLEscapesHostileLabels(t *testing.T) {
	b := goldenBoard(t, "")
	page := renderHTML(t, b)
	for _, raw := range []string{"<img", `href="javascript`} {
		if strings.Contains(page, raw) {
			t.Errorf("the page holds %q unescaped", raw)
		}
	}
	if n := strings.Count(page, "&lt;img src=x onerror=alert(1)&gt;"); n < 4 {
		t.Errorf("the hostile label is shown escaped %d times, want it in the row, the hover text, the frontier lists and the apart table", n)
	}
	if n := strings.Count(page, "<script"); n != 1 {
		t.Errorf("%d script elements, want the page's own alone", n)
	}
	sum := sha256.Sum256([]byte(pageScript))
	hash := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	csp := html.UnescapeString(regexp.MustCompile(`http-equiv="Content-Security-Policy" content="([^"]*)"`).FindStringSubmatch(page)[1])
	if !strings.Contains(page, "<script>"+pageScript+"</script>") || csp != "default-src 'none'; style-src 'unsafe-inline'; script-src "+hash {
		t.Error("the script is not the one the policy's hash allows, or the policy allows more")
	}
	// The SVG namespace is a name, not a fetch.
	bare := strings.ReplaceAll(page, `xmlns="http://www.w3.org/2000/svg"`, "")
	for _, ext := range []string{"http://", "https://", "src=\"", "url("} {
		if strings.Contains(bare, ext) {
			t.Errorf("the page refers to something outside itself: %q", ext)
		}
	}
	// A control character or bidi override in a label read from elsewhere
	// (a database) never reaches the page as itself.
	evil := result.Labels{"engine": "a\x1b[31mb\u202ec\nd"}
	run := Run{Source: "db:1", Labels: evil, Facts: result.Facts{PlanName: "p", PlanHash: "h", StartedAt: time.Unix(0, 0)}, StopReason: result.StopCompleted,
		Stages: []Stage{{Name: "s", Load: "concurrency", API: "chat", Mode: "pinned", Levels: []Level{{Label: "c=1", Metrics: map[string]float64{"concurrency": 1, "output_tps_total": 10, "output_tps_per_stream": 10, "ttft_p95_ms": 5}}}}}}
	page = renderHTML(t, mustBuild(t, []Run{run}, Options{}))
	if strings.ContainsAny(page, "\x1b\u202e") || !strings.Contains(page, "engine=a\uFFFD[31mb\uFFFDc\uFFFDd") {
		t.Error("a control character of a label reached the page")
	}
}

// TestBrowserCheck renders the fixtures' board in headless Chromium
// (scripts/html-check.sh, light and dark: no console error, a screenshot)
// and measures the page at 1280 px: it must not scroll sideways. Needs
// Chromium, so it runs with RUNNER_BROWSER_CHECK=1 (as the run report's).
func TestBrowserCheck(t *testing.T) {
	if os.Getenv("RUNNER_BROWSER_CHECK") != "1" {
		t.Skip("set RUNNER_BROWSER_CHECK=1 to render the board in headless Chromium")
	}
	dir := t.TempDir()
	page := renderHTML(t, goldenBoard(t, ""))
	path := filepath.Join(dir, "board.html")
	if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	script, _ := filepath.Abs(filepath.Join("..", "scripts", "html-check.sh"))
	for _, mode := range []string{"", "--dark"} {
		args := []string{path, filepath.Join(dir, "shot"+mode+".png")}
		if mode != "" {
			args = append(args, mode)
		}
		if out, err := exec.Command(script, args...).CombinedOutput(); err != nil {
			t.Fatalf("html-check %s: %v\n%s", mode, err, out)
		}
	}
	dom := probe(t, page, 1280, dir)
	if w := attrInt(t, dom, "data-scroll-width"); w > 1280 {
		t.Errorf("at 1280 px the page is %d px wide: it scrolls sideways", w)
	}
	// Hovering a point shows its run and level, and lights its run's points
	// in every view (and its row).
	if tip := attr(dom, "data-probe-tip"); !strings.Contains(tip, " · c=1 · per-user output (tok/s) ") {
		t.Errorf("hovering a point showed %q", tip)
	}
	if n := attrInt(t, dom, "data-probe-lit"); n < 3 {
		t.Errorf("hovering a point lit %d elements of its run, want its series in each view and its row", n)
	}
	if n := attrInt(t, dom, "data-probe-titles"); n != 0 {
		t.Errorf("%d SVG titles left beside the script's tip", n)
	}
	// The measure can fail: a page wider than the window is caught.
	wide := strings.Replace(page, "<body>", `<body><div style="width: 2000px">wide</div>`, 1)
	if w := attrInt(t, probe(t, wide, 1280, dir), "data-scroll-width"); w <= 1280 {
		t.Errorf("a page with a 2000 px element measured %d px wide", w)
	}
	if dst := os.Getenv("RUNNER_BOARD_SHOTS"); dst != "" {
		for _, f := range []string{"shot.png", "shot--dark.png", "board.html"} {
			if b, err := os.ReadFile(filepath.Join(dir, f)); err == nil {
				_ = os.WriteFile(filepath.Join(dst, f), b, 0o644)
			}
		}
	}
}

// probe loads a copy of the page with a probe script (allowed by its own
// hash beside the page's) that measures the document's scroll width,
// hovers the first point of the sweep group's chart and writes what it saw
// into the body's attributes, and returns Chromium's --dump-dom of it.
func probe(t *testing.T, page string, width int, dir string) string {
	t.Helper()
	probe := `(function () {
  var b = document.body, c = document.querySelectorAll("section")[1].querySelector("svg.chart circle");
  c.dispatchEvent(new MouseEvent("mouseover", {bubbles: true, clientX: 300, clientY: 300}));
  var tip = document.getElementById("tip");
  b.setAttribute("data-scroll-width", String(document.documentElement.scrollWidth));
  b.setAttribute("data-probe-tip", tip.hidden ? "" : tip.textContent);
  b.setAttribute("data-probe-lit", String(document.querySelectorAll(".hl").length));
  b.setAttribute("data-probe-titles", String(document.querySelectorAll("svg title").length));
})();`
	sum := sha256.Sum256([]byte(probe))
	page = strings.Replace(page, "script-src ", "script-src 'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"' ", 1)
	page = strings.Replace(page, "</body>", "<script>"+probe+"</script></body>", 1)
	path := filepath.Join(dir, "probe.html")
	if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	browser, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("timeout", "120", browser, "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir="+filepath.Join(dir, "profile"),
		"--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=http://127.0.0.1:9",
		"--window-size="+strconv.Itoa(width)+",900", "--dump-dom", "file://"+path).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	if !strings.Contains(string(out), "data-scroll-width=") {
		t.Fatalf("the probe did not run:\n%.500s", out)
	}
	return string(out)
}

// attr is the body's attribute of that name in a dumped DOM ("" if none).
func attr(dom, name string) string {
	m := regexp.MustCompile(` ` + name + `="([^"]*)"`).FindStringSubmatch(dom)
	if m == nil {
		return ""
	}
	return html.UnescapeString(m[1])
}

func attrInt(t *testing.T, dom, name string) int {
	t.Helper()
	n, err := strconv.Atoi(attr(dom, name))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return n
}
