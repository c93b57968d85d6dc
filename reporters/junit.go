package reporters

import (
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/runnerbench/runner/checks"
	"github.com/runnerbench/runner/result"
)

// The JUnit document. encoding/xml escapes attributes, and textBody element
// text, replacing characters XML 1.0 cannot carry (an error sample from a
// misbehaving server can hold any byte) with U+FFFD, so the output is always
// well-formed.
//
// Element and attribute names follow the Jenkins xunit
// junit-10.xsd, which GitHub test-report actions, GitLab and Jenkins all read.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Properties *junitProps     `xml:"properties,omitempty"`
	Cases      []junitCase     `xml:"testcase"`
	SystemOut  *junitTextBlock `xml:"system-out,omitempty"`
}

type junitProps struct {
	Props []junitProp `xml:"property"`
}

type junitProp struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string          `xml:"name,attr"`
	Classname string          `xml:"classname,attr"`
	Time      string          `xml:"time,attr"`
	Skipped   *junitResult    `xml:"skipped,omitempty"`
	Error     *junitResult    `xml:"error,omitempty"`
	Failure   *junitResult    `xml:"failure,omitempty"`
	SystemOut *junitTextBlock `xml:"system-out,omitempty"`
}

type junitResult struct {
	Message string `xml:"message,attr,omitempty"`
	Type    string `xml:"type,attr,omitempty"`
	Body    string `xml:",innerxml"` // escaped by textBody
}

type junitTextBlock struct {
	Body string `xml:",innerxml"` // escaped by textBody
}

// textBody escapes s for element content. encoding/xml's chardata escaping
// writes every newline as "&#xA;", which is valid but turns a multi-line
// message into one unreadable line in the raw file; this keeps newlines and
// tabs literal and escapes the rest exactly as encoding/xml does (including
// replacing characters XML cannot carry with U+FFFD).
func textBody(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // a strings.Builder never fails
	return strings.NewReplacer("&#xA;", "\n", "&#x9;", "\t").Replace(b.String())
}

