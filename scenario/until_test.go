package scenario

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

const untilPlan = `version: 1
name: t
endpoints:
  sim:
    simulator: {ttft_ms: 5}
prompts:
  p: {synthetic: {input_tokens: 32}}
stages:
  - name: s
    endpoint: sim
    prompts: p
    concurrency: [1, 4, 8]
    checks:
      - {name: fast, expr: ttft_p95_ms < 500}
      - {name: ok, expr: failed == 0}
`

// TestUntilLoads: a stage's until, caps and settings reach its load plan
// and its UntilPlan, with the defaults; a per-level list is one rule a
// level, fixed where the plan says.
func TestUntilLoads(t *testing.T) {
	p := mustLoad(t, untilPlan+"    until: decided\n    max_requests: 400\n    max_duration: 30s\n", env())
	st := p.Stages[0]
	u := st.UntilPlan()
	if u == nil || u.Confidence != DefaultConfidence || u.Undecided != UndecidedPoint || !u.HasUntil() {
		t.Fatalf("until plan %+v", u)
	}
	lp := p.LoadPlan(st)
	if lp.MaxRequests.At(2) != 400 || lp.MaxDuration != 30*time.Second || !lp.UntilAt(1).Decided {
		t.Errorf("load plan: max %v, %v, rule %v", lp.MaxRequests, lp.MaxDuration, lp.UntilAt(1))
	}

	// requests is the fixed level's: fewer than the other levels' streams
	// is no mistake.
	p = mustLoad(t, untilPlan+"    until: [fixed, ttft_p95_ms within 5%, decided]\n    requests: 2\n    max_requests: [10, 500, 800]\n    min_requests: [1, 40, 40]\n    confidence: 0.99\n    undecided: undecided\n", env())
	u = p.Stages[0].UntilPlan()
	for i, want := range []string{"fixed", "ttft_p95_ms within 5%", "decided"} {
		if got := u.RuleAt(i).String(); got != want {
			t.Errorf("level %d: rule %q, want %q", i, got, want)
		}
	}
	if r := u.RuleAt(1); r.Metric != "ttft_p95_ms" || r.Within != 0.05 {
		t.Errorf("within: %+v", r)
	}
	if u.Confidence != 0.99 || u.Undecided != UndecidedStatus {
		t.Errorf("settings: %+v", u)
	}
	// Recorded with the stage as JSON, and read back the same.
	b, _ := json.Marshal(u)
	var back UntilPlan
	if err := json.Unmarshal(b, &back); err != nil || back.RuleAt(1) != u.RuleAt(1) || back.MaxRequests.At(2) != 800 || back.Undecided != u.Undecided {
		t.Errorf("JSON round trip %s: %+v %v", b, back, err)
	}
	if plain := mustLoad(t, untilPlan, env()); plain.Stages[0].UntilPlan() != nil {
		t.Error("a stage without until has an until plan")
	}
}

// TestUntilErrors: every mistake is one error at its line and column.
func TestUntilErrors(t *testing.T) {
	cases := []struct{ add, at, want string }{
		{"    until: decided\n", "plan.yaml:16:", "until needs a cap: give max_requests or max_duration"},
		{"    until: soon\n    max_requests: 100\n", "plan.yaml:16:", `"soon" is not a rule`},
		{"    until: ttft_p95_ms within 0%\n    max_requests: 100\n", "plan.yaml:16:", "precision must be above 0%"},
		{"    until: ttft_p59_ms within 5%\n    max_requests: 100\n", "plan.yaml:16:", `unknown metric "ttft_p59_ms" (did you mean`},
		{"    until: output_tps_total within 5%\n    max_requests: 100\n", "plan.yaml:16:", "output_tps_total is a rate over the level's measured window"},
		{"    until: itl_p50_ms within 5%\n    max_requests: 100\n", "plan.yaml:16:", "a distribution of token gaps"},
		{"    until: failed within 5%\n    max_requests: 100\n", "plan.yaml:16:", "a count or setting of what the level sent"},
		{"    until: ttft_mean_ms within 5%\n    max_requests: 100\n", "plan.yaml:16:", "ttft_mean_ms is a mean, which one stalled request can move anywhere"},
		{"    until: [decided, decided]\n    max_requests: 100\n", "plan.yaml:16:", "until lists 2 rules for the 3 levels"},
		{"    until: [decided, soon, decided]\n    max_requests: 100\n", "plan.yaml:16:", `until[1]: "soon" is not a rule`},
		{"    until: fixed\n    max_requests: 100\n", "plan.yaml:16:", "fixed applies to one level of a list"},
		{"    until: [fixed, fixed, fixed]\n    max_requests: 100\n", "plan.yaml:16:", "every level is fixed"},
		{"    until: decided\n    requests: 50\n    max_requests: 100\n", "plan.yaml:17:", "requests is a fixed level's"},
		{"    until: decided\n    duration: 5s\n    max_requests: 100\n", "plan.yaml:17:", "duration is a fixed level's"},
		{"    until: decided\n    max_requests: 6\n", "plan.yaml:17:", "max_requests (6) cannot keep 8 in flight at c=8"},
		{"    until: decided\n    max_requests: 100\n    min_requests: 200\n", "plan.yaml:18:", "min_requests (200) is above max_requests (100)"},
		{"    until: decided\n    max_requests: 100\n    min_requests: 2\n", "plan.yaml:18:", "min_requests (2) is below c=4's concurrency"},
		{"    until: decided\n    max_requests: [100, 200]\n", "plan.yaml:17:", "max_requests lists 2 counts for 3 levels"},
		{"    until: decided\n    max_requests: 100\n    confidence: 1\n", "plan.yaml:18:", "confidence must be between 0.5 and 0.9999"},
		{"    until: decided\n    max_requests: 100\n    undecided: maybe\n", "plan.yaml:18:", `"maybe" is not one of point, undecided, fail`},
		{"    until: decided\n    max_requests: 100\n    replicates: 2\n", "plan.yaml:16:", "until and replicates do not go together"},
		{"    max_requests: 100\n", "plan.yaml:16:", "max_requests applies to levels that run until"},
		{"    confidence: 0.9\n", "plan.yaml:16:", "confidence is the intervals' of until: and stop_at_saturation"},
		{"    until: [decided, decided, decided, decided]\n    max_requests: 100\n", "plan.yaml:16:", "until lists 4 rules"},
		{"    until: {rule: decided}\n    max_requests: 100\n", "plan.yaml:16:", "expected a rule (decided, or METRIC within P%) or a list of one rule per level, got a mapping"},
		{"    until: decided\n    max_requests: {n: 1}\n", "plan.yaml:17:", "expected a count or a list of one count per level, got a mapping"},
	}
	for _, c := range cases {
		_, err := load(t, untilPlan+c.add, env())
		if err == nil || !strings.Contains(err.Error(), c.at) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v\nwant %s… %s", strings.TrimSpace(c.add), err, c.at, c.want)
		}
	}
}

