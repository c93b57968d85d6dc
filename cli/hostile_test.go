package cli

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	xhtml "golang.org/x/net/html"

	"github.com/runnerbench/runner/internal/testutil"
	"github.com/runnerbench/runner/sim"
)

// tripwire is a loopback listener that must never be contacted: it counts
// every connection (not only HTTP requests), and the test fails at its end
// if there was one.
func tripwire(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var hits atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			hits.Add(1)
			_ = c.Close()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		if n := hits.Load(); n > 0 {
			t.Errorf("the tripwire at %s received %d connections", ln.Addr(), n)
		}
	})
	return ln.Addr().String()
}

// TestHostileCorpusThroughCLI runs every refused plan of the hostile corpus
// (scenario/testdata/hostile) as a CI job would, with the job's secrets and
// allow-list in the environment: each is exit 2 with one line per problem
// on stderr, positioned in the plan, no secret in any output, no output
// directory created, and no connection to the tripwire the plans target.
func TestHostileCorpusThroughCLI(t *testing.T) {
	c := testutil.NewHostileCorpus(t, "../scenario/testdata/hostile", tripwire(t))
	n := 0
	for _, hp := range c.Plans {
		if !hp.Refused {
			continue
		}
		n++
		for _, cmd := range []string{"run", "validate"} {
			out := filepath.Join(c.Root, "out-"+hp.Name)
			code, stdout, stderr := runCLI(t, c.Env, cmd, hp.Path, "--out", out)
			if cmd == "validate" {
				code, stdout, stderr = runCLI(t, c.Env, cmd, hp.Path)
			}
			if code != 2 {
				t.Errorf("%s %s: exit %d, want 2\n%s", cmd, hp.Name, code, stderr)
			}
			lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
			for i, l := range lines {
				if !strings.HasPrefix(l, hp.Path+":") && !(i == len(lines)-1 && len(lines) > 1 && strings.HasPrefix(l, "runner: ")) {
					t.Errorf("%s %s: line %q is not a positioned plan error", cmd, hp.Name, l)
				}
			}
			if leaks := c.Leaks(stdout + stderr); len(leaks) > 0 {
				t.Errorf("%s %s: output shows %q:\n%s%s", cmd, hp.Name, leaks, stdout, stderr)
			}
			if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s %s: the output directory exists: refused after the run started", cmd, hp.Name)
			}
		}
	}
	if n < 12 {
		t.Errorf("only %d refused plans", n)
	}
}

// TestHostileMarkup runs the corpus's markup plan, whose names are HTML,
// XML and Markdown payloads, on the built-in simulator and checks that every
// report shows them as text.
func TestHostileMarkup(t *testing.T) {
	c := testutil.NewHostileCorpus(t, "../scenario/testdata/hostile", tripwire(t))
	var plan string
	for _, hp := range c.Plans {
		if hp.Name == "markup" {
			plan = hp.Path
		}
	}
	out := filepath.Join(c.Root, "out")
	code, stdout, stderr := runCLI(t, c.Env, plan, "--out", out, "--no-progress")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	const planName = "<img src=x onerror=alert(1)>&amp;"
	const stageName = "| pipe | `tick` [link](javascript:alert(1)) ![i](https://example.invalid/t.png) <i>"
	const check1 = "]]></failure><script>alert(2)</script> | x"

	rep := loadReport(t, out)
	if rep.Plan.Name != planName || rep.Stages[0].Name != stageName || rep.Stages[0].Checks[0].Name != check1 {
		t.Errorf("report.json does not hold the names as written: %q %q %q", rep.Plan.Name, rep.Stages[0].Name, rep.Stages[0].Checks[0].Name)
	}

	// HTML: no element, attribute or script comes from a name.
	checkHTMLText(t, "report.html", readFile(t, filepath.Join(out, "report.html")), planName, stageName, check1, "<b>sim</b>", "engine=<img src=x onerror=alert(3)>")

	// JUnit: well-formed, and the names come back out as they went in.
	junit := readFile(t, filepath.Join(out, "junit.xml"))
	dec := xml.NewDecoder(strings.NewReader(junit))
	names := map[string]bool{}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("junit.xml is not well-formed: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			for _, a := range se.Attr {
				if a.Name.Local == "name" || a.Name.Local == "classname" {
					names[a.Value] = true
				}
			}
			if se.Name.Local == "script" {
				t.Error("junit.xml has an injected <script> element")
			}
		}
	}
	found := false
	for n := range names {
		found = found || strings.Contains(n, check1)
	}
	if !found {
		t.Errorf("junit.xml has no test case named with %q: %v", check1, names)
	}

	md := readFile(t, filepath.Join(out, "summary.md"))
	checkMarkdown(t, md)
	// Entities are escaped too, so the page shows the name as written.
	if !strings.Contains(md, "&lt;img src=x onerror=alert(1)&gt;&amp;amp;") {
		t.Errorf("summary.md does not show the plan name as written:\n%s", md)
	}
	if strings.ContainsRune(stdout, '\x1b') {
		t.Errorf("the table carries an escape sequence:\n%q", stdout)
	}
	hostileBoard(t, c.Env, out, planName)
}

