package comparison

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/result"
)

// TestSimBehind: where the built-in simulator fell behind its own model in
// either run (sim_behind), a change its lateness could have made is
// inconclusive, never worse, with the reason, while a change larger than
// that is still found; past every bound nothing there is judged.
func TestSimBehind(t *testing.T) {
	base := synth(1, level{conc: 1, n: 200, ttft: 20, tpot: 2, sd: 0.05}, level{conc: 4, n: 200, ttft: 20, tpot: 2, sd: 0.05})
	slow := synth(3, level{conc: 1, n: 200, ttft: 20, tpot: 2.2, sd: 0.05}, level{conc: 4, n: 200, ttft: 20, tpot: 3, sd: 0.05})
	behind := func(p *result.Point, stretch *float64) {
		p.SimBehind, p.SimTTFTStretchMax, p.SimDecodeStretchMax, p.SimE2EStretchMax = true, stretch, stretch, stretch
	}
	// c=1: TPOT +10% in a new run whose requests were stretched by up to 25%.
	// c=4: TPOT +50% with up to 10%.
	behind(&slow.Report.Stages[0].Points[0], result.Ptr(0.25))
	behind(&slow.Report.Stages[0].Points[1], result.Ptr(0.1))
	res, err := Compare(base, slow, Options{Threshold: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	c := row(t, res, "c=1", "tpot_p50_ms")
	if c.Verdict != "inconclusive" || !strings.Contains(c.Reason, "simulator fell behind its own timing model in the new run") ||
		!strings.Contains(c.Reason, "up to 25%") || c.Interval == nil || c.Interval.Lo <= 0 {
		t.Errorf("+10%% within a 25%% stretch: %+v %+v", c, c.Interval)
	}
	for _, f := range res.Failures(5) {
		if f.Label == "c=1" {
			t.Errorf("a change the simulator's lateness could have made failed the gate: %+v", f)
		}
	}
	if c := row(t, res, "c=4", "tpot_p50_ms"); c.Verdict != "worse" || !c.Gated || !c.Fails(10) {
		t.Errorf("+50%% beyond a 10%% stretch: %+v", c)
	}
	if c := row(t, res, "c=4", "output_tps_total"); c.Verdict != "worse" {
		t.Errorf("throughput down a third beyond a 10%% stretch: %+v", c)
	}

	// Lateness only slows a run. A new run stretched past every bound can
	// hide nothing slower, so its +50% may be the machine's; a stretched
	// baseline cannot make the new run look slower, so there the +50% is
	// still worse.
	behind(&slow.Report.Stages[0].Points[1], nil)
	res, err = Compare(base, slow, Options{Threshold: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	if c := row(t, res, "c=4", "tpot_p50_ms"); c.Verdict != "inconclusive" || !strings.Contains(c.Reason, "in the new run") || !strings.Contains(c.Reason, "more than 100 times") {
		t.Errorf("new run past every bound: %+v", c)
	}
	slow.Report.Stages[0].Points[1].SimBehind = false
	behind(&base.Report.Stages[0].Points[1], nil)
	res, err = Compare(base, slow, Options{Threshold: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	if c := row(t, res, "c=4", "tpot_p50_ms"); c.Verdict != "worse" {
		t.Errorf("+50%% against a baseline stretched past every bound: %+v", c)
	}

	// Each metric is widened by its own part's stretch: a new run whose
	// decode was stretched past every bound but whose first tokens were on
	// time still shows its TTFT +50% as worse, and cannot say its TPOT held.
	late := synth(5, level{conc: 1, n: 200, ttft: 30, tpot: 2, sd: 0.05})
	p := &late.Report.Stages[0].Points[0]
	p.SimBehind, p.SimTTFTStretchMax, p.SimDecodeStretchMax, p.SimE2EStretchMax = true, result.Ptr(0.01), nil, result.Ptr(0.5)
	res, err = Compare(base, late, Options{Threshold: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	if c := row(t, res, "c=1", "ttft_p50_ms"); c.Verdict != "worse" {
		t.Errorf("TTFT +50%% with first tokens on time: %+v", c)
	}
	if c := row(t, res, "c=1", "tpot_p50_ms"); c.Verdict != "inconclusive" || !strings.Contains(c.Reason, "more than 100 times") {
		t.Errorf("TPOT with the decode stretched past every bound: %+v", c)
	}
}

// TestSimBehindFewLate: where the level's records say how many requests
// the simulator stretched by how much, 3 of 200 stretched by 100% leave a
// median's +10% worse, which the maximum alone (100%) would have called
// inconclusive. A baseline most of whose requests were late hides what the
// new run did: its +10% is inconclusive.
func TestSimBehindFewLate(t *testing.T) {
	for _, tc := range []struct {
		lateNew, lateBase int
		p50               string
	}{{3, 0, "worse"}, {0, 150, "inconclusive"}} {
		base := synth(1, level{conc: 1, n: 200, ttft: 20, tpot: 2, sd: 0.05, late: tc.lateBase, lateBy: 1})
		slow := synth(3, level{conc: 1, n: 200, ttft: 20, tpot: 2.2, sd: 0.05, late: tc.lateNew, lateBy: 1})
		late := slow
		if tc.lateBase > 0 {
			late = base
		}
		if p := late.Report.Stages[0].Points[0]; !p.SimBehind || p.SimDecodeStretchMax == nil || *p.SimDecodeStretchMax != 1 {
			t.Fatalf("the level is not marked sim_behind by 100%%: %v %v", p.SimBehind, p.SimDecodeStretchMax)
		}
		res, err := Compare(base, slow, Options{Threshold: 0.05})
		if err != nil {
			t.Fatal(err)
		}
		if c := row(t, res, "c=1", "tpot_p50_ms"); c.Verdict != tc.p50 {
			t.Errorf("%d of 200 new and %d base requests late by 100%%: TPOT p50 +10%% %s, want %s (%s)", tc.lateNew, tc.lateBase, c.Verdict, tc.p50, c.Reason)
		}
	}
}

// TestModelFloor: the floor's order statistics are at most the model's,
// for every way the late requests may lie, and no lower than the bound
// needs (the observed value over 1+share where no late request is below).
func TestModelFloor(t *testing.T) {
	model := make([]float64, 50)
	for i := range model {
		model[i] = 10 + float64(i%7) + 0.1*float64(i)
	}
	for late := range 5 {
		for start := 0; start+late <= len(model); start += 7 {
			obs := slices.Clone(model)
			for i := range obs {
				f := 1.02 // within the share
				if i >= start && i < start+late {
					f = 3 // late by up to 200%
				}
				obs[i] *= f
			}
			floor := floorValues(obs, []aggregate.LateBound{{Stretch: 0.025, Requests: int64(late)}}, 2)
			sortedModel := slices.Sorted(slices.Values(model))
			for k := range floor {
				if floor[k] > sortedModel[k]*(1+1e-12) {
					t.Fatalf("late %d at %d: floor[%d] = %g above the model's %g", late, start, k, floor[k], sortedModel[k])
				}
			}
			if late == 0 {
				for k := range floor {
					if want := slices.Sorted(slices.Values(obs))[k] / 1.025; math.Abs(floor[k]-want) > 1e-9 {
						t.Fatalf("no late request: floor[%d] = %g, want %g", k, floor[k], want)
					}
				}
			}
		}
	}
}