// TestUntilNeedsADecidableCheck: until decided waits for checks, so a
// stage whose checks an interval cannot decide is refused, naming them.
func TestUntilNeedsADecidableCheck(t *testing.T) {
	base := strings.Split(untilPlan, "    checks:")[0]
	_, err := load(t, base+"    until: decided\n    max_requests: 100\n", env())
	if err == nil || !strings.Contains(err.Error(), "plan.yaml:13:") || !strings.Contains(err.Error(), "the stage has no level-scope check") {
		t.Errorf("no checks: %v", err)
	}
	_, err = load(t, base+"    until: decided\n    max_requests: 100\n    checks:\n      - {name: ok, expr: failed == 0}\n      - {name: peak, expr: output_tps_total > 10}\n", env())
	if err == nil || !strings.Contains(err.Error(), "none of the stage's does: ok (failed == 0), peak (output_tps_total > 10)") {
		t.Errorf("no decidable check: %v", err)
	}
	// A precision needs no check.
	mustLoad(t, base+"    until: e2e_p50_ms within 10%\n    max_requests: 100\n", env())
}

// TestDecidable: which checks an until level waits for.
func TestDecidable(t *testing.T) {
	cases := []struct {
		expr, when string
		holds      bool
	}{
		{"ttft_p95_ms < 500", "", true},
		{"failed == 0 && ttft_p95_ms < 500", "concurrency <= 8", true},
		{"goodput >= 0.95", "", true},
		{"error_rate < 0.01", "", true},
		{"tpot_mean_ms < 20", "", false}, // a mean has no interval across looks
		{"failed == 0", "", false},
		{"ttft_p95_ms < 500 && output_tps_total > 10", "", false},
		{"ttft_p95_ms < 500", "ttft_p50_ms > 10", false},
		{"baseline == nil || ttft_p95_ms < baseline.ttft_p95_ms", "", false},
	}
	for _, c := range cases {
		ch := &Check{Expr: c.expr, When: c.when}
		if err := ch.Compile(); err != nil {
			t.Fatal(err)
		}
		if got := Decidable(ch); got != c.holds {
			t.Errorf("%s (when %q): decidable %v, want %v", c.expr, c.when, got, c.holds)
		}
	}
}

// TestStopAtSaturation: a sweep of two or more listed levels may stop at
// saturation; a single level or a search may not.
func TestStopAtSaturation(t *testing.T) {
	p := mustLoad(t, untilPlan+"    stop_at_saturation: true\n", env())
	if u := p.Stages[0].UntilPlan(); u == nil || !u.StopAtSaturation || u.HasUntil() || u.Confidence != DefaultConfidence {
		t.Errorf("until plan %+v", u)
	}
	one := strings.Replace(untilPlan, "concurrency: [1, 4, 8]", "concurrency: [4]", 1)
	if _, err := load(t, one+"    stop_at_saturation: true\n", env()); err == nil || !strings.Contains(err.Error(), "needs a sweep of at least two levels") {
		t.Errorf("one level: %v", err)
	}
}

// TestUntilSet: --set gives a stage until: like the plan would.
func TestUntilSet(t *testing.T) {
	p, err := load(t, untilPlan, sets(t, "stages.s.until=decided", "stages.s.max_requests=[20, 40, 80]"))
	if err != nil {
		t.Fatal(err)
	}
	if u := p.Stages[0].UntilPlan(); !u.RuleAt(0).Decided || u.MaxRequests.At(1) != 40 {
		t.Errorf("until plan %+v", u)
	}
	_, err = load(t, untilPlan, sets(t, "stages.s.until=decided"))
	if err == nil || !strings.Contains(err.Error(), "--set stages.s.until") || !strings.Contains(err.Error(), "until needs a cap") {
		t.Errorf("--set without a cap: %v", err)
	}
}