// hostileBoard draws the board of the markup plan's run: its labels and
// names are text in board.html, board.md and the terminal table.
func hostileBoard(t *testing.T, env map[string]string, run, planName string) {
	t.Helper()
	const engine = "<img src=x onerror=alert(3)>"
	const note = "| pipe | `tick` [link](javascript:alert(4)) **bold** <!-- c --> &lt;tag&gt;"
	dir := filepath.Join(t.TempDir(), "board")
	code, stdout, stderr := runCLI(t, env, "board", run, "--out", dir)
	if code != 0 {
		t.Fatalf("board: exit %d\n%s", code, stderr)
	}
	checkHTMLText(t, "board.html", readFile(t, filepath.Join(dir, "board.html")), planName, "engine="+engine, note)
	md := readFile(t, filepath.Join(dir, "board.md"))
	checkMarkdown(t, md)
	if !strings.Contains(md, "engine=&lt;img src=x onerror=alert(3)&gt;") {
		t.Errorf("board.md does not show the label as written:\n%s", md)
	}
	if strings.ContainsRune(stdout, '\x1b') || !strings.Contains(stdout, engine) {
		t.Errorf("the board's table: an escape sequence, or the label not as written:\n%q", stdout)
	}
}

// checkHTMLText parses a page and fails the test on any element, event
// handler or script that came from a name, and on each wanted name not
// shown as text.
func checkHTMLText(t *testing.T, file, page string, want ...string) {
	t.Helper()
	doc, err := xhtml.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	var visit func(*xhtml.Node)
	texts := &strings.Builder{}
	visit = func(n *xhtml.Node) {
		switch {
		case n.Type == xhtml.ElementNode && (n.Data == "img" || n.Data == "i" || n.Data == "b" && n.Parent != nil && n.Parent.Data == "b"):
			t.Errorf("%s has an injected <%s>", file, n.Data)
		case n.Type == xhtml.ElementNode:
			for _, a := range n.Attr {
				if strings.HasPrefix(a.Key, "on") {
					t.Errorf("%s has an event handler %s=%q on <%s>", file, a.Key, a.Val, n.Data)
				}
			}
			if n.Data == "script" && n.FirstChild != nil && strings.Contains(n.FirstChild.Data, "alert(") {
				t.Errorf("%s runs an injected script", file)
			}
		case n.Type == xhtml.TextNode:
			texts.WriteString(n.Data)
		case n.Type == xhtml.CommentNode:
			t.Errorf("%s has an injected comment %q", file, n.Data)
		}
		for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
			visit(ch)
		}
	}
	visit(doc)
	for _, name := range want {
		if !strings.Contains(texts.String(), name) {
			t.Errorf("%s does not show %q as text", file, name)
		}
	}
}

// checkMarkdown asserts summary.md renders names as text: outside code
// spans (where nothing is markup, and a name's backticks are replaced so it
// cannot close one), no raw HTML tag or comment, no link, image or emphasis;
// and every table row has as many cells as its header.
func checkMarkdown(t *testing.T, md string) {
	t.Helper()
	prose := codeSpan.ReplaceAllString(md, "`code`")
	for _, raw := range []string{"<img", "<script", "<b>", "<i>", "<!--", "](javascript:", "![i](", "**bold**", "[link]"} {
		if strings.Contains(prose, raw) {
			t.Errorf("summary.md holds raw %q outside a code span", raw)
		}
	}
	cells := func(line string) int {
		n := 0
		for i := 0; i < len(line); i++ {
			switch line[i] {
			case '\\':
				i++ // an escaped character, a pipe included
			case '|':
				n++
			}
		}
		return n
	}
	want := -1
	for _, line := range strings.Split(md, "\n") {
		switch {
		case !strings.HasPrefix(line, "|"):
			want = -1
		case want < 0:
			want = cells(line)
		case cells(line) != want:
			t.Errorf("summary.md table row has %d cell borders, its header %d: %s", cells(line), want, line)
		}
	}
}

