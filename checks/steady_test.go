package checks

import (
	"strings"
	"testing"

	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
)

// TestSteadyCheck: steady, a nullable flag, reads as a bool in every form a
// check writes it: true passes, false fails, null (no slices) fails naming
// it, at level scope and at stage scope alike.
func TestSteadyCheck(t *testing.T) {
	yes, no := true, false
	steady, unsteady, unsliced := point(1, 0, nil, 1), point(2, 0, nil, 1), point(4, 0, nil, 1)
	steady.Steady, unsteady.Steady = &yes, &no
	res := &result.Stage{Name: "s", Points: []result.Point{steady, unsteady, unsliced}}
	stage := &scenario.Stage{Name: "s", Checks: []*scenario.Check{
		check(t, "bare", "steady", "level", "fail", ""),
		check(t, "not", "!steady || concurrency == 2", "level", "fail", ""),
		check(t, "eq", "steady == true && failed == 0", "level", "fail", ""),
		check(t, "all", "all(points, .steady)", "stage", "fail", ""),
		check(t, "any", "any(points, .steady)", "stage", "fail", ""),
	}}
	out := EvaluateStage(stage, res, nil)
	want := []struct{ name, status, msg string }{
		{"bare", "pass", ""}, {"bare", "fail", "expression is false"}, {"bare", "fail", "metric steady is null"},
		{"not", "fail", "expression is false"}, {"not", "pass", ""}, {"not", "fail", "metric steady is null"},
		{"eq", "pass", ""}, {"eq", "fail", "expression is false"}, {"eq", "fail", "metric steady is null"},
		{"all", "fail", "metric steady is null"}, {"any", "fail", "metric steady is null"},
	}
	if len(out) != len(want) {
		t.Fatalf("%d outcomes: %+v", len(out), out)
	}
	for i, w := range want {
		if out[i].Name != w.name || out[i].Status != w.status || !strings.Contains(out[i].Message, w.msg) {
			t.Errorf("%d: %s %s %q, want %s %s %q", i, out[i].Name, out[i].Status, out[i].Message, w.name, w.status, w.msg)
		}
	}
}
