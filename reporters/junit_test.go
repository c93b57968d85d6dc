package reporters

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/runnerbench/runner/result"
)

// xnode is a generic XML element for the structural check.
type xnode struct {
	name     string
	attrs    map[string]string
	children []*xnode
	text     string
}

func parseXML(data []byte) (*xnode, error) {
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = true
	var stack []*xnode
	var root *xnode
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			n := &xnode{name: t.Name.Local, attrs: map[string]string{}}
			for _, a := range t.Attr {
				if _, dup := n.attrs[a.Name.Local]; dup {
					return nil, fmt.Errorf("<%s>: duplicate attribute %s", n.name, a.Name.Local)
				}
				n.attrs[a.Name.Local] = a.Value
			}
			if len(stack) > 0 {
				p := stack[len(stack)-1]
				p.children = append(p.children, n)
			} else if root != nil {
				return nil, errors.New("more than one root element")
			} else {
				root = n
			}
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].text += string(t)
			}
		}
	}
	if root == nil {
		return nil, errors.New("no root element")
	}
	return root, nil
}

// elemRule is one element's rules from testdata/junit.xsd.
type elemRule struct {
	required []string
	optional []string
	children []string          // allowed child elements
	types    map[string]string // attribute → count | seconds | timestamp
	textOnly bool              // no child elements allowed
}

var junitRules = map[string]elemRule{
	"testsuites": {optional: []string{"name", "time", "tests", "failures", "errors", "skipped"},
		children: []string{"testsuite"},
		types:    map[string]string{"time": "seconds", "tests": "count", "failures": "count", "errors": "count", "skipped": "count"}},
	"testsuite": {required: []string{"name", "tests", "failures", "errors"},
		optional: []string{"skipped", "time", "timestamp", "hostname", "id", "package", "group", "file", "log", "url"},
		children: []string{"testsuite", "properties", "testcase", "system-out", "system-err"},
		types:    map[string]string{"tests": "count", "failures": "count", "errors": "count", "skipped": "count", "time": "seconds", "timestamp": "timestamp"}},
	"properties": {children: []string{"property"}},
	"property":   {required: []string{"name", "value"}, textOnly: true},
	"testcase": {required: []string{"name", "classname", "time"}, optional: []string{"group", "file", "line"},
		children: []string{"skipped", "error", "failure", "system-out", "system-err"},
		types:    map[string]string{"time": "seconds"}},
	"skipped":    {optional: []string{"message", "type"}, textOnly: true},
	"error":      {optional: []string{"message", "type"}, textOnly: true},
	"failure":    {optional: []string{"message", "type"}, textOnly: true},
	"system-out": {textOnly: true},
	"system-err": {textOnly: true},
}

