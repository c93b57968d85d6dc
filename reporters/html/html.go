// Package html renders a run's result as one self-contained HTML page: the
// verdict, the validity warnings, the checks and the telemetry targets first,
// then per stage the throughput, latency, trade-off, distribution and failure
// charts, and the telemetry over time.
//
// The page fetches nothing: CSS is inline, charts are inline SVG drawn by
// the chart kit (internal/render/chart), and there is no script, so it
// opens from disk, from a CI artifact or from an air-gapped machine alike. Tooltips are SVG <title>
// elements, which every browser shows without script. Light and dark mode
// follow prefers-color-scheme through CSS variables. A Content-Security-Policy
// of default-src 'none' makes the "fetches nothing" promise enforced by the
// browser: any load the page attempted (or a script smuggled in through user
// data) would be blocked and logged, which scripts/html-check.sh fails on.
package html

import (
	"cmp"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/runnerbench/runner/checks"
	"github.com/runnerbench/runner/internal/render/chart"
	"github.com/runnerbench/runner/protocol"
	"github.com/runnerbench/runner/result"
)

//go:embed page.html.tmpl
var pageSrc string

var pageTmpl = template.Must(template.New("page").Parse(pageSrc))

// Write renders r as a self-contained HTML page to w. When baseline is not
// nil, each stage's load curves are drawn beside the baseline's curves of the
// stage with the same name (dashed, labelled "baseline").
func Write(w io.Writer, r *result.Report, baseline *result.Report) error {
	return WriteWith(w, r, Options{Baseline: baseline})
}

// WriteWith renders r as Write does, with what o adds: the baseline's
// curves, the run's telemetry over time.
func WriteWith(w io.Writer, r *result.Report, o Options) error {
	if r == nil {
		return fmt.Errorf("html report: no report to render")
	}
	if err := pageTmpl.Execute(w, buildPage(r, o)); err != nil {
		return fmt.Errorf("html report: %w", err)
	}
	return nil
}

// page is the template's view of a report: every string is plain text (the
// template escapes it) except the charts, which the chart kit escapes itself.
type page struct {
	Title         string
	Plan          result.Plan
	RunnerVersion string
	Started       string
	Ended         string
	Duration      string
	Verdict       string
	StopReason    string
	Baseline      *baselineInfo
	// Gate is the comparison with the baseline's first line (result.ComparisonSummary.Headline).
	Gate     string
	Warnings []warning
	Counts   checkCounts
	Checks   []checkRow
	Stages   []stageView
	// CSS is the charts' and the page colours' style sheet (the kit's).
	CSS template.CSS
	// Labels and Host say what the run is and where it ran (report.json's).
	Labels, Host string
	// Telemetry is each telemetry target's account of the run.
	Telemetry []result.TelemetryStat
}

type baselineInfo struct {
	Path    string
	Plan    string
	Started string
	Runner  string
}

// warning is one validity warning shown at the top: where it applies and what
// it says. Kind picks the icon/colour (warn, error, lowconf, bottleneck).
type warning struct {
	Where string
	Kind  string
	Text  string
}

type checkCounts struct{ Pass, Fail, Warn, Skipped, Undecided, Other int }

type checkRow struct {
	Stage  string
	Name   string
	Level  string
	Scope  string
	Status string
	Values []kv
	// Outcome says what is true of this outcome: held; false, and whether
	// that fails the run or only warns; why it was not judged.
	Outcome string
	Expr    string
}

type kv struct{ K, V string }

type stageView struct {
	Name         string
	Anchor       string
	Endpoint     result.Endpoint
	API          string
	Mode         string
	Load         string
	Trace        [][2]string // a replay's trace, as label and value
	Error        string
	BaselineNote string
	Natural      bool // natural mode: the levels table shows the length spread
	Compare      *cmpView
	Levels       []levelRow
	LowConf      bool              // some cell is marked low-confidence
	Notes        []string          // how numbers were obtained ("c=4: ...")
	Stops        []result.StopNote // why levels of a stage with until: stopped, why its sweep did
	Search       *searchView
	Diagnosis    *diagView
	Charts       []chartView
	Samples      []sampleRow
}

