package comparison

import (
	"strings"
	"testing"
)

// TestSimBehind: a level where the built-in simulator fell behind its own
// model in either run (sim_behind) is inconclusive throughout, never worse,
// spends none of the family, and says why; the other levels are judged.
func TestSimBehind(t *testing.T) {
	base := synth(1, level{conc: 1, n: 200, ttft: 20, tpot: 2, sd: 0.05}, level{conc: 4, n: 200, ttft: 20, tpot: 2, sd: 0.05})
	slow := synth(3, level{conc: 1, n: 200, ttft: 20, tpot: 3, sd: 0.05}, level{conc: 4, n: 200, ttft: 20, tpot: 3, sd: 0.05})
	slow.Report.Stages[0].Points[0].SimBehind = true // c=1 of the new run
	res, err := Compare(base, slow, Options{Threshold: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	c := row(t, res, "c=1", "tpot_p50_ms")
	if c.Verdict != "inconclusive" || c.Gated || !strings.Contains(c.Reason, "simulator fell behind its own timing model in the new run") {
		t.Errorf("sim_behind level: %+v", c)
	}
	for _, f := range res.Failures(10) {
		if f.Label == "c=1" {
			t.Errorf("a sim_behind level failed the gate: %+v", f)
		}
	}
	if c := row(t, res, "c=4", "tpot_p50_ms"); c.Verdict != "worse" || !c.Gated {
		t.Errorf("the level the simulator kept up in: %+v", c)
	}

	base.Report.Stages[0].Points[1].SimBehind = true // c=4 of the baseline
	res, err = Compare(base, slow, Options{Threshold: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	if c := row(t, res, "c=4", "tpot_p50_ms"); c.Verdict != "inconclusive" || !strings.Contains(c.Reason, "in the baseline") {
		t.Errorf("sim_behind in the baseline: %+v", c)
	}
	if len(res.Failures(0)) != 0 || res.Summary.Gated != 0 {
		t.Errorf("gated %d, failures %+v", res.Summary.Gated, res.Failures(0))
	}
}
