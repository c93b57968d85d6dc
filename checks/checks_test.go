package checks

import (
	"strings"
	"testing"

	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
)

func check(t *testing.T, name, src, scope, severity, when string) *scenario.Check {
	t.Helper()
	c := &scenario.Check{Name: name, Expr: src, Scope: scenario.Scope(scope), Severity: scenario.Severity(severity), When: when}
	prog, metrics, err := scenario.CompileCheck(src, scenario.Scope(scope))
	if err != nil {
		t.Fatalf("compile %q: %v", src, err)
	}
	c.Program, c.Metrics, c.Gates = prog, metrics, scenario.GatesOf(prog)
	if when != "" {
		w, _, err := scenario.CompileCheck(when, "level")
		if err != nil {
			t.Fatalf("compile when %q: %v", when, err)
		}
		c.WhenProgram = w
	}
	return c
}

func point(c int, failed int, ttftP95 *float64, tps float64) result.Point {
	return result.Point{Concurrency: c, NRequests: c, Completed: c - failed, Failed: failed, TTFTP95Ms: ttftP95, OutputTPSTotal: tps}
}

func TestEvaluateStage(t *testing.T) {
	res := &result.Stage{Name: "s", Points: []result.Point{
		point(1, 0, result.Ptr(100.0), 50),
		point(4, 1, result.Ptr(900.0), 180),
		point(16, 16, nil, 0),
	}}
	stage := &scenario.Stage{Name: "s", Checks: []*scenario.Check{
		check(t, "no failures", "failed == 0", "level", "fail", ""),
		check(t, "fast", "ttft_p95_ms < 500", "level", "warn", "concurrency <= 4"),
		check(t, "null ttft", "ttft_p95_ms < 5000", "level", "fail", ""),
		check(t, "peak", "max(map(points, .output_tps_total)) >= 150", "stage", "fail", ""),
		check(t, "all fast", "all(points, .ttft_p95_ms < 5000)", "stage", "fail", ""),
	}}
	out := EvaluateStage(stage, res, nil)
	type want struct{ name, label, status, msg string }
	wants := []want{
		{"no failures", "c=1", "pass", ""},
		{"no failures", "c=4", "fail", "expression is false"},
		{"no failures", "c=16", "fail", "expression is false"},
		{"fast", "c=1", "pass", ""},
		{"fast", "c=4", "warn", "expression is false"},
		{"fast", "c=16", "skipped", "is false"},
		{"null ttft", "c=1", "pass", ""},
		{"null ttft", "c=4", "pass", ""},
		{"null ttft", "c=16", "fail", "metric ttft_p95_ms is null"},
		{"peak", "", "pass", ""},
		{"all fast", "", "fail", "metric ttft_p95_ms is null"},
	}
	if len(out) != len(wants) {
		t.Fatalf("got %d outcomes, want %d: %+v", len(out), len(wants), out)
	}
	for i, w := range wants {
		o := out[i]
		if o.Name != w.name || o.LevelLabel != w.label || o.Status != w.status || !strings.Contains(o.Message, w.msg) {
			t.Errorf("outcome %d = {%s %s %s %q}, want %+v", i, o.Name, o.LevelLabel, o.Status, o.Message, w)
		}
		if (o.Scope == "stage") != (o.Level == nil) {
			t.Errorf("outcome %d: scope %s with level %v", i, o.Scope, o.Level)
		}
	}
	if got := out[1].Values["failed"]; got != 1 {
		t.Errorf("values[failed] = %v, want 1", got)
	}
	if got := out[8].Values["ttft_p95_ms"]; got != nil {
		t.Errorf("null metric value = %v, want nil", got)
	}
	if got := out[0].Severity; got != "fail" {
		t.Errorf("severity = %q", got)
	}
	if !Failed(out) {
		t.Error("Failed = false, want true")
	}
	if Failed(out[3:5]) {
		t.Error("a warn outcome must not fail the run")
	}
}

