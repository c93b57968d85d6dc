package pipeline

import (
	"strings"
	"testing"

	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
)

// TestBaselineGaps: a stage or level the baseline lacks is named; a full
// match names nothing.
func TestBaselineGaps(t *testing.T) {
	rate := 4.0
	res := &result.Stage{Name: "s", Points: []result.Point{{Concurrency: 1}, {Concurrency: 8}, {Rate: &rate}}}
	base := &result.Stage{Name: "s", Points: []result.Point{{Concurrency: 1}}}
	got := baselineGaps("b.json", base, res)
	if len(got) != 1 || !strings.Contains(got[0], "baseline b.json has no level c=8, rate=4 of stage s") {
		t.Errorf("missing levels: %q", got)
	}
	if got := baselineGaps("b.json", nil, res); len(got) != 1 || !strings.Contains(got[0], "baseline b.json has no stage s") {
		t.Errorf("missing stage: %q", got)
	}
	if got := baselineGaps("b.json", res, res); len(got) != 0 {
		t.Errorf("full match: %q", got)
	}
	if got := baselineGaps("b.json", nil, &result.Stage{Name: "empty"}); len(got) != 0 {
		t.Errorf("a stage that ran no level: %q", got)
	}
}

// TestGateThreshold: the comparisons' practical threshold is 5%, or the
// smallest percentage a worse() of the plan asks about, so what worse()
// calls worse is never shown as the same.
func TestGateThreshold(t *testing.T) {
	c := &scenario.Check{Name: "g", Expr: `!worse("ttft_p95_ms", 2) && !worse("tpot_p50_ms", 10)`}
	if err := c.Compile(); err != nil {
		t.Fatal(err)
	}
	if got := GateThreshold([]*scenario.Stage{{Name: "s", Checks: []*scenario.Check{c}}, nil}); got != 0.02 {
		t.Errorf("threshold %v, want 0.02", got)
	}
	if got := GateThreshold(nil); got != 0.05 {
		t.Errorf("threshold without worse(): %v, want 0.05", got)
	}
}
