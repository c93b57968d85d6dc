package html

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	xhtml "golang.org/x/net/html"

	"github.com/runnerbench/runner/result"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func loadReport(t testing.TB, name string) *result.Report {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var r result.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return &r
}

func render(t testing.TB, r, base *result.Report) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, r, base); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func parse(t testing.TB, page []byte) *xhtml.Node {
	t.Helper()
	doc, err := xhtml.Parse(bytes.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// --- small DOM helpers over golang.org/x/net/html ---

func attr(n *xhtml.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

func walk(n *xhtml.Node, fn func(*xhtml.Node)) {
	fn(n)
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, fn)
	}
}

// findAll returns the element nodes named tag for which match is true.
func findAll(root *xhtml.Node, tag string, match func(*xhtml.Node) bool) []*xhtml.Node {
	var out []*xhtml.Node
	walk(root, func(n *xhtml.Node) {
		if n.Type == xhtml.ElementNode && n.Data == tag && (match == nil || match(n)) {
			out = append(out, n)
		}
	})
	return out
}

func hasAttr(key, val string) func(*xhtml.Node) bool {
	return func(n *xhtml.Node) bool { v, ok := attr(n, key); return ok && v == val }
}

func text(n *xhtml.Node) string {
	var b strings.Builder
	walk(n, func(c *xhtml.Node) {
		if c.Type == xhtml.TextNode {
			b.WriteString(c.Data)
		}
	})
	return b.String()
}

// chart returns the <svg> of the chart with data-chart id.
func chartNode(t *testing.T, doc *xhtml.Node, id string) *xhtml.Node {
	t.Helper()
	svgs := findAll(doc, "svg", hasAttr("data-chart", id))
	if len(svgs) != 1 {
		t.Fatalf("chart %q: found %d <svg>, want 1", id, len(svgs))
	}
	return svgs[0]
}

// seriesGroup returns the <g> of the named series in a chart.
func seriesGroup(t *testing.T, svg *xhtml.Node, name string) *xhtml.Node {
	t.Helper()
	gs := findAll(svg, "g", hasAttr("data-series", name))
	if len(gs) != 1 {
		t.Fatalf("series %q: found %d groups, want 1", name, len(gs))
	}
	return gs[0]
}

func polylinePoints(g *xhtml.Node) []int {
	var n []int
	for _, pl := range findAll(g, "polyline", nil) {
		pts, _ := attr(pl, "points")
		n = append(n, len(strings.Fields(pts)))
	}
	return n
}

// markers returns the data-y values and tooltips of a series' markers.
func markers(g *xhtml.Node) (ys []string, tips []string) {
	for _, c := range findAll(g, "circle", nil) {
		y, _ := attr(c, "data-y")
		ys = append(ys, y)
		tips = append(tips, text(c))
	}
	return ys, tips
}

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// TestChartsCarryTheRunsValues checks every load chart of every stage against
// the report: one marker per level with a non-null value, carrying that exact
// value in data-y and in its tooltip; a polyline per run of non-null levels.
func TestChartsCarryTheRunsValues(t *testing.T) {
	r := loadReport(t, "report.json")
	doc := parse(t, render(t, r, nil))

	type m struct {
		chart, series string
		get           func(*result.Point) *float64
	}
	metrics := []m{
		{"throughput", "output tok/s", func(p *result.Point) *float64 { v := p.OutputTPSTotal; return &v }},
		{"ttft", "TTFT p50", func(p *result.Point) *float64 { return p.TTFTP50Ms }},
		{"ttft", "TTFT p95", func(p *result.Point) *float64 { return p.TTFTP95Ms }},
		{"ttft", "TTFT p99", func(p *result.Point) *float64 { return p.TTFTP99Ms }},
		{"tpot", "TPOT p50", func(p *result.Point) *float64 { return p.TPOTP50Ms }},
		{"tpot", "TPOT p99", func(p *result.Point) *float64 { return p.TPOTP99Ms }},
	}
	sections := findAll(doc, "section", func(n *xhtml.Node) bool { _, ok := attr(n, "data-stage"); return ok })
	if len(sections) != len(r.Stages) {
		t.Fatalf("found %d stage sections, want %d", len(sections), len(r.Stages))
	}
	for si, st := range r.Stages {
		id, _ := attr(sections[si], "id")
		if name, _ := attr(sections[si], "data-stage"); name != st.Name {
			t.Errorf("section %d is stage %q, want %q", si, name, st.Name)
		}
		for _, mm := range metrics {
			t.Run(st.Name+"/"+mm.series, func(t *testing.T) {
				g := seriesGroup(t, chartNode(t, doc, id+"-"+mm.chart), mm.series)
				var wantY, wantTips []string
				// Expected polyline lengths: runs of consecutive non-null values.
				var runs []int
				run := 0
				for i := range st.Points {
					p := &st.Points[i]
					v := mm.get(p)
					if v == nil {
						if run > 1 {
							runs = append(runs, run)
						}
						run = 0
						continue
					}
					run++
					wantY = append(wantY, fmtNum(*v))
					wantTips = append(wantTips, p.Label()+" · "+mm.series+": "+fmtNum(*v))
				}
				if run > 1 {
					runs = append(runs, run)
				}
				ys, tips := markers(g)
				if strings.Join(ys, "|") != strings.Join(wantY, "|") {
					t.Errorf("data-y = %v, want %v", ys, wantY)
				}
				if len(tips) != len(wantTips) {
					t.Fatalf("%d tooltips, want %d", len(tips), len(wantTips))
				}
				for i := range tips {
					if !strings.HasPrefix(tips[i], wantTips[i]) {
						t.Errorf("tooltip %d = %q, want prefix %q", i, tips[i], wantTips[i])
					}
				}
				if got := polylinePoints(g); !equalInts(got, runs) {
					t.Errorf("polyline lengths = %v, want %v (null levels must be gaps)", got, runs)
				}
			})
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestFullSeriesPolylineHasOnePointPerLevel pins the simple case the issue
// names: throughput is never null, so its line has exactly one vertex per level.
func TestFullSeriesPolylineHasOnePointPerLevel(t *testing.T) {
	r := loadReport(t, "report.json")
	doc := parse(t, render(t, r, nil))
	st := r.Stages[0]
	g := seriesGroup(t, chartNode(t, doc, "stage-chat-sweep-throughput"), "output tok/s")
	if got := polylinePoints(g); len(got) != 1 || got[0] != len(st.Points) {
		t.Fatalf("polyline vertices = %v, want [%d]", got, len(st.Points))
	}
}

func TestBaselineSeriesOnlyWithBaseline(t *testing.T) {
	r := loadReport(t, "report.json")
	base := loadReport(t, "baseline.json")
	for _, withBase := range []bool{false, true} {
		var b *result.Report
		if withBase {
			b = base
		}
		doc := parse(t, render(t, r, b))
		dashed := findAll(doc, "g", hasAttr("data-baseline", "true"))
		if !withBase {
			if len(dashed) != 0 {
				t.Fatalf("without a baseline: %d baseline series drawn", len(dashed))
			}
			if strings.Contains(text(doc), "baseline TTFT") {
				t.Fatal("without a baseline: a legend names a baseline series")
			}
			continue
		}
		// Every load chart of every stage carries the baseline's values.
		for si, st := range r.Stages {
			bst := base.Stages[si]
			if bst.Name != st.Name {
				t.Fatalf("fixture: stage %d names differ", si)
			}
			id := findAll(doc, "section", hasAttr("data-stage", st.Name))
			if len(id) != 1 {
				t.Fatalf("stage %q: %d sections", st.Name, len(id))
			}
			anchor, _ := attr(id[0], "id")
			g := seriesGroup(t, chartNode(t, doc, anchor+"-throughput"), "baseline output tok/s")
			if v, _ := attr(g, "data-baseline"); v != "true" || !strings.Contains(attrOr(g, "class"), "dashed") {
				t.Errorf("stage %q: baseline series is not marked dashed: class=%q", st.Name, attrOr(g, "class"))
			}
			ys, tips := markers(g)
			if len(ys) != len(bst.Points) {
				t.Fatalf("stage %q: %d baseline markers, want %d", st.Name, len(ys), len(bst.Points))
			}
			for i := range bst.Points {
				if want := fmtNum(bst.Points[i].OutputTPSTotal); ys[i] != want {
					t.Errorf("stage %q baseline level %d: data-y %s, want %s", st.Name, i, ys[i], want)
				}
				if !strings.HasPrefix(tips[i], "baseline "+bst.Points[i].Label()) {
					t.Errorf("baseline tooltip %q is not labelled", tips[i])
				}
			}
			seriesGroup(t, chartNode(t, doc, anchor+"-ttft"), "baseline TTFT p99")
			seriesGroup(t, chartNode(t, doc, anchor+"-tradeoff"), "baseline levels")
		}
		if !strings.Contains(text(doc), "baseline TTFT p95") {
			t.Error("the legend does not name the baseline series")
		}
	}
}

func TestBaselineStageMatchedByName(t *testing.T) {
	r := loadReport(t, "report.json")
	base := loadReport(t, "baseline.json")
	// Swap the baseline's stage order: matching must go by name, not position.
	base.Stages[0], base.Stages[1] = base.Stages[1], base.Stages[0]
	base.Stages[0].Name = "renamed"
	doc := parse(t, render(t, r, base))
	if n := len(findAll(chartNode(t, doc, "stage-chat-sweep-throughput"), "g", hasAttr("data-baseline", "true"))); n != 1 {
		t.Fatalf("chat-sweep: %d baseline series, want 1", n)
	}
	sec := findAll(doc, "section", hasAttr("data-stage", r.Stages[1].Name))[0]
	id, _ := attr(sec, "id")
	if n := len(findAll(chartNode(t, doc, id+"-throughput"), "g", hasAttr("data-baseline", "true"))); n != 0 {
		t.Fatalf("unmatched stage: %d baseline series, want 0", n)
	}
	if !strings.Contains(text(sec), "The baseline has no stage named") {
		t.Error("unmatched stage: no note saying the baseline lacks it")
	}
}

func attrOr(n *xhtml.Node, k string) string { v, _ := attr(n, k); return v }

// TestNoRemoteFetch: nothing in the page may load from the network. The
// endpoints' base URLs appear as text, which is fine; no attribute that
// fetches (src, href, xlink:href, srcset, action, poster, data) may name a
// remote URL, and the CSS may not import or url() anything.
func TestNoRemoteFetch(t *testing.T) {
	r := loadReport(t, "report.json")
	page := render(t, r, loadReport(t, "baseline.json"))
	doc := parse(t, page)
	fetching := map[string]bool{"src": true, "href": true, "xlink:href": true, "srcset": true, "action": true,
		"poster": true, "data": true, "background": true, "formaction": true}
	walk(doc, func(n *xhtml.Node) {
		if n.Type != xhtml.ElementNode {
			return
		}
		switch n.Data {
		case "script", "iframe", "img", "link", "object", "embed", "image", "use", "video", "audio", "source":
			t.Errorf("page has a <%s> element", n.Data)
		}
		for _, a := range n.Attr {
			k := a.Key
			if a.Namespace != "" {
				k = a.Namespace + ":" + a.Key
			}
			if fetching[k] && !strings.HasPrefix(a.Val, "#") {
				t.Errorf("<%s %s=%q>: not a fragment link", n.Data, k, a.Val)
			}
			if strings.Contains(a.Val, "url(") {
				t.Errorf("<%s %s=%q>: url() in an attribute", n.Data, k, a.Val)
			}
		}
		if n.Data == "style" {
			css := text(n)
			if strings.Contains(css, "url(") || strings.Contains(css, "@import") || strings.Contains(css, "@font-face") {
				t.Error("the stylesheet loads an external resource")
			}
		}
	})
	// The browser enforces it too: a CSP that allows nothing but inline CSS.
	var csp string
	for _, m := range findAll(doc, "meta", hasAttr("http-equiv", "Content-Security-Policy")) {
		csp = attrOr(m, "content")
	}
	if csp != "default-src 'none'; style-src 'unsafe-inline'" {
		t.Errorf("Content-Security-Policy = %q", csp)
	}
	// The run's endpoint URL is shown (as text) but nowhere as a link.
	if !bytes.Contains(page, []byte("http://127.0.0.1:8000/v1")) {
		t.Error("the endpoint base URL is missing from the page")
	}
	if regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?\s*(https?:)?//`).Match(page) {
		t.Error("raw page has a src/href to a remote URL")
	}
}

// TestUserDataEscaped: plan, stage, check names and error messages are user
// data, in the HTML and inside the hand-built SVG alike.
func TestUserDataEscaped(t *testing.T) {
	r := loadReport(t, "report.json")
	page := render(t, r, nil)
	doc := parse(t, page)
	if n := len(findAll(doc, "script", nil)); n != 0 {
		t.Fatalf("an error message became a <script> element (%d found)", n)
	}
	if bytes.Contains(page, []byte(`<script>alert`)) || bytes.Contains(page, []byte(`<rate>`)) {
		t.Fatal("unescaped user data in the page")
	}
	// The text survives escaping intact: the failure tooltip shows the message.
	var found bool
	for _, rect := range findAll(doc, "rect", func(n *xhtml.Node) bool { _, ok := attr(n, "data-value"); return ok }) {
		if strings.Contains(text(rect), `engine said: <script>alert("x")</script> & overloaded`) {
			found = true
		}
	}
	if !found {
		t.Error("the server_error sample message is not in its bar's tooltip")
	}
	if got := text(findAll(doc, "h1", nil)[0]); got != r.Plan.Name {
		t.Errorf("h1 = %q, want %q", got, r.Plan.Name)
	}
	// Every SVG fragment is well-formed XML on its own (a stray & or < would not be).
	for _, m := range regexp.MustCompile(`(?s)<svg class="chart".*?</svg>`).FindAll(page, -1) {
		if err := xmlWellFormed(m); err != nil {
			t.Fatalf("svg fragment is not well-formed: %v\n%.300s", err, m)
		}
	}
}

func TestTopOfPage(t *testing.T) {
	r := loadReport(t, "report.json")
	doc := parse(t, render(t, r, nil))
	if v := attrOr(findAll(doc, "span", func(n *xhtml.Node) bool { _, ok := attr(n, "data-verdict"); return ok })[0], "data-verdict"); v != r.Verdict {
		t.Errorf("verdict = %q, want %q", v, r.Verdict)
	}
	if v := attrOr(findAll(doc, "span", func(n *xhtml.Node) bool { _, ok := attr(n, "data-stop-reason"); return ok })[0], "data-stop-reason"); v != r.StopReason {
		t.Errorf("stop reason = %q, want %q", v, r.StopReason)
	}
	// Validity warnings: the report's, the stages', the levels' and the
	// bottleneck flag; low confidence is not among them (a quiet mark in the
	// level table), nor are notes (under the table).
	warnings := findAll(doc, "ul", hasAttr("class", "warnings"))[0]
	wtext := text(warnings)
	want := append([]string{}, r.Warnings...)
	for _, st := range r.Stages {
		want = append(want, st.Warnings...)
		if st.Error != "" {
			want = append(want, st.Error)
		}
		for _, p := range st.Points {
			want = append(want, p.Warnings...)
		}
	}
	for _, w := range want {
		if !strings.Contains(wtext, w) {
			t.Errorf("warning %q not shown at the top", w)
		}
	}
	if !strings.Contains(wtext, "raised by Client CPU 97.3% of one core") {
		t.Errorf("client bottleneck not flagged at the top with the signal that raised it: %q", wtext)
	}
	if strings.Contains(wtext, "low confidence") || len(findAll(warnings, "li", hasAttr("data-kind", "lowconf"))) != 0 {
		t.Error("low confidence is among the validity warnings; it is a quiet mark in the level table")
	}
	// The fixture's c=1 has a low-confidence ttft_p99_ms: its cell is marked,
	// and the stage explains the mark once.
	st := findAll(doc, "section", hasAttr("data-stage", r.Stages[0].Name))[0]
	if c := text(findAll(st, "table", hasAttr("class", "levels"))[0]); !strings.Contains(c, "~"+anyString(r.Stages[0].Points[0].TTFTP99Ms)) {
		t.Errorf("low-confidence ttft_p99_ms of c=1 not marked ~ in the level table: %q", c)
	}
	if len(findAll(st, "p", func(n *xhtml.Node) bool { _, ok := attr(n, "data-lowconf"); return ok })) != 1 {
		t.Error("no low-confidence legend under the level table")
	}
	// Checks: every outcome, with its status and the values it read.
	rows := findAll(doc, "tr", func(n *xhtml.Node) bool { _, ok := attr(n, "data-status"); return ok })
	var outcomes []result.CheckOutcome
	for _, st := range r.Stages {
		outcomes = append(outcomes, st.Checks...)
	}
	if len(rows) != len(outcomes) {
		t.Fatalf("%d check rows, want %d", len(rows), len(outcomes))
	}
	statuses := map[string]bool{}
	for i, c := range outcomes {
		if s := attrOr(rows[i], "data-status"); s != c.Status {
			t.Errorf("check %d status %q, want %q", i, s, c.Status)
		}
		statuses[c.Status] = true
		rt := text(rows[i])
		for k, v := range c.Values {
			if !strings.Contains(rt, k+" = "+anyString(v)) {
				t.Errorf("check %q: value %s = %v not shown in %q", c.Name, k, v, rt)
			}
		}
	}
	for _, s := range []string{result.StatusPass, result.StatusFail, result.StatusWarn, result.StatusSkipped} {
		if !statuses[s] {
			t.Errorf("fixture has no check with status %s", s)
		}
	}
}

func TestDistributionsAndFailures(t *testing.T) {
	r := loadReport(t, "report.json")
	doc := parse(t, render(t, r, nil))
	st := r.Stages[0]
	svg := chartNode(t, doc, "stage-chat-sweep-ttft-dist")
	for i := range st.Points {
		p := &st.Points[i]
		g := seriesGroup(t, svg, p.Label())
		ys, tips := markers(g)
		if len(ys) == 0 || ys[len(ys)-1] != "100" {
			t.Fatalf("%s: cumulative curve does not end at 100%%: %v", p.Label(), ys)
		}
		// Each tooltip's bucket count is the histogram's.
		counts := map[string]int64{}
		for _, b := range p.TTFTHist {
			counts[fmtNum(b.UpperMs)] = b.Count
		}
		for _, tip := range tips {
			var le string
			var n int64
			if _, err := fmtSscanf(tip, &le, &n); err != nil {
				t.Fatalf("tooltip %q: %v", tip, err)
			}
			if counts[le] != n {
				t.Errorf("%s: tooltip %q, histogram has %d at %s", p.Label(), tip, counts[le], le)
			}
		}
	}
	// Failures: one bar segment per level and kind with its count.
	bars := chartNode(t, doc, "stage-chat-sweep-failures")
	g := seriesGroup(t, bars, "http_429")
	rects := findAll(g, "rect", nil)
	if len(rects) != 1 || attrOr(rects[0], "data-value") != "12" || attrOr(rects[0], "data-category") != "c=64" {
		t.Fatalf("http_429 bars = %d, want one of 12 at c=64", len(rects))
	}
	// A stage without failures says so instead of drawing an empty chart.
	r.Stages[0].Points = r.Stages[0].Points[:3]
	doc = parse(t, render(t, r, nil))
	if len(findAll(doc, "svg", hasAttr("data-chart", "stage-chat-sweep-failures"))) != 0 ||
		!strings.Contains(text(findAll(doc, "figure", hasAttr("id", "stage-chat-sweep-failures"))[0]), "No failed requests") {
		t.Error("a stage without failures should say so")
	}
}

var tipRE = regexp.MustCompile(`≤ ([0-9.]+) ms: ([0-9]+) in bucket`)

func fmtSscanf(tip string, le *string, n *int64) (int, error) {
	m := tipRE.FindStringSubmatch(tip)
	if m == nil {
		return 0, strconvErr(tip)
	}
	*le = m[1]
	v, err := strconv.ParseInt(m[2], 10, 64)
	*n = v
	return 2, err
}

type strconvErr string

func (e strconvErr) Error() string { return "no bucket in " + string(e) }

// TestGolden compares the whole page for the fixture, with and without the
// baseline, against testdata/*.golden.html (go test -update rewrites them).
func TestGolden(t *testing.T) {
	r := loadReport(t, "report.json")
	base := loadReport(t, "baseline.json")
	for _, tc := range []struct {
		name string
		base *result.Report
	}{{"report.golden.html", nil}, {"report_baseline.golden.html", base}} {
		t.Run(tc.name, func(t *testing.T) {
			got := render(t, r, tc.base)
			path := filepath.Join("testdata", tc.name)
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from the golden file; run go test -update and review the diff", tc.name)
			}
		})
	}
}

func TestWriteNilReport(t *testing.T) {
	if err := Write(&bytes.Buffer{}, nil, nil); err == nil {
		t.Fatal("nil report: want an error")
	}
}

// TestEmptyReport: a report with no stages, no checks and zero times still
// renders a valid page (a run that failed before any stage ran).
func TestEmptyReport(t *testing.T) {
	page := render(t, &result.Report{StopReason: result.StopError, Verdict: result.StatusFail}, nil)
	doc := parse(t, page)
	if !strings.Contains(text(doc), "stopped early (error)") {
		t.Error("an errored run should say it stopped early")
	}
}

type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) {
	if w.n += len(p); w.n > 4096 {
		return 0, errors.New("disk full")
	}
	return len(p), nil
}

func TestWriteErrorIsReturned(t *testing.T) {
	err := Write(&failWriter{}, loadReport(t, "report.json"), nil)
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("err = %v, want the writer's error wrapped", err)
	}
}