func TestBaseline(t *testing.T) {
	res := &result.Stage{Points: []result.Point{point(1, 0, result.Ptr(100.0), 50), point(8, 0, result.Ptr(300.0), 200)}}
	base := &result.Stage{Points: []result.Point{point(8, 0, result.Ptr(200.0), 210), point(2, 0, nil, 80)}}
	guarded := check(t, "no regression", "baseline == nil || ttft_p95_ms <= baseline.ttft_p95_ms * 1.1", "level", "fail", "")
	stage := &scenario.Stage{Checks: []*scenario.Check{guarded}}

	// Without a baseline the guard holds.
	for _, o := range EvaluateStage(stage, res, nil) {
		if o.Status != result.StatusPass {
			t.Errorf("no baseline: %s = %s %q", o.LevelLabel, o.Status, o.Message)
		}
	}
	// c=1 has no baseline level (pass via guard); c=8 regressed 300 > 220.
	out := EvaluateStage(stage, res, base)
	if out[0].Status != result.StatusPass || out[1].Status != result.StatusFail {
		t.Fatalf("baseline outcomes: %+v", out)
	}
	if got := out[1].Values["baseline.ttft_p95_ms"]; got != 200.0 {
		t.Errorf("baseline value = %v, want 200", got)
	}
	// A matched baseline level whose metric is null fails and names it.
	res2 := &result.Stage{Points: []result.Point{point(2, 0, result.Ptr(100.0), 50)}}
	out = EvaluateStage(stage, res2, base)
	if out[0].Status != result.StatusFail || !strings.Contains(out[0].Message, "baseline.ttft_p95_ms") {
		t.Errorf("null baseline metric: %+v", out[0])
	}
}

func TestRateLabelAndUncompiled(t *testing.T) {
	res := &result.Stage{Points: []result.Point{{Rate: result.Ptr(2.5), NRequests: 3, Completed: 3}}}
	stage := &scenario.Stage{Checks: []*scenario.Check{{Expr: "completed > 0"}}}
	out := EvaluateStage(stage, res, nil)
	if len(out) != 1 || out[0].Status != result.StatusFail || out[0].LevelLabel != "rate=2.5" || out[0].Name != "completed > 0" {
		t.Fatalf("uncompiled check: %+v", out)
	}
}

func TestUnguardedBaseline(t *testing.T) {
	res := &result.Stage{Points: []result.Point{point(1, 0, result.Ptr(100.0), 50)}}
	stage := &scenario.Stage{Checks: []*scenario.Check{check(t, "r", "ttft_p95_ms <= baseline.ttft_p95_ms", "level", "fail", "")}}
	out := EvaluateStage(stage, res, nil)
	if len(out) != 1 || out[0].Status != result.StatusFail || !strings.Contains(out[0].Message, "needs a baseline") {
		t.Errorf("unguarded baseline without one: %+v", out)
	}
}

func TestBaselineStage(t *testing.T) {
	rep := &result.Report{Stages: []result.Stage{{Name: "a"}, {Name: "b"}}}
	if got := BaselineStage(rep, "b"); got == nil || got != &rep.Stages[1] {
		t.Errorf("BaselineStage(b) = %v", got)
	}
	if BaselineStage(rep, "c") != nil || BaselineStage(nil, "a") != nil {
		t.Error("missing stage or report should give nil")
	}
}

func TestInterruptedLevelIsSkipped(t *testing.T) {
	st := &scenario.Stage{Name: "s", Checks: []*scenario.Check{{Name: "no failures", Expr: "failed == 0", Scope: "level", Severity: "fail"}}}
	prog, metrics, err := scenario.CompileCheck(st.Checks[0].Expr, "level")
	if err != nil {
		t.Fatal(err)
	}
	st.Checks[0].Program, st.Checks[0].Metrics = prog, metrics
	res := &result.Stage{Name: "s", Points: []result.Point{
		{Concurrency: 1, NRequests: 4, Completed: 4},
		{Concurrency: 8, NRequests: 8, Completed: 4, Failed: 4, Interrupted: true},
	}}
	out := EvaluateStage(st, res, nil)
	if len(out) != 2 {
		t.Fatalf("got %d outcomes, want 2", len(out))
	}
	if out[0].Status != result.StatusPass {
		t.Errorf("finished level: status %s, want pass", out[0].Status)
	}
	if out[1].Status != result.StatusSkipped || !strings.Contains(out[1].Message, "interrupted") {
		t.Errorf("interrupted level: status %s (%s), want skipped naming the interruption", out[1].Status, out[1].Message)
	}
}