// WriteJUnit writes junit.xml: a testsuite per stage (named plan/stage); in it
// a testcase per level saying whether the level ran ("throughput / c=32 /
// level ran": an <error> when every request failed) and a testcase per check
// outcome ("throughput / c=32 / ttft p95 under 1.5s"), plus an <error> case
// when the stage itself could not run.
//
// A failed check carries a <failure> whose message is the expression and the
// values it read. A check the `when` clause excluded is <skipped>. A failed
// warn-severity check is a passed testcase with a <system-out> "WARNING" note:
// every CI viewer (GitHub test-report actions, GitLab, Jenkins) renders
// <skipped> as "not run", which would hide that the check did run and read a
// bad value, while a failure would break the build the plan said must not
// break. A pass with the note keeps the counts honest and the text one click
// away.
func WriteJUnit(w io.Writer, r *result.Report) error {
	doc := buildJUnit(r)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("encode junit: %w", err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("encode junit: %w", err)
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	return nil
}

func buildJUnit(r *result.Report) *junitSuites {
	doc := &junitSuites{Name: r.Plan.Name}
	var total float64
	for i := range r.Stages {
		s := buildSuite(r, &r.Stages[i])
		doc.Suites = append(doc.Suites, s.suite)
		doc.Tests += s.suite.Tests
		doc.Failures += s.suite.Failures
		doc.Errors += s.suite.Errors
		doc.Skipped += s.suite.Skipped
		total += s.seconds
	}
	if r.StopReason != "" && r.StopReason != result.StopCompleted {
		// A run that stopped early (Ctrl-C, an endpoint never ready) says so
		// as an error case of its own: without it an interrupted run shows
		// only its finished checks, and a run stopped before its first stage
		// would be an empty, green document.
		body := "stop reason: " + r.StopReason
		for _, w := range r.Warnings {
			body += "\nwarning: " + w
		}
		name := r.Plan.Name + "/run"
		if r.Plan.Name == "" {
			name = "run"
		}
		doc.Suites = append(doc.Suites, junitSuite{
			Name: name, Tests: 1, Errors: 1, Time: seconds(0),
			Properties: &junitProps{Props: []junitProp{{Name: "stop_reason", Value: r.StopReason}}},
			Cases: []junitCase{{
				Name: "run completed", Classname: name, Time: seconds(0),
				Error: &junitResult{Message: "run stopped: " + r.StopReason, Type: "run_" + r.StopReason, Body: textBody(body)},
			}},
		})
		doc.Tests++
		doc.Errors++
	}
	if gate, _ := checks.GateProblem(r); gate != "" {
		// A comparison that gated or judged nothing fails the run without a
		// failed check: say so as a case of its own, or CI shows it green.
		name := r.Plan.Name + "/baseline"
		doc.Suites = append(doc.Suites, junitSuite{
			Name: name, Tests: 1, Failures: 1, Time: seconds(0),
			Cases: []junitCase{{
				Name: "comparison with the baseline", Classname: name, Time: seconds(0),
				Failure: &junitResult{Message: gate, Type: "baseline_gate", Body: textBody(gate)},
			}},
		})
		doc.Tests++
		doc.Failures++
	}
	doc.Time = seconds(total)
	return doc
}

type builtSuite struct {
	suite   junitSuite
	seconds float64
}

func buildSuite(r *result.Report, st *result.Stage) builtSuite {
	class := r.Plan.Name + "/" + st.Name
	if r.Plan.Name == "" {
		class = st.Name
	}
	s := junitSuite{Name: class}
	if !r.StartedAt.IsZero() {
		// No zone suffix: the Ant/windyroad pattern is a bare local-style
		// datetime, and every reader takes it; the value is UTC.
		s.Timestamp = r.StartedAt.UTC().Format("2006-01-02T15:04:05")
	}
	s.Properties = &junitProps{Props: []junitProp{
		{Name: "endpoint", Value: st.Endpoint.Name},
		{Name: "base_url", Value: st.Endpoint.BaseURL},
		{Name: "model", Value: st.Endpoint.Model},
		{Name: "api", Value: st.API},
	}}
	if st.Mode != "" { // an API without output has none
		s.Properties.Props = append(s.Properties.Props, junitProp{Name: "mode", Value: st.Mode})
	}
	s.Properties.Props = append(s.Properties.Props, junitProp{Name: "load", Value: string(st.Load)})
	if sr := st.Search; sr != nil {
		s.Properties.Props = append(s.Properties.Props, junitProp{Name: "search_stop", Value: sr.Stop}, junitProp{Name: "search_probes", Value: strconv.Itoa(sr.Probes)})
	}
	var secs float64
	add := func(c junitCase) {
		s.Cases = append(s.Cases, c)
		s.Tests++
		switch {
		case c.Failure != nil:
			s.Failures++
		case c.Error != nil:
			s.Errors++
		case c.Skipped != nil:
			s.Skipped++
		}
	}
	if st.Error != "" {
		add(junitCase{
			Name: st.Name + " / stage ran", Classname: class, Time: seconds(0),
			Error: &junitResult{Message: oneLine(st.Error), Type: "stage_error", Body: textBody(st.Error)},
		})
	}
	for i := range st.Points {
		p := &st.Points[i]
		secs += finite(p.DurationS)
		c := junitCase{Name: st.Name + " / " + p.Label() + " / level ran", Classname: class, Time: seconds(p.DurationS)}
		switch {
		case checks.Unserved(st, p):
			msg := fmt.Sprintf("every request failed (%d of %d)", p.Failed, p.NRequests)
			if p.Error != nil {
				msg += ": " + oneLine(*p.Error)
			}
			c.Error = &junitResult{Message: msg, Type: "level_error", Body: textBody(levelSummary(p))}
		case checks.Unmeasured(st, p):
			c.Error = &junitResult{Message: "no request was measured", Type: "level_error"}
		case p.NRequests == 0:
			// The stage's error, or the interruption, says why.
			c.Skipped = &junitResult{Message: "no request was measured: the stage stopped before this level sent one"}
		default:
			c.SystemOut = &junitTextBlock{Body: textBody(levelSummary(p))}
		}
		add(c)
	}
	if ss := st.SweepStop; ss != nil {
		for _, label := range ss.Skipped {
			add(junitCase{Name: st.Name + " / " + label + " / level ran", Classname: class, Time: seconds(0),
				Skipped: &junitResult{Message: oneLine("not run: the sweep stopped: " + ss.Text)}})
		}
	}
	for _, c := range searchCases(st, class) {
		add(c)
	}
	for i := range st.Checks {
		add(checkCase(st, &st.Checks[i], class))
	}
	s.Time = seconds(secs)
	return builtSuite{suite: s, seconds: secs}
}

func checkCase(st *result.Stage, c *result.CheckOutcome, class string) junitCase {
	name := st.Name + " / " + c.Name
	if c.Scope != "stage" && (c.LevelLabel != "" || c.Level != nil) {
		name = st.Name + " / " + levelLabel(c) + " / " + c.Name
	}
	jc := junitCase{Name: name, Classname: class, Time: seconds(0)}
	seen := measured(c)
	msg := c.Expr
	if seen != "" {
		msg += " (" + seen + ")"
	}
	body := "expr: " + c.Expr + "\nseverity: " + c.Severity + "\nmeasured: " + formatValues(c.Values)
	if c.Message != "" {
		body += "\nmessage: " + c.Message
	}
	switch c.Status {
	case result.StatusFail:
		jc.Failure = &junitResult{Message: oneLine(msg), Type: "check_failed", Body: textBody(body)}
	case result.StatusSkipped:
		why := c.Message
		if why == "" {
			why = "excluded by the check's when clause"
		}
		jc.Skipped = &junitResult{Message: oneLine(why)}
	case result.StatusWarn:
		jc.SystemOut = &junitTextBlock{Body: textBody("WARNING (severity warn, does not fail the build): " + oneLine(msg) + "\n" + body)}
	case result.StatusUndecided:
		// JUnit has no "undecided": skipped fails nothing, as the status
		// does, and its message says why.
		jc.Skipped = &junitResult{Message: oneLine("UNDECIDED (does not fail the build): " + c.Message)}
	case result.StatusPass:
		if c.Undecided {
			jc.SystemOut = &junitTextBlock{Body: textBody("UNDECIDED, passed on its point value: " + oneLine(msg) + "\n" + body)}
		}
	}
	if c.Undecided && jc.Failure != nil {
		jc.Failure.Type = "check_undecided"
	}
	return jc
}

// searchCases are a capacity search's outcome, a testcase per target
// ("throughput / capacity search / interactive"), each a pass with the
// capacity, the bracket and what was measured there in its <system-out>:
// whether a capacity is good enough is the stage checks' call, and their
// cases fail when it is not.
func searchCases(st *result.Stage, class string) []junitCase {
	sr := st.Search
	if sr == nil {
		return nil
	}
	var out []junitCase
	for _, t := range sr.Targets {
		var b strings.Builder
		fmt.Fprintf(&b, "%s\ntarget: %s\ncapacity: %s (%s)\npassed at: %s\nfailed at: %s", searchLine(sr), t.Expr,
			capacityCell(sr, &t), decisionCell(&t), boundCell(t.Pass), boundCell(t.Fail))
		for _, name := range searchAt {
			if x, ok := t.AtCapacity[name]; ok {
				fmt.Fprintf(&b, "\nat capacity: %s %s", name, strconv.FormatFloat(x, 'f', -1, 64))
			}
		}
		for _, n := range t.Notes {
			b.WriteString("\nnote: " + n)
		}
		out = append(out, junitCase{Name: st.Name + " / capacity search / " + t.Name, Classname: class, Time: seconds(0),
			SystemOut: &junitTextBlock{Body: textBody(b.String())}})
	}
	return out
}

// levelSummary is the headline of a level, for the CI page's detail view.
func levelSummary(p *result.Point) string {
	var b strings.Builder
	fmt.Fprintf(&b, "completed %d, failed %d of %d in %s s\n", p.Completed, p.Failed, p.NRequests, formatFloat(p.DurationS, 3))
	fmt.Fprintf(&b, "output tok/s %s total, %s per stream\n", formatFloat(p.OutputTPSTotal, 2), formatFloat(p.OutputTPSPerStream, 2))
	fmt.Fprintf(&b, "ttft p50 %s ms, p95 %s ms; tpot p50 %s ms; itl p99 %s ms; e2e p95 %s ms",
		ptrCell(p.TTFTP50Ms, 2), ptrCell(p.TTFTP95Ms, 2), ptrCell(p.TPOTP50Ms, 2), ptrCell(p.ITLP99Ms, 2), ptrCell(p.E2EP95Ms, 2))
	if p.Stop != nil {
		b.WriteString("\nstopped: " + p.Stop.Text())
	}
	for _, w := range p.Warnings {
		b.WriteString("\nwarning: " + w)
	}
	return b.String()
}

func ptrCell(v *float64, dp int) string {
	if v == nil {
		return "null"
	}
	return formatFloat(*v, dp)
}

// seconds formats a JUnit time: plain decimal seconds, 3 dp (the xs:decimal and
// surefire patterns both reject exponents, NaN and negatives).
func seconds(s float64) string {
	return strconv.FormatFloat(finite(s), 'f', 3, 64)
}

func finite(s float64) float64 {
	if s != s || s < 0 || s > 1e12 { // NaN, negative, or absurd
		return 0
	}
	return s
}