type levelRow struct {
	Label        string
	Requests     int
	InFlight     string
	Completed    int
	Failed       int
	DurationS    string
	TPSTotal     string
	TPSStream    string
	TTFTP50      string
	TTFTP95      string
	TTFTP99      string
	TPOTP50      string
	TPOTP99      string
	ITLP99       string
	E2EP99       string
	Goodput      string
	OutMean      string // natural mode: the length spread
	OutStdev     string
	CutShare     string
	Flags        []string
	FlagsWarning bool
}

type sampleRow struct{ Level, Kind, Count, Message string }

type chartView struct {
	ID     string
	Title  string
	SVG    template.HTML
	Legend template.HTML
	Note   string
}

func buildPage(r *result.Report, o Options) page {
	base := o.Baseline
	p := page{
		Title:         r.Plan.Name,
		Plan:          r.Plan,
		RunnerVersion: r.RunnerVersion,
		Started:       fmtTime(r.StartedAt),
		Ended:         fmtTime(r.EndedAt),
		Verdict:       r.Verdict,
		StopReason:    r.StopReason,
	}
	p.Labels, p.Host, p.Telemetry = r.Labels.String(), r.Host, r.Telemetry
	p.CSS = chart.CSS()
	if p.Title == "" {
		p.Title = "runner report"
	}
	if !r.StartedAt.IsZero() && r.EndedAt.After(r.StartedAt) {
		p.Duration = r.EndedAt.Sub(r.StartedAt).Round(time.Second).String()
	}
	if r.Comparison != nil {
		p.Gate = r.Comparison.Headline()
	}
	if base != nil {
		p.Baseline = &baselineInfo{Path: r.Baseline, Plan: base.Plan.Name, Started: fmtTime(base.StartedAt), Runner: base.RunnerVersion}
	}
	for _, w := range r.Warnings {
		p.Warnings = append(p.Warnings, warning{Where: "run", Kind: "warn", Text: w})
	}
	if r.StopReason != "" && r.StopReason != result.StopCompleted {
		p.Warnings = append(p.Warnings, warning{Where: "run", Kind: "error",
			Text: "the run stopped early (" + r.StopReason + "): the results are partial"})
	}
	anchors := map[string]int{}
	for si := range r.Stages {
		st := &r.Stages[si]
		p.Warnings = append(p.Warnings, stageWarnings(st)...)
		for _, c := range st.Checks {
			p.Checks = append(p.Checks, checkRowOf(st.Name, c))
			switch c.Status {
			case result.StatusPass:
				p.Counts.Pass++
			case result.StatusFail:
				p.Counts.Fail++
			case result.StatusWarn:
				p.Counts.Warn++
			case result.StatusSkipped:
				p.Counts.Skipped++
			case result.StatusUndecided:
				p.Counts.Undecided++
			default:
				p.Counts.Other++
			}
		}
		var bst *result.Stage
		note := ""
		if base != nil {
			if bst = base.StageNamed(st.Name); bst == nil {
				note = "The baseline has no stage named “" + st.Name + "”; no baseline curves for this stage."
			}
		}
		sv := buildStage(st, bst, anchor(st.Name, si, anchors), o.Telemetry)
		sv.BaselineNote = note
		sv.Compare = comparisonOf(r, st)
		p.Stages = append(p.Stages, sv)
	}
	return p
}

// anchor makes a unique, id-safe fragment name for a stage (names are user
// data and may repeat or hold any character).
func anchor(name string, i int, seen map[string]int) string {
	var b strings.Builder
	b.WriteString("stage-")
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	a := b.String()
	if seen[a]++; seen[a] > 1 {
		a += "-" + strconv.Itoa(i)
	}
	return a
}

