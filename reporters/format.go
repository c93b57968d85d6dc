package reporters

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/runnerbench/runner/checks"
	"github.com/runnerbench/runner/comparison"
	"github.com/runnerbench/runner/protocol"
	"github.com/runnerbench/runner/result"
)

// nullCell is what a metric the run could not produce shows as. An en dash
// rather than "0" or "n/a": zero is a real value and must not be confused
// with "not measured".
const nullCell = "–"

// lowConfMark prefixes a value drawn from too few samples to mean much. A
// prefix (not a suffix) keeps the digits of a right-aligned column lined up,
// and "~44.90" reads as "about 44.90".
const lowConfMark = "~"

// column is one metric column of a stage table, shared by the terminal table
// and the Markdown summary so the two always show the same numbers. Its
// header, unit and value come from the metric catalogue.
type column struct {
	metric string // the catalogue's name
	// show reports whether the column applies to a stage; nil means always.
	show func(st *result.Stage) bool
}

func anyPoint(st *result.Stage, has func(p *result.Point) bool) bool {
	for i := range st.Points {
		if has(&st.Points[i]) {
			return true
		}
	}
	return false
}

// reported shows a column when some level of the stage has the metric.
func reported(metric string) func(st *result.Stage) bool {
	m := mustMetric(metric)
	return func(st *result.Stage) bool {
		return anyPoint(st, func(p *result.Point) bool { _, ok := m.Value(p); return ok })
	}
}

// mustMetric is the catalogue's metric of that name; the columns below name
// only catalogued metrics (a test renders every one).
func mustMetric(name string) *result.Metric {
	m, ok := result.MetricNamed(name)
	if !ok {
		panic("reporters: no metric " + name)
	}
	return m
}

// displayDecimals is how many decimals a table shows of m: one for a share
// shown as a percentage, else the report's rounding up to two.
func displayDecimals(m *result.Metric) int {
	switch {
	case m.Percent():
		return 1
	case m.Decimals < 0:
		return 2
	}
	return min(m.Decimals, 2)
}

// columns are the headline metrics, in the order a reader scans them:
// throughput first, then latency as a request experiences it.
var columns = []column{
	{metric: "achieved_rate", show: reported("rate")},
	// An API answered whole (one that does not stream) has no first token and no
	// output tokens: its throughput is requests and input tokens, its
	// latency the E2E.
	{metric: "request_tps", show: whole},
	{metric: "input_tps_total", show: whole},
	{metric: "mean_inputs_per_request", show: whole},
	{metric: "output_tps_total", show: streamed},
	{metric: "output_tps_per_stream", show: streamed},
	{metric: "ttft_p50_ms", show: streamed},
	{metric: "ttft_p95_ms", show: streamed},
	{metric: "tpot_p50_ms", show: streamed},
	{metric: "itl_p99_ms", show: streamed},
	{metric: "e2e_p50_ms", show: whole},
	{metric: "e2e_p95_ms"},
	{metric: "e2e_p99_ms", show: whole},
	{metric: "prefill_tps", show: streamed},
	// Natural mode's point is where the model stops: its length spread, and
	// how much of it is the max_tokens cap's rather than the model's.
	{metric: "mean_output_tokens", show: natural},
	{metric: "output_token_stdev", show: natural},
	{metric: "max_tokens_hit_rate", show: natural},
	// What an open-loop level held is an outcome worth reading; a closed
	// loop's is its label, shown when a level fell short of it.
	{metric: "max_in_flight", show: inFlightShown},
	{metric: "goodput", show: reported("goodput")},
	// A stage whose users give up: how many did.
	{metric: "cancel_rate", show: reported("cancel_rate")},
	{metric: "tool_call_rate", show: reported("tool_call_rate")},
	{metric: "spec_acceptance_rate", show: reported("spec_acceptance_rate")},
	// Shown once the server reports real prefix-cache hits: beside a
	// shared-prefix stage it is the point of the measurement, and beside any
	// other it says the nonce did not defeat caching.
	{metric: "prefix_cache_hit_rate", show: func(st *result.Stage) bool {
		return anyPoint(st, func(p *result.Point) bool { return p.PrefixCacheHitRate != nil && *p.PrefixCacheHitRate >= 0.01 })
	}},
}