var codeSpan = regexp.MustCompile("`[^`\n]*`")

// TestHostileMetricsURL: a metrics_url on another host than base_url gets no
// credential: the scrape arrives without the API key or the plan's headers.
// Putting the credential into metrics_url itself (its password) for a host
// the job did not allow is refused before any traffic.
func TestHostileMetricsURL(t *testing.T) {
	const key = "sk-metrics-never-7"
	var mu sync.Mutex
	var scrapes []http.Header
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		scrapes = append(scrapes, r.Header.Clone())
		mu.Unlock()
		fmt.Fprintln(w, "# no counters")
	}))
	defer other.Close()
	api := startSimHandler(t, sim.FastConfig(), false, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer "+key || r.Header.Get("X-Key") != key {
				http.Error(w, "no key", http.StatusUnauthorized)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	apiHost := strings.TrimPrefix(api.URL, "http://")
	env := map[string]string{"BENCH_KEY": key, "RUNNER_ALLOW_ENV": "BENCH_KEY@" + apiHost}
	planFor := func(metrics string) string {
		return writePlan(t, fmt.Sprintf(`version: 1
name: metrics-elsewhere
endpoints:
  e:
    base_url: %s/v1
    api_key: ${BENCH_KEY}
    headers: {X-Key: "${BENCH_KEY}"}
    metrics_url: %s
prompts:
  p: {synthetic: {input_tokens: 16, sizing: reference}}
stages:
  - {name: s, endpoint: e, prompts: p, output_tokens: 4, concurrency: [1], requests: 2, warmup: 0}
`, api.URL, metrics))
	}
	dir := t.TempDir()
	code, stdout, stderr := runCLI(t, env, planFor(other.URL+"/metrics"), "--out", filepath.Join(dir, "ok"), "--no-progress")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	mu.Lock()
	seen := append([]http.Header(nil), scrapes...)
	mu.Unlock()
	if len(seen) == 0 {
		t.Fatal("metrics_url was never read: the test proves nothing")
	}
	for _, h := range seen {
		var b bytes.Buffer
		_ = h.Write(&b)
		if h.Get("Authorization") != "" || h.Get("X-Key") != "" || strings.Contains(b.String(), key) {
			t.Errorf("the other host received credentials:\n%s", b.String())
		}
	}

	code, _, stderr = runCLI(t, env, planFor("http://scrape:${BENCH_KEY}@"+strings.TrimPrefix(other.URL, "http://")+"/metrics"), "--out", filepath.Join(dir, "refused"))
	oneLineExit2(t, "credential in metrics_url", code, stderr, "metrics_url: environment variable BENCH_KEY may be sent only to "+apiHost)
	if strings.Contains(stderr, key) {
		t.Errorf("stderr shows the key: %s", stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(scrapes) != len(seen) {
		t.Errorf("the refused plan reached the metrics host (%d more requests)", len(scrapes)-len(seen))
	}
}

// TestHostileOutputPaths: a run writes only inside its output directory. A
// plan name made of dots and dashes lands in results/ under the working
// directory when --out is not given; a requests.jsonl planted in --out as a
// symbolic link (a pull request can commit one) is never followed: a
// directory holding nothing but the link is no result directory and is
// refused, and one holding an earlier run has the link removed with that
// run's files, its target untouched.
func TestHostileOutputPaths(t *testing.T) {
	root := t.TempDir()
	victim := filepath.Join(root, "victim.sh")
	writeFile(t, victim, "echo untouched\n")
	work := filepath.Join(root, "work")
	out := filepath.Join(work, "planted")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(out, "requests.jsonl")); err != nil {
		t.Skipf("no symbolic links: %v", err)
	}
	plan := writeFile(t, filepath.Join(work, "plan.yaml"), `version: 1
name: "..-..~-rf"
endpoints:
  sim: {simulator: {ttft_ms: 2, itl_ms: 1}}
prompts:
  p: {synthetic: {input_tokens: 16, sizing: reference}}
stages:
  - {name: s, endpoint: sim, prompts: p, output_tokens: 4, concurrency: [1], requests: 1, warmup: 0}
`)
	t.Chdir(work)
	if code, _, stderr := runCLI(t, nil, "plan.yaml", "--no-progress", "--quiet"); code != 0 {
		t.Fatalf("default output: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := runCLI(t, nil, plan, "--out", out, "--no-progress", "--quiet"); code != 2 || !strings.Contains(stderr, "no run header") {
		t.Fatalf("planted output: exit %d, want 2 (not a result directory)\n%s", code, stderr)
	}
	if err := os.Remove(filepath.Join(out, "requests.jsonl")); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, nil, plan, "--out", out, "--no-progress", "--quiet"); code != 0 {
		t.Fatalf("first run into out: exit %d\n%s", code, stderr)
	}
	if err := os.Remove(filepath.Join(out, "requests.jsonl")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(out, "requests.jsonl")); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, nil, plan, "--out", out, "--no-progress", "--quiet"); code != 0 {
		t.Fatalf("planted output in an earlier run: exit %d\n%s", code, stderr)
	}
	if b, _ := os.ReadFile(victim); string(b) != "echo untouched\n" {
		t.Errorf("the link's target was written: %q", b)
	}
	if st, err := os.Lstat(filepath.Join(out, "requests.jsonl")); err != nil || !st.Mode().IsRegular() {
		t.Errorf("requests.jsonl is not the run's own file: %v %v", st, err)
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 2 {
		t.Errorf("the run wrote beside its working directory: %v", entries)
	}
	runs, _ := filepath.Glob(filepath.Join(work, "results", "*", "report.json"))
	if len(runs) != 1 || !strings.HasPrefix(filepath.Base(filepath.Dir(runs[0])), "rf-") {
		t.Errorf("default results directory: %v", runs)
	}
}

// TestPrintShowsOnlyPublicValues: validate --print shows a value read from
// the environment only when the job allowed it as public; a credential is
// redacted wherever it sits (api_key, a header, a URL's password or key
// parameter), and the printed plan still validates.
func TestPrintShowsOnlyPublicValues(t *testing.T) {
	const key, pw = "sk-print-never-1", "pw-print-never-2"
	plan := writePlan(t, `version: 1
name: print-${MODEL}
endpoints:
  e:
    base_url: http://bench:${PW}@127.0.0.1:9/v1?api_key=${PW}
    model: ${MODEL}
    api_key: ${KEY}
    headers: {X-Key: "${KEY}"}
prompts:
  p: {inline: ["about ${MODEL}"]}
stages:
  - {name: s, endpoint: e, prompts: p, concurrency: [1]}
`)
	env := map[string]string{"KEY": key, "PW": pw, "MODEL": "llama-3-8b", "RUNNER_ALLOW_ENV": "MODEL KEY@localhost PW@127.0.0.1"}
	code, out, errs := runCLI(t, env, "validate", "--print", plan)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"name: print-llama-3-8b", "model: llama-3-8b", "about llama-3-8b", "api_key: '[REDACTED]'", "X-Key: '[REDACTED]'", "bench:%5BREDACTED%5D@", "api_key=%5BREDACTED%5D"} {
		if !strings.Contains(out, want) {
			t.Errorf("--print lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, key) || strings.Contains(out, pw) {
		t.Errorf("--print shows a credential:\n%s", out)
	}
	if code, _, errs := runCLI(t, nil, "validate", writePlan(t, out)); code != 0 {
		t.Errorf("the printed plan does not validate: %s", errs)
	}
	// Without the allow-list, the same plan is refused.
	code, _, errs = runCLI(t, map[string]string{"KEY": key, "PW": pw, "MODEL": "m"}, "validate", "--print", plan)
	// One line a variable, at its first use, with the entry that fixes it.
	if code != 2 || strings.Count(errs, "the job does not allow this plan to read environment variable") != 3 ||
		!strings.Contains(errs, "name: the job does not allow this plan to read environment variable MODEL (here and in 2 more places): if it holds no secret, run with --allow-env MODEL (") ||
		!strings.Contains(errs, "api_key: the job does not allow this plan to read environment variable KEY (here and in 1 more place): if 127.0.0.1 is the host this credential is for (this plan sends it there), run with --allow-env KEY@127.0.0.1") ||
		!strings.Contains(errs, "base_url: the job does not allow this plan to read environment variable PW (here and in 1 more place): if 127.0.0.1 is the host this credential is for (this plan sends it there), run with --allow-env PW@127.0.0.1") ||
		strings.Contains(errs, key) || strings.Contains(errs, pw) {
		t.Errorf("no allow-list: exit %d\n%s", code, errs)
	}
}