// stageWarnings lists what makes a stage's numbers wrong or partial: its
// error, its warnings, and per level an interruption, a client bottleneck
// and the level's validity warnings (the nonce did not defeat the cache, the
// engine did not hold the pinned length, fewer in flight than labelled).
func stageWarnings(st *result.Stage) []warning {
	var ws []warning
	where := "stage " + st.Name
	if st.Error != "" {
		ws = append(ws, warning{Where: where, Kind: "error", Text: st.Error})
	}
	for _, w := range st.Warnings {
		ws = append(ws, warning{Where: where, Kind: "warn", Text: w})
	}
	for i := range st.Points {
		pt := &st.Points[i]
		lw := where + ", " + pt.Label()
		if pt.Interrupted {
			ws = append(ws, warning{Where: lw, Kind: "error", Text: "level interrupted: its numbers cover part of the planned window"})
		}
		if hint := checks.FailureHint(st, pt); hint != "" {
			ws = append(ws, warning{Where: lw, Kind: "error", Text: "every request failed: " + hint})
		}
		if pt.ClientBottleneck {
			t := "the load generator, not the server, may have limited this level"
			if by := bottleneckSignals(pt, true); by != "" {
				t += ": raised by " + by
			}
			ws = append(ws, warning{Where: lw, Kind: "bottleneck", Text: t})
		}
		// Low confidence and notes are not here: they say how sure or how
		// obtained a number is, not that it is wrong, and are marked quietly
		// in the level table. An ignore_eos mismatch is among the warnings.
		for _, w := range pt.Warnings {
			ws = append(ws, warning{Where: lw, Kind: "warn", Text: w})
		}
	}
	return ws
}

func checkRowOf(stage string, c result.CheckOutcome) checkRow {
	row := checkRow{Stage: stage, Name: c.Name, Level: c.LevelLabel, Scope: c.Scope,
		Status: c.Status, Outcome: outcome(c), Expr: c.Expr}
	if row.Level == "" && c.Scope == "stage" {
		row.Level = "(stage)"
	}
	row.Values = sortedKV(c.Values, anyString)
	return row
}

// outcome says what is true of a check's outcome: a passing check held (its
// severity, what a failure would have done, is beside the point); a failed
// one was false, or could not be judged true (a null, an error), and fails
// the run; a warning is the same with severity warn, and does not fail it;
// a skipped one was not judged, and why.
func outcome(c result.CheckOutcome) string {
	why := c.Message
	if why == "expression is false" {
		why = "false"
	}
	switch c.Status {
	case result.StatusPass:
		return "held"
	case result.StatusFail:
		return join(why, "fails the run")
	case result.StatusWarn:
		return join(why, "warns only (severity warn), the run does not fail on it")
	case result.StatusSkipped:
		return join("not judged", why)
	}
	return why
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + ": " + b
}

// sortedKV lists a map's entries in key order, each value shown by show.
func sortedKV[V any](m map[string]V, show func(V) string) []kv {
	var out []kv
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, kv{K: k, V: show(m[k])})
	}
	return out
}

// anyString prints a value a check read. Values come from JSON (float64,
// bool, string, nil) or straight from the engine (typed pointers for the
// nullable metrics); a nil of any kind is "null", as in report.json.
func anyString(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case float64:
		return chart.Num(x)
	case float32:
		return chart.Num(float64(x))
	case *float64:
		if x == nil {
			return "null"
		}
		return chart.Num(*x)
	case *int64:
		if x == nil {
			return "null"
		}
		return strconv.FormatInt(*x, 10)
	case *int:
		if x == nil {
			return "null"
		}
		return strconv.Itoa(*x)
	case *string:
		if x == nil {
			return "null"
		}
		return *x
	default:
		return fmt.Sprint(x)
	}
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// fmtPtr shows a nullable metric: the number as stored, or an em dash.
func fmtPtr(p *float64) string {
	if p == nil || !chart.Finite(*p) {
		return "—"
	}
	return chart.Num(*p)
}

// loadX is a level's position on the load axis: its concurrency, its
// users for a users stage, or its target rate for an open-loop stage.
func loadX(st *result.Stage, p *result.Point) (float64, bool) {
	switch {
	case isRate(st):
		if p.Rate != nil {
			return *p.Rate, true
		}
		return 0, false
	case st.Load == result.LoadUsers:
		return float64(p.Users), p.Users > 0
	}
	return float64(p.Concurrency), p.Concurrency > 0
}