// streamed shows a column on stages whose API streams (an unknown api, as
// a result from another version may name, is taken to).
func streamed(st *result.Stage) bool { return protocol.NameStreams(st.API) }

// whole shows a column on stages whose API answers whole.
func whole(st *result.Stage) bool { return !streamed(st) }

// natural shows a column on natural-mode stages.
func natural(st *result.Stage) bool { return st.Mode == "natural" }

// inFlightShown shows the peak in flight on open-loop stages, and on closed
// loops where some level held fewer requests than its concurrency.
func inFlightShown(st *result.Stage) bool {
	return anyPoint(st, func(p *result.Point) bool {
		return p.MaxInFlight != nil && (p.Rate != nil || *p.MaxInFlight < p.Concurrency)
	})
}

// stageGrid is a stage's metric table as strings: the headers and one row per
// level. Column 0 is the level label, column 1 completed/failed; the rest are
// numbers (right-aligned by both renderers).
type stageGrid struct {
	headers []string
	rows    [][]string
	lowConf bool // some cell carries lowConfMark; print the legend
	// textCols is how many leading columns are text: the label,
	// completed/failed and, on a stage with until:, why each level stopped.
	textCols int
}

func buildGrid(st *result.Stage) stageGrid {
	var cols []column
	for _, c := range columns {
		if c.show == nil || c.show(st) {
			cols = append(cols, c)
		}
	}
	g := stageGrid{headers: []string{"Level", "OK/Failed"}, textCols: 2}
	stops := anyPoint(st, func(p *result.Point) bool { return p.Stop != nil })
	if stops {
		g.headers, g.textCols = append(g.headers, "Stopped"), 3
	}
	for _, c := range cols {
		g.headers = append(g.headers, mustMetric(c.metric).Header())
	}
	for i := range st.Points {
		p := &st.Points[i]
		row := []string{p.Label(), strconv.Itoa(p.Completed) + "/" + strconv.Itoa(p.Failed)}
		if stops {
			row = append(row, p.Stop.Short())
		}
		for _, c := range cols {
			m := mustMetric(c.metric)
			cell := nullCell
			if x, ok := m.Value(p); ok {
				if m.Percent() {
					x *= 100
				}
				cell = formatFloat(x, displayDecimals(m))
				if isLowConf(p, c.metric) {
					cell = lowConfMark + cell
					g.lowConf = true
				}
			}
			row = append(row, cell)
		}
		g.rows = append(g.rows, row)
	}
	return g
}

func isLowConf(p *result.Point, metric string) bool {
	for _, m := range p.LowConfidence {
		if m == metric {
			return true
		}
	}
	return false
}

// formatFloat prints v with dp decimals; NaN and ±Inf (which JSON cannot carry
// and a reporter must not crash on) print as the null cell.
func formatFloat(v float64, dp int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nullCell
	}
	return strconv.FormatFloat(v, 'f', dp, 64)
}

// formatValue prints one measured value a check read: numbers in their
// shortest exact form (the value the check compared, not a rounded one), null
// for a metric the run could not produce.
func formatValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case float32:
		return strconv.FormatFloat(float64(x), 'f', -1, 32)
	case *float64:
		if x == nil {
			return "null"
		}
		return formatValue(*x)
	case string:
		return strconv.Quote(x)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = formatValue(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case []float64:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = formatValue(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	default:
		return fmt.Sprint(x)
	}
}

// formatValues prints a check's measured values as "name=value" sorted by
// name, so the output is deterministic whatever the map order.
func formatValues(m map[string]any) string {
	if len(m) == 0 {
		return ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + formatValue(m[k])
	}
	return strings.Join(parts, ", ")
}

// measured is the "what the check saw" text: its values and, when the engine
// left one, its message (why it was skipped, which metric was null).
func measured(c *result.CheckOutcome) string {
	v := formatValues(c.Values)
	switch {
	case v == "":
		return c.Message
	case c.Message == "":
		return v
	default:
		return v + " (" + c.Message + ")"
	}
}

// levelLabel names the level a check ran on; stage-scope checks read "stage".
func levelLabel(c *result.CheckOutcome) string {
	if c.LevelLabel != "" {
		return c.LevelLabel
	}
	if c.Level != nil {
		return "level " + strconv.Itoa(*c.Level)
	}
	return "stage"
}