// TestPerTurnPointsStayOffTheCurves: per-turn points of a multi-turn stage are
// listed in the table but not drawn on the load curves.
func TestPerTurnPointsStayOffTheCurves(t *testing.T) {
	r := loadReport(t, "report.json")
	st := &r.Stages[0]
	turn := st.Points[1]
	turn.Turn = 2
	turn.OutputTPSTotal = 9999
	st.Points = append(st.Points, turn)
	doc := parse(t, render(t, r, nil))
	ys, _ := markers(seriesGroup(t, chartNode(t, doc, "stage-chat-sweep-throughput"), "output tok/s"))
	if len(ys) != len(st.Points)-1 || strings.Contains(strings.Join(ys, " "), "9999") {
		t.Fatalf("throughput markers %v include the per-turn point", ys)
	}
	if !strings.Contains(text(doc), "c=4 turn=2") {
		t.Error("the per-turn point is missing from the levels table")
	}
}

// FuzzWrite: any report that decodes must render without error or panic, and
// every chart must stay well-formed SVG.
func FuzzWrite(f *testing.F) {
	for _, name := range []string{"report.json", "baseline.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"stages":[{"name":"s","load":"rate","points":[{"rate":1e308,"output_tps_total":-1e308,"ttft_p50_ms":1e-300},{"rate":1e-300,"ttft_p50_ms":1e308,"ttft_hist":[{"le_ms":1e-300,"count":9},{"le_ms":1e308,"count":-3}]}]}]}`))
	svgRE := regexp.MustCompile(`(?s)<svg class="chart".*?</svg>`)
	f.Fuzz(func(t *testing.T, b []byte) {
		var r result.Report
		if json.Unmarshal(b, &r) != nil {
			return
		}
		var buf bytes.Buffer
		if err := Write(&buf, &r, &r); err != nil {
			t.Fatal(err)
		}
		for _, m := range svgRE.FindAll(buf.Bytes(), -1) {
			if err := xmlWellFormed(m); err != nil {
				t.Fatalf("svg not well-formed: %v", err)
			}
		}
	})
}

func BenchmarkWrite(b *testing.B) {
	r := loadReport(b, "report.json")
	base := loadReport(b, "baseline.json")
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := Write(&buf, r, base); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(buf.Len()))
}