func isRate(st *result.Stage) bool {
	if st.Load == result.LoadRate {
		return true
	}
	if st.Load == result.LoadConcurrency {
		return false
	}
	return len(st.Points) > 0 && st.Points[0].Rate != nil
}

func loadLabel(st *result.Stage) string {
	switch {
	case isRate(st):
		return "target rate (requests/s)"
	case st.Load == result.LoadUsers:
		return "users (each one conversation at a time)"
	}
	return "concurrency (requests in flight)"
}

// metric picks one nullable value from a point.
type metric struct {
	name  string // shown in legends and tooltips
	unit  string
	color int
	get   func(*result.Point) *float64
}

// loadSeries builds one series of metric m against load for the points of a
// stage; prefix labels baseline tooltips.
func loadSeries(st *result.Stage, m metric, dashed bool) chart.Series {
	s := chart.Series{Name: m.name, Color: m.color, Dashed: dashed}
	prefix := ""
	if dashed {
		s.Name = "baseline " + m.name
		prefix = "baseline "
	}
	for i := range st.Points {
		pt := &st.Points[i]
		x, ok := loadX(st, pt)
		if !ok {
			continue
		}
		y := m.get(pt)
		tip := prefix + pt.Label() + " · " + m.name + ": "
		if y == nil {
			tip += "null"
		} else {
			tip += chart.Num(*y) + " " + m.unit
		}
		s.Points = append(s.Points, chart.Point{X: x, Y: y, Tip: tip})
	}
	return s
}

// chartStage is st with only the points the load charts should draw: a
// multi-turn stage may hold per-turn points (Turn > 0) beside each level's
// aggregate, and mixing them would zigzag the curves. They stay in the table.
// A search's probes ran in search order; the curves take them in load order
// (probe order among repeats, which show as a vertical run at their load).
func chartStage(st *result.Stage) *result.Stage {
	if st == nil {
		return nil
	}
	var agg []result.Point
	for _, p := range st.Points {
		if !p.Part() {
			agg = append(agg, p)
		}
	}
	if st.Search != nil {
		slices.SortStableFunc(agg, func(a, b result.Point) int {
			x, _ := loadX(st, &a)
			y, _ := loadX(st, &b)
			return cmp.Compare(x, y)
		})
	} else if len(agg) == 0 || len(agg) == len(st.Points) {
		return st
	}
	c := *st
	c.Points = agg
	return &c
}

func loadChart(id string, st, bst *result.Stage, ylabel string, ms []metric) chart.Line {
	c := chart.Line{ID: id, X: chart.Axis{Label: loadLabel(st), Scale: chart.LogAuto, Ints: !isRate(st)}, Y: chart.Axis{Label: ylabel}}
	for _, m := range ms {
		c.Series = append(c.Series, loadSeries(st, m, false))
	}
	if bst != nil {
		for _, m := range ms {
			c.Series = append(c.Series, loadSeries(bst, m, true))
		}
	}
	return c
}