// searchStage is a search stage's result: probes at c=1, 2, 4 and 2 again,
// and its targets' capacities (b decided none).
func searchStage(capA float64) *result.Stage {
	st := &result.Stage{Name: "s", Search: &result.SearchResult{Targets: []result.SearchTarget{
		{Name: "a", Capacity: result.Ptr(capA)}, {Name: "b"},
	}}}
	for i, c := range []int{1, 2, 4, 2} {
		p := point(c, 0, result.Ptr(float64(10*c+i)), float64(100*c))
		p.Probe = i + 1
		st.Points = append(st.Points, p)
	}
	return st
}

// TestCapacityChecks: stage checks read a search's capacities and the
// baseline's; a null one fails and is named, a baseline's only when a
// baseline was given.
func TestCapacityChecks(t *testing.T) {
	stage := &scenario.Stage{Name: "s", Checks: []*scenario.Check{
		check(t, "a", `capacity["a"] >= 24`, "stage", "fail", ""),
		check(t, "b", `capacity["b"] >= 1`, "stage", "fail", ""),
		check(t, "kept", `baseline == nil || capacity["a"] >= 0.9 * baseline.capacity["a"]`, "stage", "fail", ""),
		check(t, "base b", `baseline == nil || baseline.capacity["b"] > 0`, "stage", "fail", ""),
		check(t, "list", `baseline == nil || len(baseline) == len(points)`, "stage", "fail", ""),
	}}
	type want struct{ status, msg string }
	run := func(res, base *result.Stage, wants map[string]want) {
		t.Helper()
		for _, o := range EvaluateStage(stage, res, base) {
			w := wants[o.Name]
			if o.Status != w.status || !strings.Contains(o.Message, w.msg) {
				t.Errorf("%s: %s %q %v, want %s %q", o.Name, o.Status, o.Message, o.Values, w.status, w.msg)
			}
		}
	}
	run(searchStage(32), nil, map[string]want{
		"a": {"pass", ""}, "b": {"fail", `capacity["b"] is null (the search decided no capacity`},
		"kept": {"pass", ""}, "base b": {"pass", ""}, "list": {"pass", ""},
	})
	run(searchStage(20), searchStage(32), map[string]want{
		"a": {"fail", "expression is false"}, "b": {"fail", `capacity["b"] is null`},
		"kept": {"fail", "expression is false"}, "base b": {"fail", `baseline.capacity["b"] is null`}, "list": {"pass", ""},
	})
	// A baseline stage without a search has no capacities: null, by name.
	run(searchStage(32), &result.Stage{Name: "s", Points: []result.Point{point(2, 0, nil, 1)}}, map[string]want{
		"a": {"pass", ""}, "b": {"fail", "is null"}, "kept": {"fail", `baseline.capacity["a"] is null`},
		"base b": {"fail", `baseline.capacity["b"] is null`}, "list": {"fail", "expression is false"},
	})
}

// TestProbeBaseline: a probe's baseline is the baseline's point at the same
// load, the same repeat there, else the last; a listed level's is by label.
func TestProbeBaseline(t *testing.T) {
	res, base := searchStage(1), searchStage(1)
	base.Points = base.Points[:3] // c=1, 2, 4: one probe at c=2
	for i, want := range []int{0, 1, 2, 1} {
		if got := matchLevel(base, res, i); got != &base.Points[want] {
			t.Errorf("probe %d matched %v, want the baseline's point %d", i+1, got, want)
		}
	}
	full := searchStage(1)
	if got := matchLevel(full, res, 3); got != &full.Points[3] {
		t.Errorf("the second probe at c=2 matched %+v, want the baseline's second", got)
	}
	listed := &result.Stage{Points: []result.Point{point(4, 0, nil, 1)}}
	if got := matchLevel(listed, res, 2); got != &listed.Points[0] {
		t.Errorf("a probe at c=4 against a listed c=4: %v", got)
	}
	if got := matchLevel(listed, res, 0); got != nil {
		t.Errorf("a probe at c=1 against a baseline without c=1: %v", got)
	}
	if got := MissingBaselineLevels(listed, res); strings.Join(got, ",") != "probe 1 c=1,probe 2 c=2,probe 4 c=2" {
		t.Errorf("missing: %q", got)
	}
}