// tally counts check outcomes and errors over a whole report.
type tally struct {
	pass, fail, warn, skipped, undecided int
	stageErrors, levelErrors             int
	unmeasured                           int // levels that measured no request, nothing else saying why
}

func count(r *result.Report) tally {
	var t tally
	for i := range r.Stages {
		st := &r.Stages[i]
		if st.Error != "" {
			t.stageErrors++
		}
		for j := range st.Points {
			if checks.Unserved(st, &st.Points[j]) {
				t.levelErrors++
			}
			if r.Shard == nil && checks.Unmeasured(st, &st.Points[j]) {
				t.unmeasured++
			}
		}
		for j := range st.Checks {
			switch st.Checks[j].Status {
			case result.StatusPass:
				t.pass++
			case result.StatusFail:
				t.fail++
			case result.StatusWarn:
				t.warn++
			case result.StatusSkipped:
				t.skipped++
			case result.StatusUndecided:
				t.undecided++
			}
		}
	}
	return t
}

// verdictOf is the report's verdict, as the pipeline decided it; a report
// without one (a hand-made file) gets one decided by the same rule.
func verdictOf(r *result.Report) string {
	if r.Verdict != "" {
		return r.Verdict
	}
	return checks.Verdict(r)
}

// verdictText is the final line's body: "4 passed, 3 failed, ...", shared by the
// terminal and Markdown so both say the same thing.
func verdictText(r *result.Report, t tally) string {
	parts := []string{
		strconv.Itoa(t.pass) + " passed",
		strconv.Itoa(t.fail) + " failed",
		strconv.Itoa(t.warn) + " warned",
		strconv.Itoa(t.skipped) + " skipped",
	}
	if t.undecided > 0 {
		parts = append(parts, strconv.Itoa(t.undecided)+" undecided")
	}
	if t.levelErrors > 0 {
		parts = append(parts, plural(t.levelErrors, "level with every request failed", "levels with every request failed"))
	}
	if t.stageErrors > 0 {
		parts = append(parts, plural(t.stageErrors, "stage could not run", "stages could not run"))
	}
	if t.unmeasured > 0 {
		parts = append(parts, plural(t.unmeasured, "level measured no request", "levels measured no request"))
	}
	s := strings.Join(parts, ", ")
	if r.StopReason != "" && r.StopReason != result.StopCompleted {
		s += "; stopped: " + r.StopReason
	}
	if gate, _ := checks.GateProblem(r); gate != "" {
		s += "; baseline: " + gate
	}
	return s
}

// comparisonLines are the comparison with the baseline as a report shows
// it (nil without one): its headline first, then what was judged worse or
// better, most important first, and a line for the rest.
func comparisonLines(r *result.Report) (headline string, rows []comparison.Finding, rest string) {
	res := comparison.FromReport(r, "")
	if res == nil {
		return "", nil, ""
	}
	rows, left := res.Shown(false)
	return res.Summary.Headline(), rows, comparison.RestLine(left, "runner compare --all")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// statusWord is the upper-case word a person scans for.
func statusWord(s string) string {
	switch s {
	case result.StatusPass:
		return "PASS"
	case result.StatusFail:
		return "FAIL"
	case result.StatusWarn:
		return "WARN"
	case result.StatusSkipped:
		return "SKIP"
	default:
		return strings.ToUpper(s)
	}
}

// stageTitle is the line above a stage's table: what was measured, how.
func stageTitle(st *result.Stage) string {
	ep := st.Endpoint.Name
	var detail []string
	if st.Endpoint.BaseURL != "" {
		detail = append(detail, st.Endpoint.BaseURL)
	}
	if st.Endpoint.Model != "" {
		detail = append(detail, st.Endpoint.Model)
	}
	if st.Endpoint.Simulator {
		detail = append(detail, "simulator")
	}
	if len(detail) > 0 {
		ep += " (" + strings.Join(detail, ", ") + ")"
	}
	var parts []string
	if st.Mode != "" && streamed(st) { // an API without output has no mode (an older report said pinned)
		parts = append(parts, "mode "+st.Mode)
	}
	if st.API != "" {
		parts = append(parts, "api "+st.API)
	}
	if st.Load != "" {
		parts = append(parts, "load "+string(st.Load))
	}
	s := ep
	if len(parts) > 0 {
		s += " · " + strings.Join(parts, " · ")
	}
	return s
}