func buildStage(st, bst *result.Stage, anchor string, tel *Telemetry) stageView {
	sv := stageView{Name: st.Name, Anchor: anchor, Endpoint: st.Endpoint, API: st.API, Mode: st.Mode,
		Load: string(st.Load), Error: st.Error, Natural: st.Mode == "natural"}
	if !protocol.NameStreams(st.API) {
		sv.Mode = "" // an API without output has no mode (an earlier report's "pinned" said nothing)
	}
	if st.Trace != nil {
		sv.Trace = st.Trace.Facts()
	}
	for i := range st.Points {
		p := &st.Points[i]
		sv.Levels = append(sv.Levels, levelRowOf(p))
		sv.LowConf = sv.LowConf || len(p.LowConfidence) > 0
		for _, n := range p.Notes {
			sv.Notes = append(sv.Notes, p.Label()+": "+n)
		}
	}
	sv.Stops = st.StopNotes()
	sv.Search = buildSearch(st)
	sv.Charts = searchCharts(st, anchor)
	orig := st
	st, bst = chartStage(st), chartStage(bst)
	sv.Diagnosis = buildDiagnosis(st, anchor, orig.Diagnosis)
	add := func(title string, c chart.Line, id string) {
		sv.Charts = append(sv.Charts, lineView(id, title, st.Name, c))
	}

	id := anchor + "-throughput"
	add("Output throughput vs load", loadChart(id, st, bst, "output tokens/s (all streams)", []metric{
		{"output tok/s", "tok/s", 0, func(p *result.Point) *float64 { return chart.F(p.OutputTPSTotal) }},
	}), id)
	id = anchor + "-ttft"
	add("Time to first token vs load", loadChart(id, st, bst, "TTFT (ms)", []metric{
		{"TTFT p50", "ms", 0, func(p *result.Point) *float64 { return p.TTFTP50Ms }},
		{"TTFT p95", "ms", 1, func(p *result.Point) *float64 { return p.TTFTP95Ms }},
		{"TTFT p99", "ms", 2, func(p *result.Point) *float64 { return p.TTFTP99Ms }},
	}), id)
	id = anchor + "-tpot"
	add("Time per output token vs load", loadChart(id, st, bst, "TPOT (ms/token)", []metric{
		{"TPOT p50", "ms", 0, func(p *result.Point) *float64 { return p.TPOTP50Ms }},
		{"TPOT p99", "ms", 2, func(p *result.Point) *float64 { return p.TPOTP99Ms }},
	}), id)
	id = anchor + "-tradeoff"
	add("Per-stream vs total throughput", tradeoffChart(id, st, bst), id)
	id = anchor + "-ttft-dist"
	add("TTFT distribution per level", distChart(id, st, "TTFT", func(p *result.Point) []result.Bucket { return p.TTFTHist }), id)
	id = anchor + "-itl-dist"
	add("Inter-token latency distribution per level", distChart(id, st, "ITL", func(p *result.Point) []result.Bucket { return p.ITLHist }), id)

	id = anchor + "-failures"
	fc, total := failureChart(id, st)
	if total == 0 {
		sv.Charts = append(sv.Charts, chartView{ID: id, Title: "Failures by kind", Note: "No failed requests."})
	} else {
		fc.Title = st.Name + ": Failures by kind"
		sv.Charts = append(sv.Charts, chartView{ID: id, Title: "Failures by kind", SVG: fc.SVG(), Legend: fc.Legend()})
	}
	sliced, sliceNote := sliceCharts(orig, anchor)
	sv.Charts = append(sv.Charts, sliced...)
	sv.Notes = append(sv.Notes, sliceNotes(orig)...)
	sv.Notes = append(sv.Notes, sliceNote...)
	tc, tn := telemetryCharts(orig, anchor, tel, len(sliced) > 0)
	sv.Charts = append(sv.Charts, tc...)
	sv.Notes = append(sv.Notes, tn...)
	sv.Samples = samples(st)
	return sv
}

// lineView is a line chart as the page shows it: its caption, its SVG
// (titled with the stage's name for assistive technology) and its legend.
func lineView(id, title, stage string, c chart.Line) chartView {
	c.Title = stage + ": " + title
	return chartView{ID: id, Title: title, SVG: c.SVG(), Legend: c.Legend()}
}