// TestSearchProbesThatFailEverything: a probe whose every request failed
// is a search's answer, not a run problem, when another probe was served.
func TestSearchProbesThatFailEverything(t *testing.T) {
	st := searchStage(1)
	st.Points[2] = point(4, 4, nil, 0)
	st.Points[2].Probe = 3
	rep := &result.Report{StopReason: result.StopCompleted, Stages: []result.Stage{*st}}
	if p := RunProblems(rep); len(p) != 0 {
		t.Errorf("run problems %q", p)
	}
	for i := range st.Points {
		st.Points[i].Completed, st.Points[i].Failed = 0, st.Points[i].NRequests
	}
	rep.Stages[0] = *st
	if p := RunProblems(rep); len(p) != 4 {
		t.Errorf("no probe served: run problems %q", p)
	}
}

// TestWorse: worse(metric, pct) reads the level's comparison with the
// baseline: true only for a worse verdict by more than pct; without a
// baseline it fails the check as reading baseline.* does (or passes when
// guarded); a null metric fails and is named; the comparison it read is in
// the outcome's values.
func TestWorse(t *testing.T) {
	cur := point(1, 0, result.Ptr(120.0), 50)
	cur.BaselineComparison = []result.Comparison{
		{Metric: "ttft_p95_ms", Statistic: "p95", Base: result.Ptr(100.0), New: result.Ptr(120.0), Rel: result.Ptr(0.2), Abs: result.Ptr(20.0),
			Interval: &result.Interval{Lo: 0.15, Hi: 0.25}, Verdict: "worse", NBase: 200, NNew: 200, Gated: true},
		{Metric: "output_tps_total", Statistic: "rate", Base: result.Ptr(50.0), New: result.Ptr(50.0), Rel: result.Ptr(0.0), Abs: result.Ptr(0.0), Verdict: "same"},
	}
	base := point(1, 0, result.Ptr(100.0), 50)
	stage := &scenario.Stage{Name: "s", Checks: []*scenario.Check{
		check(t, "ttft 10", `!worse("ttft_p95_ms", 10)`, "level", "fail", ""),
		check(t, "ttft 30", `!worse("ttft_p95_ms", 30)`, "level", "fail", ""),
		check(t, "tps", `!worse("output_tps_total", 0)`, "level", "fail", ""),
		check(t, "guarded", `baseline == nil || !worse("ttft_p95_ms", 10)`, "level", "fail", ""),
		check(t, "null", `!worse("goodput", 10)`, "level", "fail", ""),
	}}
	res := &result.Stage{Name: "s", Points: []result.Point{cur}}
	out := EvaluateStage(stage, res, &result.Stage{Name: "s", Points: []result.Point{base}})
	want := map[string]string{"ttft 10": "fail", "ttft 30": "pass", "tps": "pass", "guarded": "fail", "null": "fail"}
	for _, o := range out {
		if o.Status != want[o.Name] {
			t.Errorf("%s: %s (%s), want %s", o.Name, o.Status, o.Message, want[o.Name])
		}
	}
	if v := out[0].Values["worse(ttft_p95_ms)"]; v != "+20.0% [+15.0%, +25.0%] worse (p95 of 200 and 200 requests)" {
		t.Errorf("value read: %v", v)
	}
	if !strings.Contains(out[4].Message, "metric goodput is null") {
		t.Errorf("null metric: %s", out[4].Message)
	}

	out = EvaluateStage(stage, res, nil)
	if out[0].Status != "fail" || !strings.Contains(out[0].Message, "needs a baseline") {
		t.Errorf("without a baseline: %+v", out[0])
	}
	if out[3].Status != "pass" {
		t.Errorf("guarded, without a baseline: %+v", out[3])
	}
}

