package scenario

import (
	"strings"
	"testing"
	"time"
)

const searchStage = `version: 1
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
    duration: 1s
    search:
      over: OVER
      max: 64
      targets:
        - {name: t, expr: "ttft_p95_ms < 500"}
`

// TestSearchDefaults: a search's unset fields get their documented defaults
// (the step by what it varies, the probe budget by whether time bounds it),
// its targets are compiled, and a rate search gets open-loop defaults.
func TestSearchDefaults(t *testing.T) {
	p := mustLoad(t, strings.Replace(searchStage, "OVER", "concurrency", 1), env())
	s := p.Stages[0].Search
	if s.Min != 1 || s.Step != 1 || *s.Repeats != 3 || s.Budget.Probes != 30 || s.Budget.Time != 0 || p.Stages[0].Arrival != "" {
		t.Errorf("concurrency search defaults: %+v, arrival %q", s, p.Stages[0].Arrival)
	}
	if tg := s.Targets[0]; tg.Program == nil || len(tg.Metrics) != 1 || tg.Metrics[0] != "ttft_p95_ms" {
		t.Errorf("target not compiled: %+v", tg)
	}
	p = mustLoad(t, strings.Replace(strings.Replace(searchStage, "OVER", "rate", 1), "max: 64", "max: 64\n      budget: {time: 2m}", 1), env())
	s = p.Stages[0].Search
	if s.Step != 0.05 || s.Budget.Probes != MaxLevels || s.Budget.Time.D() != 2*time.Minute || p.Stages[0].Arrival != ArrivalPoisson || !p.Stages[0].OpenLoop() {
		t.Errorf("rate search defaults: %+v, arrival %q", s, p.Stages[0].Arrival)
	}
	p.ApplyDefaults()
	if s.Budget.Probes != MaxLevels || s.Step != 0.05 {
		t.Errorf("defaults not idempotent: %+v", s)
	}
}

// TestSearchUnknownKeys: the search block, its budget and its targets are
// decoded strictly, each unknown key at its line and column.
func TestSearchUnknownKeys(t *testing.T) {
	base := strings.Replace(searchStage, "OVER", "concurrency", 1)
	for _, c := range []struct{ from, to, want string }{
		{"      max: 64\n", "      max: 64\n      maxx: 1\n", `plan.yaml:16:7: unknown key "maxx" in stages[0].search (did you mean "max"?)`},
		{"      max: 64\n", "      max: 64\n      budget: {probe: 3}\n", `plan.yaml:16:16: unknown key "probe" in stages[0].search.budget (did you mean "probes"?)`},
		{`{name: t, expr:`, `{name: t, exp: "x", expr:`, `plan.yaml:17:21: unknown key "exp" in stages[0].search.targets[0] (did you mean "expr"?)`},
	} {
		_, err := load(t, strings.Replace(base, c.from, c.to, 1), env())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want %q, got %v", c.want, err)
		}
	}
}

// TestCapacityReads: a stage check's capacity reads are named for its
// outcome, as capacity["name"] and baseline.capacity["name"], and the
// names round-trip.
func TestCapacityReads(t *testing.T) {
	_, reads, err := CompileCheck(`capacity["a b"] > 2 && (baseline == nil || capacity.c >= baseline.capacity["a b"]) && all(points, .failed == 0)`, ScopeStage)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(reads, " "); got != `failed capacity["a b"] capacity["c"] baseline.capacity["a b"]` {
		t.Errorf("reads %s", got)
	}
	if name, ok := CapacityTarget(`capacity["a \"b\""]`); !ok || name != `a "b"` || CapacityMetric(name) != `capacity["a \"b\""]` {
		t.Errorf("round trip: %q %t", name, ok)
	}
	if _, ok := CapacityTarget("ttft_p95_ms"); ok {
		t.Error("a metric read as a capacity")
	}
}