// BenchmarkWriteLarge is a long sweep: 4 stages of 32 levels with 200-bucket
// histograms, to show the page stays quick to build for big runs.
func BenchmarkWriteLarge(b *testing.B) {
	r := loadReport(b, "report.json")
	proto := r.Stages[0].Points[2]
	var hist []result.Bucket
	for i := 1; i <= 200; i++ {
		hist = append(hist, result.Bucket{UpperMs: float64(i) * 5, Count: int64(i % 17)})
	}
	r.Stages = nil
	for s := 0; s < 4; s++ {
		st := result.Stage{Name: "stage-" + strconv.Itoa(s), Load: "concurrency"}
		for l := 1; l <= 32; l++ {
			p := proto
			p.Concurrency = l * 8
			p.TTFTHist, p.ITLHist = hist, hist
			st.Points = append(st.Points, p)
		}
		r.Stages = append(r.Stages, st)
	}
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := Write(&buf, r, r); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(buf.Len()))
}

// TestComparisonTable: with a comparison in the report, the page's header
// carries its headline, and each stage shows what was judged worse or better
// with their intervals and verdicts, worse first and the larger change
// first, and one line for the rest (inconclusive and same are counted, not
// listed), and says what the confidence is.
func TestComparisonTable(t *testing.T) {
	r := loadReport(t, "report.json")
	base := loadReport(t, "baseline.json")
	r.Comparison = &result.ComparisonSummary{Confidence: 0.95, Each: 0.999, Intervals: 50, Gated: 4, Worse: 1, Better: 1, Same: 1, Inconclusive: 1,
		Levels: 1, Unmatched: 1, Threshold: 0.05, Records: true, Family: &result.GateFamily{Source: "default"}}
	pt := &r.Stages[0].Points[0]
	pt.BaselineComparison = []result.Comparison{
		{Metric: "ttft_p95_ms", Statistic: "p95", Base: result.Ptr(20.0), New: result.Ptr(16.0), Rel: result.Ptr(-0.2), Abs: result.Ptr(-4.0),
			Interval: &result.Interval{Lo: -0.25, Hi: -0.15}, Verdict: "better", NBase: 120, NNew: 120, Gated: true},
		{Metric: "tpot_p50_ms", Statistic: "p50", Base: result.Ptr(2.0), New: result.Ptr(2.31), Rel: result.Ptr(0.155), Abs: result.Ptr(0.31),
			Interval: &result.Interval{Lo: 0.142, Hi: 0.168}, Verdict: "worse", NBase: 120, NNew: 120, Gated: true},
		{Metric: "ttft_p50_ms", Statistic: "p50", Base: result.Ptr(20.0), New: result.Ptr(20.1), Rel: result.Ptr(0.005), Abs: result.Ptr(0.1), Verdict: "same", Gated: true},
		{Metric: "ttft_p99_ms", Statistic: "p99", Base: result.Ptr(24.0), New: result.Ptr(27.0), Rel: result.Ptr(0.125), Abs: result.Ptr(3.0),
			Interval: &result.Interval{Lo: -0.02, Hi: 0.3}, Verdict: "inconclusive", Reason: "too few samples: p99 needs 100, base has 32, new 32", Gated: true},
	}
	doc := parse(t, render(t, r, base))
	if g := findAll(doc, "p", hasAttr("id", "gate")); len(g) != 1 || !strings.HasPrefix(text(g[0]), "Partial: gated 4 (1 worse, 1 better, 1 same, 1 inconclusive), 1 of 2 levels unmatched") {
		t.Errorf("no headline in the header: %v", g)
	}
	sec := findAll(doc, "section", hasAttr("data-stage", r.Stages[0].Name))[0]
	rows := findAll(sec, "tr", func(n *xhtml.Node) bool { _, ok := attr(n, "data-verdict"); return ok })
	if len(rows) != 2 {
		t.Fatalf("%d comparison rows, want the worse and the better one", len(rows))
	}
	worse, better := text(rows[0]), text(rows[1])
	if !strings.Contains(worse, "+15.5%") || !strings.Contains(worse, "[+14.2%, +16.8%]") || !strings.Contains(worse, "p50 of 120 and 120 requests") {
		t.Errorf("worse row first: %q", worse)
	}
	if v, _ := attr(rows[1], "data-verdict"); v != "better" || !strings.Contains(better, "-20.0%") {
		t.Errorf("better row second: %q", better)
	}
	if len(findAll(rows[1], "span", hasAttr("class", "badge better"))) != 1 {
		t.Error("better has no badge of its own")
	}
	if s := text(sec); !strings.Contains(s, "Not shown: 1 inconclusive, 1 same (runner compare --all shows every row).") ||
		!strings.Contains(s, "95% confidence over the 50 gated comparisons with an interval") {
		t.Errorf("comparison note missing: %q", s)
	}
	if len(findAll(parse(t, render(t, loadReport(t, "report.json"), base)), "table", hasAttr("class", "compare"))) != 0 {
		t.Error("a comparison table without a comparison")
	}
}