// TestInterruptedStageSkipsStageChecks: a stage the run stopped in (inside a
// level, or between two where no level is marked) has its stage-scope checks
// skipped, as an interrupted level's checks are; its finished levels are
// still judged.
func TestInterruptedStageSkipsStageChecks(t *testing.T) {
	stage := &scenario.Stage{Name: "s", Checks: []*scenario.Check{
		check(t, "no failures", "failed == 0", "level", "fail", ""),
		check(t, "throughput grows", "points[1].output_tps_total > points[0].output_tps_total", "stage", "fail", ""),
	}}
	cut := point(4, 0, result.Ptr(100.0), 40)
	cut.Interrupted = true
	for name, res := range map[string]*result.Stage{
		"inside a level": {Name: "s", Points: []result.Point{point(1, 0, result.Ptr(100.0), 50), cut}},
		"between levels": {Name: "s", Interrupted: true, Points: []result.Point{point(1, 0, result.Ptr(100.0), 50), point(4, 0, result.Ptr(100.0), 40)}},
	} {
		out := EvaluateStage(stage, res, nil)
		if len(out) != 3 {
			t.Fatalf("%s: %d outcomes: %+v", name, len(out), out)
		}
		if out[0].Status != result.StatusPass {
			t.Errorf("%s: the finished level's check is %s, want pass", name, out[0].Status)
		}
		if o := out[2]; o.Status != result.StatusSkipped || !strings.Contains(o.Message, "interrupted") {
			t.Errorf("%s: stage check %s %q, want skipped as interrupted", name, o.Status, o.Message)
		}
	}
	whole := &result.Stage{Name: "s", Points: []result.Point{point(1, 0, result.Ptr(100.0), 50), point(4, 0, result.Ptr(100.0), 40)}}
	if o := EvaluateStage(stage, whole, nil)[2]; o.Status != result.StatusFail {
		t.Errorf("a whole stage's failing trend is %s, want fail", o.Status)
	}
}

// TestGateProblem: a comparison with the baseline that gated nothing fails
// the run as bad input; one that judged nothing fails it only with
// --fail-inconclusive; either way the verdict says fail.
func TestGateProblem(t *testing.T) {
	rep := &result.Report{StopReason: result.StopCompleted}
	if msg, _ := GateProblem(rep); msg != "" || Verdict(rep) != result.StatusPass {
		t.Errorf("no baseline: %q %s", msg, Verdict(rep))
	}
	rep.Comparison = &result.ComparisonSummary{NothingGated: "no stage is in both"}
	if msg, invalid := GateProblem(rep); !invalid || msg != "nothing was gated: no stage is in both" || Verdict(rep) != result.StatusFail {
		t.Errorf("nothing gated: %q %v %s", msg, invalid, Verdict(rep))
	}
	rep.Comparison = &result.ComparisonSummary{Gated: 4, Inconclusive: 4, Levels: 2, Family: &result.GateFamily{Source: "default"}}
	if msg, _ := GateProblem(rep); msg != "" || Verdict(rep) != result.StatusPass {
		t.Errorf("judged nothing, without --fail-inconclusive: %q %s", msg, Verdict(rep))
	}
	rep.Comparison.FailInconclusive = true
	if msg, invalid := GateProblem(rep); invalid || !strings.HasPrefix(msg, "--fail-inconclusive: the comparison with the baseline judged nothing: Judged nothing: gated 4") || Verdict(rep) != result.StatusFail {
		t.Errorf("judged nothing, --fail-inconclusive: %q %v %s", msg, invalid, Verdict(rep))
	}
	rep.Comparison.Same = 1
	if msg, _ := GateProblem(rep); msg != "" {
		t.Errorf("judged something: %q", msg)
	}
}

// TestEmptyLevelFailsTheRun: a level that measured no request skips its
// checks (failed == 0 would hold on nothing), so the level itself fails the
// run, unless the stage's error or an interruption already says why, or it
// is one shard's part of a level (a shard may get none of a small level).
func TestEmptyLevelFailsTheRun(t *testing.T) {
	st := &scenario.Stage{Name: "s", Checks: []*scenario.Check{check(t, "no failures", "failed == 0", "level", "fail", "")}}
	res := result.Stage{Name: "s", Points: []result.Point{{Concurrency: 1}}}
	res.Checks = EvaluateStage(st, &res, nil)
	if o := res.Checks[0]; o.Status != result.StatusSkipped || o.Message != NothingMeasured {
		t.Errorf("check on an empty level: %s (%s)", o.Status, o.Message)
	}
	rep := &result.Report{StopReason: result.StopCompleted, Stages: []result.Stage{res}}
	if got := RunProblems(rep); len(got) != 1 || got[0] != "stage s c=1: no request was measured" || Verdict(rep) != result.StatusFail {
		t.Errorf("run problems %q, verdict %s", got, Verdict(rep))
	}
	rep.Stages[0].Error = "api embeddings: ..."
	if got := RunProblems(rep); len(got) != 1 || !strings.HasPrefix(got[0], "stage s: api embeddings") {
		t.Errorf("with the stage's error: %q", got)
	}
	rep.Stages[0].Error = ""
	rep.Shard = &result.Shard{}
	if got := RunProblems(rep); len(got) != 0 {
		t.Errorf("a shard's empty part: %q", got)
	}
}