var (
	countRE     = regexp.MustCompile(`^[0-9]+$`)
	secondsRE   = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)
	timestampRE = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})?$`)
)

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// validateJUnit checks a junit.xml against the rules of testdata/junit.xsd
// (elements, children, required and typed attributes, at most one outcome per
// testcase) and that every tests/failures/errors/skipped count equals what
// its children hold. It runs everywhere; xmllint adds the real XSD check.
func validateJUnit(data []byte) error {
	root, err := parseXML(data)
	if err != nil {
		return fmt.Errorf("not well-formed: %w", err)
	}
	if root.name != "testsuites" {
		return fmt.Errorf("root is <%s>, want <testsuites>", root.name)
	}
	var errs []error
	var walk func(n *xnode, path string)
	walk = func(n *xnode, path string) {
		path += "/" + n.name
		rule, ok := junitRules[n.name]
		if !ok {
			errs = append(errs, fmt.Errorf("%s: element not allowed", path))
			return
		}
		for _, a := range rule.required {
			if _, ok := n.attrs[a]; !ok {
				errs = append(errs, fmt.Errorf("%s: missing required attribute %s", path, a))
			}
		}
		for a, v := range n.attrs {
			if !contains(rule.required, a) && !contains(rule.optional, a) {
				errs = append(errs, fmt.Errorf("%s: attribute %s not allowed", path, a))
			}
			var re *regexp.Regexp
			switch rule.types[a] {
			case "count":
				re = countRE
			case "seconds":
				re = secondsRE
			case "timestamp":
				re = timestampRE
			}
			if re != nil && !re.MatchString(v) {
				errs = append(errs, fmt.Errorf("%s: attribute %s=%q is not a valid %s", path, a, v, rule.types[a]))
			}
		}
		if rule.textOnly && len(n.children) > 0 {
			errs = append(errs, fmt.Errorf("%s: must hold text only", path))
		}
		if !rule.textOnly && strings.TrimSpace(n.text) != "" {
			errs = append(errs, fmt.Errorf("%s: text not allowed", path))
		}
		outcomes := 0
		for _, c := range n.children {
			if !contains(rule.children, c.name) {
				errs = append(errs, fmt.Errorf("%s: child <%s> not allowed", path, c.name))
				continue
			}
			if c.name == "skipped" || c.name == "error" || c.name == "failure" {
				outcomes++
			}
			walk(c, path)
		}
		if outcomes > 1 {
			errs = append(errs, fmt.Errorf("%s: more than one of skipped/error/failure", path))
		}
		if n.name == "testsuite" || n.name == "testsuites" {
			errs = append(errs, checkCounts(n, path)...)
		}
	}
	walk(root, "")
	return errors.Join(errs...)
}

// checkCounts verifies a suite's counters against the testcases under it.
func checkCounts(n *xnode, path string) []error {
	var tests, failures, errs, skipped int
	var count func(n *xnode)
	count = func(n *xnode) {
		for _, c := range n.children {
			switch c.name {
			case "testsuite":
				count(c)
			case "testcase":
				tests++
				for _, o := range c.children {
					switch o.name {
					case "failure":
						failures++
					case "error":
						errs++
					case "skipped":
						skipped++
					}
				}
			}
		}
	}
	count(n)
	var out []error
	for attr, want := range map[string]int{"tests": tests, "failures": failures, "errors": errs, "skipped": skipped} {
		v, ok := n.attrs[attr]
		if !ok {
			continue
		}
		got, err := strconv.Atoi(v)
		if err == nil && got != want {
			out = append(out, fmt.Errorf("%s: %s=%d but it holds %d", path, attr, got, want))
		}
	}
	return out
}

func junitOf(t *testing.T, r *result.Report) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, r); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// nastyReport is a report whose strings hold everything that breaks naive XML
// writers: markup characters, control bytes, invalid UTF-8, "]]>".
func nastyReport() *result.Report {
	bad := "a<b>&\"'\x00\x1b[31m\xff]]>\r\nend"
	return &result.Report{Plan: result.Plan{Name: bad}, Stages: []result.Stage{{
		Name: bad, Error: bad, Endpoint: result.Endpoint{Name: bad, Model: bad},
		Points: []result.Point{{Concurrency: 1, NRequests: 2, Failed: 2, Error: &bad, DurationS: -1}},
		Checks: []result.CheckOutcome{
			{Name: bad, Expr: bad, Status: result.StatusFail, Values: map[string]any{bad: bad}},
			{Name: bad, Expr: bad, Status: result.StatusSkipped, Message: bad},
			{Name: bad, Expr: bad, Status: result.StatusWarn, Message: bad},
		},
	}}}
}

func TestJUnitStructure(t *testing.T) {
	for name, r := range map[string]*result.Report{"fixture": fixture(t), "recorded": recorded(t), "search": searchFixture(t), "nasty": nastyReport(), "empty": {}} {
		t.Run(name, func(t *testing.T) {
			if err := validateJUnit(junitOf(t, r)); err != nil {
				t.Fatalf("junit.xml invalid:\n%v\n%s", err, junitOf(t, r))
			}
		})
	}
}

// TestJUnitValidatorCatchesErrors proves the structural check can fail.
func TestJUnitValidatorCatchesErrors(t *testing.T) {
	for name, doc := range map[string]string{
		"not xml":          `<testsuites><testsuite>`,
		"wrong root":       `<testsuite name="a" tests="0" failures="0" errors="0"/>`,
		"missing name":     `<testsuites><testsuite tests="0" failures="0" errors="0"/></testsuites>`,
		"bad count":        `<testsuites><testsuite name="a" tests="x" failures="0" errors="0"/></testsuites>`,
		"wrong count":      `<testsuites><testsuite name="a" tests="2" failures="0" errors="0"><testcase name="t" classname="c" time="0"/></testsuite></testsuites>`,
		"bad time":         `<testsuites><testsuite name="a" tests="1" failures="0" errors="0"><testcase name="t" classname="c" time="1e3"/></testsuite></testsuites>`,
		"unknown child":    `<testsuites><testsuite name="a" tests="1" failures="0" errors="0"><testcase name="t" classname="c" time="0"><oops/></testcase></testsuite></testsuites>`,
		"two outcomes":     `<testsuites><testsuite name="a" tests="1" failures="1" errors="1"><testcase name="t" classname="c" time="0"><failure/><error/></testcase></testsuite></testsuites>`,
		"no classname":     `<testsuites><testsuite name="a" tests="1" failures="0" errors="0"><testcase name="t" time="0"/></testsuite></testsuites>`,
		"unknown attr":     `<testsuites><testsuite name="a" tests="0" failures="0" errors="0" colour="red"/></testsuites>`,
		"child in failure": `<testsuites><testsuite name="a" tests="1" failures="1" errors="0"><testcase name="t" classname="c" time="0"><failure><b/></failure></testcase></testsuite></testsuites>`,
	} {
		if err := validateJUnit([]byte(doc)); err == nil {
			t.Errorf("%s: validator accepted an invalid document", name)
		}
	}
}

func TestJUnitContent(t *testing.T) {
	root, err := parseXML(junitOf(t, fixture(t)))
	if err != nil {
		t.Fatal(err)
	}
	if got := root.attrs["tests"] + "/" + root.attrs["failures"] + "/" + root.attrs["errors"] + "/" + root.attrs["skipped"]; got != "20/4/3/1" { // 3 errors: a level, a stage, and the interrupted run
		t.Errorf("testsuites tests/failures/errors/skipped = %s, want 20/4/3/1", got)
	}
	cases := map[string]*xnode{}
	for _, s := range root.children {
		for _, c := range s.children {
			if c.name == "testcase" {
				if c.attrs["classname"] != s.attrs["name"] {
					t.Errorf("testcase %q classname %q, want the suite name %q", c.attrs["name"], c.attrs["classname"], s.attrs["name"])
				}
				cases[c.attrs["name"]] = c
			}
		}
	}
	child := func(name, elem string) *xnode {
		c := cases[name]
		if c == nil {
			t.Fatalf("no testcase %q", name)
		}
		for _, o := range c.children {
			if o.name == elem {
				return o
			}
		}
		return nil
	}
	if f := child("throughput / c=8 / interactive ttft p95 under 150ms", "failure"); f == nil ||
		f.attrs["message"] != "ttft_p95_ms < 150 (ttft_p95_ms=188.31)" || !strings.Contains(f.text, "measured: ttft_p95_ms=188.31") {
		t.Errorf("failed check lacks expression and values: %+v", f)
	}
	if s := child("throughput / c=32 / interactive ttft p95 under 150ms", "skipped"); s == nil {
		t.Error("check excluded by when is not <skipped>")
	}
	if e := child("throughput / c=32 / level ran", "error"); e == nil || !strings.Contains(e.attrs["message"], "every request failed (128 of 128)") {
		t.Errorf("level where every request failed is not an <error>: %+v", e)
	}
	if e := child("long-context / stage ran", "error"); e == nil || e.attrs["message"] != "interrupted before the stage started" {
		t.Errorf("stage error is not an <error>: %+v", e)
	}
	w := cases["throughput / c=8 / spec decoding accepts"]
	if w == nil || len(w.children) != 1 || w.children[0].name != "system-out" || !strings.HasPrefix(w.children[0].text, "WARNING") {
		t.Errorf("warn outcome should be a passed case with a WARNING system-out: %+v", w)
	}
	if c := cases["throughput / peak throughput"]; c == nil || len(c.children) != 0 {
		t.Errorf("stage-scope passing check missing or not clean: %+v", c)
	}
	if child("throughput / c=1 / level ran", "system-out") == nil {
		t.Error("level case lacks its summary")
	}
}

// TestJUnitXSD validates real output against testdata/junit.xsd with xmllint
// (libxml2-utils) when it is installed; CI installs it. The Go structural
// check above always runs, so skipping here never leaves JUnit unchecked.
func TestJUnitXSD(t *testing.T) {
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		t.Skip("xmllint not installed (apt-get install libxml2-utils); structural check still ran in TestJUnitStructure")
	}
	xsd, err := filepath.Abs(filepath.Join("testdata", "junit.xsd"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, r := range map[string]*result.Report{"fixture": fixture(t), "recorded": recorded(t), "search": searchFixture(t), "nasty": nastyReport(), "empty": {}} {
		path := filepath.Join(dir, name+".xml")
		if err := os.WriteFile(path, junitOf(t, r), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(xmllint, "--noout", "--nonet", "--schema", xsd, path).CombinedOutput()
		if err != nil {
			t.Errorf("%s: xmllint rejects junit.xml: %v\n%s", name, err, out)
		}
	}
	// And the XSD really rejects what it should: a testcase without classname.
	bad := filepath.Join(dir, "bad.xml")
	doc := `<testsuites><testsuite name="a" tests="1" failures="0" errors="0"><testcase name="t" time="0"/></testsuite></testsuites>`
	if err := os.WriteFile(bad, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := exec.Command(xmllint, "--noout", "--nonet", "--schema", xsd, bad).Run(); err == nil {
		t.Error("xmllint accepted a testcase without classname: the XSD is too loose")
	}
}

// TestJUnitGateProblem: a comparison that judged nothing, with
// --fail-inconclusive, is a failed case of its own, so CI is not green.
func TestJUnitGateProblem(t *testing.T) {
	r := withComparison(fixture(t))
	r.Comparison.FailInconclusive = true
	r.Comparison.Worse, r.Comparison.Better, r.Comparison.Same, r.Comparison.Inconclusive = 0, 0, 0, r.Comparison.Gated
	var b bytes.Buffer
	if err := WriteJUnit(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `<testcase name="comparison with the baseline" classname="ci-smoke/baseline"`) || !strings.Contains(b.String(), `type="baseline_gate"`) {
		t.Errorf("no failed case for the gate:\n%s", b.String())
	}
}