// TestBottleneckNamesItsSignal: a flag raised by dispatch lag names the lag
// and its value, not the client's CPU (0.8% of one core said nothing), and
// the warning's label and text do not repeat a word ("client client").
func TestBottleneckNamesItsSignal(t *testing.T) {
	st := &result.Stage{Name: "s", Points: []result.Point{{Concurrency: 1, Rate: result.Ptr(4.0),
		ClientBottleneck: true, ClientBottleneckBy: []string{"dispatch_lag_p99_ms"},
		DispatchLagP99Ms: result.Ptr(2.744), ClientCPUPercent: result.Ptr(0.8)}}}
	ws := stageWarnings(st)
	if len(ws) != 1 || ws[0].Kind != "bottleneck" {
		t.Fatalf("warnings %+v", ws)
	}
	if txt := ws[0].Text; !strings.Contains(txt, "raised by Lag p99 2.74 ms") || strings.Contains(txt, "CPU") || strings.HasPrefix(txt, "client") {
		t.Errorf("bottleneck warning %q: want the lag that raised it, no CPU, no repeated label", txt)
	}
	if row := levelRowOf(&st.Points[0]); !slices.Contains(row.Flags, "client bottleneck (Lag p99)") {
		t.Errorf("level flags %q", row.Flags)
	}
}

