package reporters

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

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
// and the Markdown summary so the two always show the same numbers.
type column struct {
	header string
	metric string // the Point's JSON name, matched against Point.LowConfidence
	value  func(p *result.Point) *float64
	dp     int
	scale  float64 // multiply before printing (fractions shown as percent); 0 means 1
	// show reports whether the column applies to a stage; nil means always.
	show func(st *result.Stage) bool
}

func f64(v float64) *float64 { return &v }

func anyPoint(st *result.Stage, has func(p *result.Point) bool) bool {
	for i := range st.Points {
		if has(&st.Points[i]) {
			return true
		}
	}
	return false
}

// columns are the headline metrics, in the order a reader scans them:
// throughput first, then latency as a request experiences it.
var columns = []column{
	{header: "Rate (req/s)", metric: "achieved_rate", dp: 2, value: func(p *result.Point) *float64 { return p.AchievedRate },
		show: func(st *result.Stage) bool { return anyPoint(st, func(p *result.Point) bool { return p.Rate != nil }) }},
	{header: "Out tok/s", metric: "output_tps_total", dp: 2, value: func(p *result.Point) *float64 { return f64(p.OutputTPSTotal) }},
	{header: "Tok/s/stream", metric: "output_tps_per_stream", dp: 2, value: func(p *result.Point) *float64 { return f64(p.OutputTPSPerStream) }},
	{header: "TTFT p50 (ms)", metric: "ttft_p50_ms", dp: 2, value: func(p *result.Point) *float64 { return p.TTFTP50Ms }},
	{header: "TTFT p95 (ms)", metric: "ttft_p95_ms", dp: 2, value: func(p *result.Point) *float64 { return p.TTFTP95Ms }},
	{header: "TPOT p50 (ms)", metric: "tpot_p50_ms", dp: 2, value: func(p *result.Point) *float64 { return p.TPOTP50Ms }},
	{header: "ITL p99 (ms)", metric: "itl_p99_ms", dp: 2, value: func(p *result.Point) *float64 { return p.ITLP99Ms }},
	{header: "E2E p95 (ms)", metric: "e2e_p95_ms", dp: 2, value: func(p *result.Point) *float64 { return p.E2EP95Ms }},
	{header: "Prefill tok/s", metric: "prefill_tps", dp: 1, value: func(p *result.Point) *float64 { return p.PrefillTPS }},
	{header: "Goodput (%)", metric: "goodput", dp: 1, scale: 100, value: func(p *result.Point) *float64 { return p.Goodput },
		show: func(st *result.Stage) bool {
			return anyPoint(st, func(p *result.Point) bool { return p.Goodput != nil })
		}},
	{header: "Spec accept (%)", metric: "spec_acceptance_rate", dp: 1, scale: 100, value: func(p *result.Point) *float64 { return p.SpecAcceptanceRate },
		show: func(st *result.Stage) bool {
			return anyPoint(st, func(p *result.Point) bool { return p.SpecAcceptanceRate != nil })
		}},
	// Shown once the server reports real prefix-cache hits: beside a
	// shared-prefix stage it is the point of the measurement, and beside any
	// other it says the nonce did not defeat caching.
	{header: "Prefix hit (%)", metric: "prefix_cache_hit_rate", dp: 1, scale: 100, value: func(p *result.Point) *float64 { return p.PrefixCacheHitRate },
		show: func(st *result.Stage) bool {
			return anyPoint(st, func(p *result.Point) bool { return p.PrefixCacheHitRate != nil && *p.PrefixCacheHitRate >= 0.01 })
		}},
}

// stageGrid is a stage's metric table as strings: the headers and one row per
// level. Column 0 is the level label, column 1 completed/failed; the rest are
// numbers (right-aligned by both renderers).
type stageGrid struct {
	headers []string
	rows    [][]string
	lowConf bool // some cell carries lowConfMark; print the legend
}

func buildGrid(st *result.Stage) stageGrid {
	var cols []column
	for _, c := range columns {
		if c.show == nil || c.show(st) {
			cols = append(cols, c)
		}
	}
	g := stageGrid{headers: []string{"Level", "OK/Failed"}}
	for _, c := range cols {
		g.headers = append(g.headers, c.header)
	}
	for i := range st.Points {
		p := &st.Points[i]
		row := []string{p.Label(), strconv.Itoa(p.Completed) + "/" + strconv.Itoa(p.Failed)}
		for _, c := range cols {
			cell := nullCell
			if v := c.value(p); v != nil {
				x := *v
				if c.scale != 0 {
					x *= c.scale
				}
				cell = formatFloat(x, c.dp)
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

// allFailed reports whether a level sent requests and none succeeded: the
// level could not run, which CI must see as an error, not as slow numbers.
func allFailed(p *result.Point) bool { return p.NRequests > 0 && p.Completed == 0 }

// tally counts check outcomes and errors over a whole report.
type tally struct {
	pass, fail, warn, skipped int
	stageErrors, levelErrors  int
}

func count(r *result.Report) tally {
	var t tally
	for i := range r.Stages {
		st := &r.Stages[i]
		if st.Error != "" {
			t.stageErrors++
		}
		for j := range st.Points {
			if allFailed(&st.Points[j]) {
				t.levelErrors++
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
			}
		}
	}
	return t
}

// verdictOf is the report's verdict; a report without one (an old or
// hand-made file) gets one derived the way the engine decides it: any failed
// check or any stage that could not run fails the run.
func verdictOf(r *result.Report, t tally) string {
	if r.Verdict != "" {
		return r.Verdict
	}
	if t.fail > 0 || t.stageErrors > 0 || t.levelErrors > 0 {
		return result.StatusFail
	}
	return result.StatusPass
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
	if t.levelErrors > 0 {
		parts = append(parts, plural(t.levelErrors, "level with every request failed", "levels with every request failed"))
	}
	if t.stageErrors > 0 {
		parts = append(parts, plural(t.stageErrors, "stage could not run", "stages could not run"))
	}
	s := strings.Join(parts, ", ")
	if r.StopReason != "" && r.StopReason != result.StopCompleted {
		s += "; stopped: " + r.StopReason
	}
	return s
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
	if st.Mode != "" {
		parts = append(parts, "mode "+st.Mode)
	}
	if st.API != "" {
		parts = append(parts, "api "+st.API)
	}
	if st.Load != "" {
		parts = append(parts, "load "+st.Load)
	}
	s := ep
	if len(parts) > 0 {
		s += " · " + strings.Join(parts, " · ")
	}
	return s
}