func levelRowOf(p *result.Point) levelRow {
	label := p.Label()
	// cell shows a latency, marked "~" when drawn from too few samples: a
	// quiet mark, as in the terminal table, not a warning.
	cell := func(name string, v *float64) string {
		s := fmtPtr(v)
		if v != nil && slices.Contains(p.LowConfidence, name) {
			s = lowConfMark + s
		}
		return s
	}
	row := levelRow{
		Label: label, Requests: p.NRequests, Completed: p.Completed, Failed: p.Failed, InFlight: "—",
		DurationS: chart.Num(p.DurationS), TPSTotal: chart.Num(p.OutputTPSTotal), TPSStream: chart.Num(p.OutputTPSPerStream),
		TTFTP50: cell("ttft_p50_ms", p.TTFTP50Ms), TTFTP95: cell("ttft_p95_ms", p.TTFTP95Ms), TTFTP99: cell("ttft_p99_ms", p.TTFTP99Ms),
		TPOTP50: cell("tpot_p50_ms", p.TPOTP50Ms), TPOTP99: cell("tpot_p99_ms", p.TPOTP99Ms), ITLP99: cell("itl_p99_ms", p.ITLP99Ms),
		E2EP99: cell("e2e_p99_ms", p.E2EP99Ms), Goodput: percent(p.Goodput),
		OutMean: fmtPtr(p.MeanOutputTokens), OutStdev: fmtPtr(p.OutputTokenStdev), CutShare: percent(p.MaxTokensHitRate),
	}
	if p.MaxInFlight != nil {
		row.InFlight = strconv.Itoa(*p.MaxInFlight)
	}
	if p.Interrupted {
		row.Flags = append(row.Flags, "interrupted")
	}
	if p.ClientBottleneck {
		f := "client bottleneck"
		if by := bottleneckSignals(p, false); by != "" {
			f += " (" + by + ")"
		}
		row.Flags = append(row.Flags, f)
	}
	if p.MaxInFlight != nil && p.Rate == nil && *p.MaxInFlight < p.Concurrency && p.Completed > 0 && !p.Interrupted {
		row.Flags = append(row.Flags, "fewer in flight than labelled")
	}
	if p.Steady != nil && !*p.Steady {
		row.Flags = append(row.Flags, "not steady across its slices")
	}
	row.FlagsWarning = len(row.Flags) > 0
	return row
}

// lowConfMark prefixes a value drawn from too few samples to mean much.
const lowConfMark = "~"

// percent shows a share as a percentage with one decimal, or an em dash.
func percent(v *float64) string {
	if v == nil || !chart.Finite(*v) {
		return "—"
	}
	return chart.Num(result.Round(*v*100, 1)) + "%"
}

// tradeoffChart plots per-stream tok/s against total tok/s, one point per
// level, joined in level order: the curve a capacity planner reads to pick a
// concurrency that keeps each user fast enough.
func tradeoffChart(id string, st, bst *result.Stage) chart.Line {
	c := chart.Line{ID: id, X: chart.Axis{Label: "output tokens/s (all streams)"}, Y: chart.Axis{Label: "output tokens/s per stream"}}
	mk := func(s *result.Stage, dashed bool) chart.Series {
		se := chart.Series{Name: "levels", Color: 3, Dashed: dashed}
		prefix := ""
		if dashed {
			se.Name, prefix = "baseline levels", "baseline "
		}
		for i := range s.Points {
			p := &s.Points[i]
			if p.Completed == 0 {
				// No stream finished: there is no per-stream rate to
				// plot, and a point at (0, 0) would read as a measurement.
				continue
			}
			se.Points = append(se.Points, chart.Point{X: p.OutputTPSTotal, Y: chart.F(p.OutputTPSPerStream),
				Tip: prefix + p.Label() + " · total " + chart.Num(p.OutputTPSTotal) + " tok/s · per stream " + chart.Num(p.OutputTPSPerStream) + " tok/s"})
		}
		return se
	}
	c.Series = append(c.Series, mk(st, false))
	if bst != nil {
		c.Series = append(c.Series, mk(bst, true))
	}
	return c
}