// TestLevelsTableFitsAWindow: the levels table keeps to its 16 columns of
// numbers (at 1280 px they fit; scripts/html-check.sh measures it): a
// level's flags are a row under it, and natural mode's length spread is a
// table of its own.
func TestLevelsTableFitsAWindow(t *testing.T) {
	doc := parse(t, render(t, loadReport(t, "report.json"), nil))
	tables := findAll(doc, "table", hasAttr("class", "levels"))
	if len(tables) == 0 {
		t.Fatal("no levels table")
	}
	for _, tb := range tables {
		if n := len(findAll(findAll(tb, "thead", func(*xhtml.Node) bool { return true })[0], "th", func(*xhtml.Node) bool { return true })); n > 16 {
			t.Errorf("a levels table has %d columns, more than the 16 that fit 1280 px", n)
		}
	}
	flags := findAll(tables[0], "tr", hasAttr("class", "flags warn"))
	if len(flags) != 1 || !strings.Contains(text(flags[0]), "client bottleneck (Client CPU); fewer in flight than labelled") {
		t.Errorf("c=64's flags are not a row of their own under it: %d flag rows", len(flags))
	}
	if len(findAll(doc, "table", hasAttr("class", "levels lengths"))) == 0 {
		t.Error("the natural stage's output lengths have no table of their own")
	}
}