// distChart draws each level's latency histogram as a cumulative share of
// requests at or below each bucket's upper bound. Curves of all levels share
// one axis, so the shift of the tail with load is read at a glance; a raw
// histogram per level would need one chart each and hide that shift.
func distChart(id string, st *result.Stage, xlabel string, hist func(*result.Point) []result.Bucket) chart.Line {
	c := chart.Line{ID: id, X: chart.Axis{Label: xlabel, Scale: chart.Log, Ms: true}, Y: chart.Axis{Label: "requests at or below (%)", Max: 100}}
	if strings.HasPrefix(xlabel, "ITL") {
		c.Y.Label = "token gaps at or below (%)"
	}
	for i := range st.Points {
		p := &st.Points[i]
		bs := hist(p)
		var total int64
		for _, b := range bs {
			if b.Count > 0 {
				total += b.Count
			}
		}
		if total == 0 {
			continue
		}
		s := chart.Series{Name: p.Label(), Color: i}
		var cum int64
		for j, b := range bs {
			if b.Count > 0 {
				cum += b.Count
			}
			// Leading empty buckets add nothing but the last one (the 0%
			// anchor); buckets after the last sample are flat at 100%.
			if cum == 0 && j+1 < len(bs) && bs[j+1].Count == 0 {
				continue
			}
			if !chart.Finite(b.UpperMs) || b.UpperMs <= 0 {
				continue
			}
			pct := float64(cum) * 100 / float64(total)
			s.Points = append(s.Points, chart.Point{X: b.UpperMs, Y: chart.F(result.Round(pct, 2)), Plain: b.Count <= 0,
				Tip: fmt.Sprintf("%s · ≤ %s ms: %d in bucket, %s%% cumulative", p.Label(), chart.Num(b.UpperMs), b.Count, chart.Num(result.Round(pct, 2)))})
			if cum == total {
				break
			}
		}
		c.Series = append(c.Series, s)
	}
	return c
}

// failureChart stacks each level's failed requests by kind.
func failureChart(id string, st *result.Stage) (chart.Bars, int) {
	c := chart.Bars{ID: id, XLabel: "level", YLabel: "failed requests"}
	kinds := map[string]bool{}
	total := 0
	for i := range st.Points {
		c.Categories = append(c.Categories, st.Points[i].Label())
		for k, n := range st.Points[i].ErrorsByKind {
			if n > 0 {
				kinds[k] = true
				total += n
			}
		}
	}
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	sort.Strings(names)
	for ki, k := range names {
		s := chart.Stack{Name: k, Color: ki}
		for i := range st.Points {
			p := &st.Points[i]
			n := p.ErrorsByKind[k]
			s.Values = append(s.Values, float64(n))
			tip := p.Label() + " · " + k + ": " + strconv.Itoa(n) + " of " + strconv.Itoa(p.NRequests) + " requests"
			if msg := p.ErrorSamples[k]; msg != "" {
				tip += " — " + msg
			}
			s.Tips = append(s.Tips, tip)
		}
		c.Stacks = append(c.Stacks, s)
	}
	return c, total
}

// samples lists one sample error message per level and kind, so the reader
// sees what "http_429" or "truncated" looked like.
func samples(st *result.Stage) []sampleRow {
	var rows []sampleRow
	for i := range st.Points {
		p := &st.Points[i]
		kinds := make([]string, 0, len(p.ErrorsByKind))
		for k, n := range p.ErrorsByKind {
			if n > 0 {
				kinds = append(kinds, k)
			}
		}
		sort.Strings(kinds)
		for _, k := range kinds {
			rows = append(rows, sampleRow{Level: p.Label(), Kind: k, Count: strconv.Itoa(p.ErrorsByKind[k]), Message: p.ErrorSamples[k]})
		}
	}
	return rows
}

// bottleneckSignals names the signals that flagged the level's client, by
// their catalogue titles, with their values when withValues ("Lag p99
// 2.74 ms"): the flag says what raised it, never a signal that did not.
func bottleneckSignals(p *result.Point, withValues bool) string {
	var out []string
	for _, name := range p.ClientBottleneckBy {
		m, ok := result.MetricNamed(name)
		if !ok {
			out = append(out, name)
			continue
		}
		s := m.Title
		if v, ok := m.Value(p); ok && withValues {
			switch m.Unit {
			case "ms":
				s += " " + result.FormatMs(v)
			case "%":
				s += " " + chart.Num(result.Round(v, 1)) + "% of one core"
			default:
				s += " " + chart.Num(v)
			}
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}
