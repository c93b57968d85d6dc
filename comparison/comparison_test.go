package comparison

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/internal/stats"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
	"github.com/runnerbench/runner/sim/simconfig"
)

// level is a synthetic closed-loop level: n requests whose TTFT and TPOT are
// lognormal around ttft and tpot ms (log-sd sd), 64 output tokens each.
type level struct {
	conc       int
	n          int
	ttft, tpot float64
	sd         float64
	failed     int // the first failed requests fail
	bottleneck bool
	// slow multiplies the TPOT of every request in the quarters of the
	// level it lists (a run-level effect, such as a closed loop's batching
	// rhythm); reps > 1 records the quarters as that many replicates.
	slow map[int]float64
	reps int
	// late requests (every n/late-th) had their decode stretched by lateBy
	// (0.5: 50% longer) by the simulator's lateness, which the level's
	// server record says as the built-in simulator's lag histograms do.
	late   int
	lateBy float64
	// prompt is the fraction of each TTFT the server says was its own
	// prompt time (llama.cpp timings); 0: no server timings.
	prompt float64
}

// lagRecord is a level's server record from the built-in simulator that
// stretched late of its n requests' decode by lateBy and no other.
func lagRecord(n, late int, lateBy float64) *result.ServerDelta {
	h := result.HistogramDelta{Count: float64(n)}
	for _, b := range simconfig.LagRatioBounds {
		c := float64(n - late)
		if b >= lateBy {
			c = float64(n)
		}
		h.Buckets = append(h.Buckets, result.HistogramBucket{LE: b, Count: c})
	}
	zero := result.HistogramDelta{Count: float64(n)}
	for _, b := range simconfig.LagRatioBounds {
		zero.Buckets = append(zero.Buckets, result.HistogramBucket{LE: b, Count: float64(n)})
	}
	return &result.ServerDelta{
		Counters: map[string]float64{simconfig.MetricSteps: float64(64 * n), simconfig.MetricLateSteps: float64(late)},
		Histograms: map[string]result.HistogramDelta{
			simconfig.MetricLagRatio: h, simconfig.MetricDecodeLagRatio: h, simconfig.MetricE2ELagRatio: h,
			simconfig.MetricTTFTLagRatio: zero,
		},
	}
}

// synth builds a run of one stage "s" from levels, its report points and
// samples from the same aggregate, as a live run's are.
func synth(seed uint64, levels ...level) Run {
	r := rand.New(rand.NewPCG(seed, 1))
	st := aggregate.NewStage(0)
	st.KeepSamples()
	st.StageStarted(&result.StageRecord{Name: "s"})
	for i, l := range levels {
		spec := result.LevelSpec{Concurrency: l.conc, OutputTokens: 64, Pinned: true}
		if l.reps > 1 {
			spec.Replicates = l.reps
		}
		var wall float64
		rec := &result.LevelRecord{Stage: "s", Level: i, Spec: spec}
		st.LevelStarted(rec)
		repWall := make([]float64, max(1, l.reps))
		for k := range l.n {
			quarter := 4 * k / l.n
			ttft := l.ttft * math.Exp(l.sd*r.NormFloat64())
			tpot := l.tpot * math.Exp(l.sd*r.NormFloat64())
			if f, ok := l.slow[quarter]; ok {
				tpot *= f
			}
			lateOne := l.late > 0 && k%(l.n/l.late) == 0 && k/(l.n/l.late) < l.late
			if lateOne {
				tpot *= 1 + l.lateBy
			}
			e2e := ttft + 63*tpot
			req := &result.Request{Stage: "s", Level: i, Seq: k, OK: k >= l.failed, E2EMs: e2e}
			if l.reps > 1 {
				req.Replicate = k * l.reps / l.n
				repWall[req.Replicate] += e2e
			}
			if req.OK {
				req.TTFTMs, req.TPOTMs, req.OutputTokens, req.InputTokens = &ttft, &tpot, 64, 128
				if l.prompt > 0 {
					req.ServerTimings = &result.ServerTimings{PromptN: 128, PromptMs: l.prompt * ttft, PredictedN: 64}
				}
			} else {
				req.ErrorKind = "http_500"
			}
			wall += e2e
			st.Request(req)
		}
		rec.WallNs = int64(wall / float64(l.conc) * float64(time.Millisecond))
		if l.reps > 1 {
			rec.WallNs = 0
			for _, w := range repWall {
				ns := int64(w / float64(l.conc) * float64(time.Millisecond))
				rec.Windows = append(rec.Windows, result.Window{WallNs: ns})
				rec.WallNs += ns
			}
		}
		if l.late > 0 {
			rec.Server = lagRecord(l.n, l.late, l.lateBy)
		}
		st.LevelDone(rec)
	}
	rep := &result.Report{Plan: result.Plan{Name: "p"}, Stages: []result.Stage{*st.Result()}}
	for i, l := range levels {
		rep.Stages[0].Points[i].ClientBottleneck = l.bottleneck
	}
	return Run{Report: rep, Samples: func(stage, label string) *aggregate.Samples {
		if stage != "s" {
			return nil
		}
		return st.Samples(label)
	}}
}

func row(t *testing.T, res *Result, label, metric string) result.Comparison {
	t.Helper()
	for _, l := range res.Levels {
		for _, c := range l.Rows {
			if l.Label == label && c.Metric == metric {
				return c
			}
		}
	}
	t.Fatalf("no comparison of %s %s", label, metric)
	return result.Comparison{}
}

// TestAAIsNotWorseAndShiftIsFound: two runs drawn from one distribution
// fail no gate; a run whose TPOT is 20% longer fails it on TPOT, with the
// interval around the shift and the samples named, and the headline is that
// regression.
func TestAAIsNotWorseAndShiftIsFound(t *testing.T) {
	base := synth(1, level{conc: 1, n: 100, ttft: 20, tpot: 2, sd: 0.05}, level{conc: 4, n: 120, ttft: 30, tpot: 2.5, sd: 0.1})
	same := synth(2, level{conc: 1, n: 100, ttft: 20, tpot: 2, sd: 0.05}, level{conc: 4, n: 120, ttft: 30, tpot: 2.5, sd: 0.1})
	slow := synth(3, level{conc: 1, n: 100, ttft: 20, tpot: 2.4, sd: 0.05}, level{conc: 4, n: 120, ttft: 30, tpot: 3, sd: 0.1})
	o := Options{Threshold: 0.05}
	aa, err := Compare(base, same, o)
	if err != nil {
		t.Fatal(err)
	}
	if f := aa.Failures(5); len(f) != 0 {
		t.Errorf("A/A fails the gate: %+v", f)
	}
	if c := row(t, aa, "c=1", "tpot_p50_ms"); c.Verdict != "same" || !c.Gated || c.NBase != 100 || c.Interval == nil {
		t.Errorf("A/A tpot_p50_ms: %+v", c)
	}
	ab, err := Compare(base, slow, o)
	if err != nil {
		t.Fatal(err)
	}
	c := row(t, ab, "c=1", "tpot_p50_ms")
	if c.Verdict != "worse" || !c.Fails(10) || c.Fails(25) || c.Interval.Lo > 0.2 || c.Interval.Hi < 0.2 {
		t.Errorf("TPOT +20%%: %+v %+v", c, c.Interval)
	}
	if !strings.Contains(c.Describe(), "p50 of 100 and 100 requests") || !strings.Contains(c.Describe(), "worse") {
		t.Errorf("description %q", c.Describe())
	}
	if tps := row(t, ab, "c=4", "output_tps_total"); tps.Verdict != "worse" || tps.Statistic != "rate" {
		t.Errorf("throughput with 20%% longer streams: %+v", tps)
	}
	w, ok := ab.WorstRegression()
	if !ok || !strings.HasPrefix(w.Metric, "tpot_") && !strings.HasPrefix(w.Metric, "e2e_") && w.Metric != "output_tps_total" && w.Metric != "output_tps_per_stream" && w.Metric != "request_tps" {
		t.Errorf("headline %+v", w)
	}
	f := ab.Failures(10)
	for i := 1; i < len(f); i++ {
		if f[i].WorseBy() > f[i-1].WorseBy() {
			t.Errorf("failures not worst first: %v then %v", f[i-1].WorseBy(), f[i].WorseBy())
		}
	}
}

// TestFamilyAndWhatIsNeverJudged: the default family gates every server
// metric with an interval, each interval at the Bonferroni confidence over
// those with enough samples; the client's diagnostics, neutral metrics and
// a maximum get no verdict; a p99 of 32 requests is gated and inconclusive,
// outside the Bonferroni family.
func TestFamilyAndWhatIsNeverJudged(t *testing.T) {
	base := synth(1, level{conc: 1, n: 32, ttft: 20, tpot: 2, sd: 0.05}, level{conc: 16, n: 32, ttft: 20, tpot: 2, sd: 0.05})
	cur := synth(2, level{conc: 1, n: 32, ttft: 20, tpot: 2, sd: 0.05}, level{conc: 16, n: 32, ttft: 20, tpot: 2, sd: 0.05})
	cur.Report.Stages[0].Points[0].ClientCPUPercent = result.Ptr(50.0)
	base.Report.Stages[0].Points[0].ClientCPUPercent = result.Ptr(5.0)
	res, err := Compare(base, cur, Options{Confidence: 0.9})
	if err != nil {
		t.Fatal(err)
	}
	gated, verdicts := 0, 0
	for _, l := range res.Levels {
		for _, c := range l.Rows {
			if c.Gated {
				gated++
			}
			if c.Verdict != "" {
				verdicts++
			}
		}
	}
	s := res.Summary
	if gated == 0 || gated != verdicts || s.Gated != gated || s.Worse+s.Better+s.Same+s.Inconclusive != gated || s.Intervals == 0 || s.Intervals >= gated ||
		s.Each != stats.FamilyConfidence(0.9, s.Intervals) || !s.Records || s.Family.Source != FamilyDefault {
		t.Errorf("summary %+v, %d gated rows, %d with a verdict", res.Summary, gated, verdicts)
	}
	if c := row(t, res, "c=1", "client_cpu_percent"); c.Verdict != "" || c.Rel == nil || *c.Rel != 9 {
		t.Errorf("client diagnostic: %+v", c)
	}
	if c := row(t, res, "c=1", "duration_s"); c.Verdict != "" {
		t.Errorf("neutral metric judged: %+v", c)
	}
	if c := row(t, res, "c=1", "ttft_p99_ms"); !c.Gated || (c.Verdict != "same" && !strings.Contains(c.Reason, "too few samples: p99 needs 100")) {
		t.Errorf("p99 of 32: %+v", c)
	}
	if c := row(t, res, "c=1", "ttft_max_ms"); c.Verdict != "" || !strings.Contains(c.Reason, "no interval: a maximum") || c.Gated {
		t.Errorf("maximum: %+v", c)
	}
	if c := row(t, res, "c=1", "output_tps_total"); !c.Gated {
		t.Errorf("the rate of 32 waves is in the family: %+v", c)
	}
	if c := row(t, res, "c=16", "output_tps_total"); !c.Gated || (c.Verdict != "same" && !strings.Contains(c.Reason, "too few waves")) {
		t.Errorf("the rate of 2 waves is outside the family: %+v", c)
	}
}

// TestBottleneckAndNoRecords: a level where a run's client was the
// bottleneck is inconclusive throughout, never worse, and named; without a
// run's records nothing has an interval and the notes say why.
func TestBottleneckAndNoRecords(t *testing.T) {
	base := synth(1, level{conc: 1, n: 200, ttft: 20, tpot: 2, sd: 0.05})
	slow := synth(3, level{conc: 1, n: 200, ttft: 20, tpot: 3, sd: 0.05, bottleneck: true})
	res, err := Compare(base, slow, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := row(t, res, "c=1", "tpot_p50_ms")
	if c.Verdict != "inconclusive" || !c.Gated || !strings.Contains(c.Reason, "client was the bottleneck in the new run") || c.Interval == nil {
		t.Errorf("bottleneck level: %+v", c)
	}
	if len(res.Failures(0)) != 0 || res.Summary.Intervals != 0 || !res.Summary.Blind() || !strings.HasPrefix(res.Summary.Headline(), "Judged nothing: ") ||
		!strings.Contains(res.Summary.Headline(), "client was the bottleneck") {
		t.Errorf("a bottlenecked level failed the gate: %+v", res.Failures(0))
	}

	old := Run{Report: base.Report}
	res, err = Compare(old, slow, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c = row(t, res, "c=1", "tpot_p50_ms")
	if c.Verdict != "inconclusive" || c.Interval != nil || c.Rel == nil || *c.Rel <= 0 || !strings.Contains(c.Reason, "no request records of the baseline") {
		t.Errorf("without records: %+v", c)
	}
	if res.Summary.Records || len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "no request records of the baseline") {
		t.Errorf("without records: summary %+v notes %q", res.Summary, res.Notes)
	}
}

// TestFailedShareAndOpenLoop: failures are compared as a share (a change
// from 0 has no relative change and is judged on the absolute one); an
// open loop's throughput is not judged.
func TestFailedShareAndOpenLoop(t *testing.T) {
	base := synth(1, level{conc: 1, n: 200, ttft: 20, tpot: 2, sd: 0.05})
	cur := synth(2, level{conc: 1, n: 200, ttft: 20, tpot: 2, sd: 0.05, failed: 40})
	res, err := Compare(base, cur, Options{Threshold: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	c := row(t, res, "c=1", "failed")
	if c.Verdict != "worse" || c.Rel != nil || c.Abs == nil || math.Abs(*c.Abs-0.2) > 1e-9 || !c.Fails(1000) || c.Statistic != "share" {
		t.Errorf("0 → 40 of 200 failed: %+v", c)
	}
	rate := 2.0
	for _, r := range []*Run{&base, &cur} {
		r.Report.Stages[0].Points[0].Rate = &rate
		samples := r.Samples
		r.Samples = func(stage, _ string) *aggregate.Samples { return samples(stage, "c=1") }
	}
	res, _ = Compare(base, cur, Options{})
	if c := row(t, res, "rate=2", "output_tps_total"); c.Verdict != "inconclusive" || !strings.Contains(c.Reason, "open loop") {
		t.Errorf("open-loop throughput: %+v", c)
	}
}

func TestMatchAndAttach(t *testing.T) {
	base := synth(1, level{conc: 1, n: 50, ttft: 20, tpot: 2, sd: 0.05}, level{conc: 4, n: 50, ttft: 20, tpot: 2, sd: 0.05})
	cur := synth(2, level{conc: 1, n: 50, ttft: 20, tpot: 2, sd: 0.05}, level{conc: 8, n: 50, ttft: 20, tpot: 2, sd: 0.05})
	res, err := Compare(base, cur, Options{})
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(res.Missing, "\n")
	if !strings.Contains(joined, "s c=8 is not in the baseline") || !strings.Contains(joined, "s c=4 is only in the baseline") || len(res.Levels) != 1 {
		t.Errorf("missing %q, %d levels", res.Missing, len(res.Levels))
	}
	res.Attach(cur.Report)
	if cur.Report.Comparison == nil || len(cur.Report.Stages[0].Points[0].BaselineComparison) == 0 || cur.Report.Stages[0].Points[1].BaselineComparison != nil {
		t.Errorf("attach: %+v", cur.Report.Comparison)
	}
	if _, err := Compare(base, cur, Options{Confidence: 1}); err == nil {
		t.Error("confidence 1 accepted")
	}
}

func TestMismatch(t *testing.T) {
	base := &result.Report{Plan: result.Plan{Name: "p"}, Stages: []result.Stage{{Name: "a", Points: []result.Point{{Concurrency: 1}, {Concurrency: 2}}}}}
	if err := Mismatch(base, "p", []Want{{Stage: "a", Labels: []string{"c=2"}}}); err != nil {
		t.Errorf("a subset of the baseline: %v", err)
	}
	err := Mismatch(base, "q", []Want{{Stage: "a", Labels: []string{"c=1", "c=3"}}, {Stage: "b"}})
	want := `it is a run of plan "p", not "q"; it has no level c=3 of stage "a" (it has c=1, c=2); it has no stage "b" (it has "a")`
	if err == nil || err.Error() != want {
		t.Errorf("mismatch:\n got %v\nwant %s", err, want)
	}
}

func TestPlanWants(t *testing.T) {
	p := &scenario.Plan{Prompts: map[string]*scenario.PromptSet{"chat": {Turns: 2}, "one": {}}}
	stages := []*scenario.Stage{
		{Name: "a", Prompts: "one", Concurrency: []int{1, 8}},
		{Name: "b", Prompts: "one", Rate: []float64{0.5, 4}},
		{Name: "c", Prompts: "chat", Concurrency: []int{4}},
	}
	var got []string
	for _, w := range PlanWants(p, stages) {
		got = append(got, fmt.Sprint(w.Stage, " ", w.Load.Kind, " ", w.Labels))
	}
	want := "[a concurrency [c=1 c=8] b rate [rate=0.5 rate=4] c concurrency [c=4 c=4 turn=1 c=4 turn=2]]"
	if fmt.Sprint(got) != want {
		t.Errorf("wants %s, want %s", got, want)
	}
}

// TestLoadOfPlanAndReport (issue 38, item 3): the load a plan's stage will
// ask for, known before it runs, is the load its report records, so a
// baseline is matched before the run by what the run will say; another
// length, mode, API or loop is named from the baseline's to the run's.
func TestLoadOfPlanAndReport(t *testing.T) {
	in := scenario.Length{Fixed: 300}
	p := &scenario.Plan{Prompts: map[string]*scenario.PromptSet{
		"syn":  {Synthetic: &scenario.Synthetic{InputTokens: scenario.Length{Fixed: 128}}},
		"file": {},
	}}
	stages := []*scenario.Stage{
		{Name: "a", Prompts: "syn", API: "chat", Mode: scenario.ModePinned, OutputTokens: scenario.Length{Fixed: 32}, Concurrency: []int{1}},
		{Name: "b", Prompts: "syn", API: "chat", Mode: scenario.ModeNatural, InputTokens: &in, OutputTokens: scenario.Length{Fixed: 64}, Rate: []float64{2}},
		{Name: "c", Prompts: "file", API: "embeddings", Mode: scenario.ModePinned, OutputTokens: scenario.Length{Fixed: 64}, Concurrency: []int{1}},
	}
	wants := PlanWants(p, stages)
	for i, want := range []string{"concurrency, chat, pinned, in 128, out 32", "rate, chat, natural, in 300, out 64", "concurrency, embeddings"} {
		if got := wants[i].Load.String(); got != want {
			t.Errorf("stage %s: load %q, want %q", stages[i].Name, got, want)
		}
	}
	base := &result.Report{Plan: result.Plan{Name: "p"}, Stages: []result.Stage{
		{Name: "a", API: "chat", Mode: "pinned", Load: result.LoadConcurrency, Points: []result.Point{{Concurrency: 1, InputTokens: 128, OutputTokens: 32}}},
		{Name: "b", API: "chat", Mode: "pinned", Load: result.LoadConcurrency, Points: []result.Point{{Rate: result.Ptr(2.0), InputTokens: 128, OutputTokens: 64}}},
		// An earlier version said pinned for an API without output.
		{Name: "c", API: "embeddings", Mode: "pinned", Load: result.LoadConcurrency, Points: []result.Point{{Concurrency: 1}}},
	}}
	err := Unlike(base, "p", wants)
	want := `its stage "b" ran another load (baseline → this run: load concurrency → rate, mode pinned → natural, input tokens 128 → 300)`
	if err == nil || err.Error() != want {
		t.Errorf("unlike:\n got %v\nwant %s", err, want)
	}
	if err := Unlike(base, "p", ReportWants(base)); err != nil {
		t.Errorf("a report against itself: %v", err)
	}
}

// TestReplicatesWidenForWholeRunEffects: two runs of one distribution
// whose quarters are each 15% slower per token by chance (one quarter of
// the first run, three of the second) are an A/A pair whose request
// interval alone calls TPOT's median worse; recorded as 4 replicates, the interval holds the quarters'
// disagreement, the pair passes, and the rows say 4 and 4 replicates. A run
// with replicates against one without gets the request interval and a note.
func TestReplicatesWidenForWholeRunEffects(t *testing.T) {
	mk := func(seed uint64, reps int, slow map[int]float64) Run {
		return synth(seed, level{conc: 2, n: 400, ttft: 20, tpot: 2, sd: 0.05, reps: reps, slow: slow})
	}
	fastFirst, slowFirst := map[int]float64{3: 1.15}, map[int]float64{1: 1.15, 2: 1.15, 3: 1.15}
	o := Options{Threshold: 0.05}
	alone, err := Compare(mk(1, 1, fastFirst), mk(2, 1, slowFirst), o)
	if err != nil {
		t.Fatal(err)
	}
	reps, err := Compare(mk(1, 4, fastFirst), mk(2, 4, slowFirst), o)
	if err != nil {
		t.Fatal(err)
	}
	a, r := row(t, alone, "c=2", "tpot_p50_ms"), row(t, reps, "c=2", "tpot_p50_ms")
	if a.Verdict != "worse" || r.Verdict == "worse" || r.Interval.Hi-r.Interval.Lo <= a.Interval.Hi-a.Interval.Lo {
		t.Errorf("requests alone %s %+v, replicates %s %+v: the replicates must widen the interval past the run effect", a.Verdict, *a.Interval, r.Verdict, *r.Interval)
	}
	if r.ReplicatesBase != 4 || r.ReplicatesNew != 4 || !strings.Contains(r.Describe(), "in 4 and 4 replicates") || a.ReplicatesBase != 0 {
		t.Errorf("replicates %d/%d %q, alone %d", r.ReplicatesBase, r.ReplicatesNew, r.Describe(), a.ReplicatesBase)
	}
	if len(reps.Failures(5)) != 0 || len(alone.Failures(5)) == 0 {
		t.Errorf("gate at 5%%: %d failures with replicates, %d by requests alone", len(reps.Failures(5)), len(alone.Failures(5)))
	}
	mixed, err := Compare(mk(1, 4, fastFirst), mk(2, 1, slowFirst), o)
	if err != nil {
		t.Fatal(err)
	}
	m := row(t, mixed, "c=2", "tpot_p50_ms")
	if m.ReplicatesBase != 0 || *m.Interval != *a.Interval || !slices.ContainsFunc(mixed.Notes, func(n string) bool { return strings.Contains(n, "only one run ran s c=2 as replicates") }) {
		t.Errorf("one run with replicates: %+v, notes %q", m, mixed.Notes)
	}
}

// TestNothingGatedIsNotAPass: two runs with no stage, no level or no gated
// metric in common gate nothing, and the summary says why in one line
// instead of passing; a run of which only part has a baseline level says
// so with the counts; a gate that could judge nothing it matched says so.
func TestNothingGatedIsNotAPass(t *testing.T) {
	base := synth(1, level{conc: 1, n: 50, ttft: 20, tpot: 2, sd: 0.05})
	other := synth(2, level{conc: 1, n: 50, ttft: 20, tpot: 2, sd: 0.05})
	other.Report.Plan.Name = "q"
	other.Report.Stages[0].Name = "t"
	res, err := Compare(base, other, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := `the runs are of plans "p" and "q", and no stage is in both (the baseline has "s", the new run "t")`
	if res.Summary.NothingGated != want || !strings.HasPrefix(res.Summary.Headline(), "Nothing gated: ") || res.Summary.Unmatched != 1 {
		t.Errorf("unrelated runs: %q, want %q; summary %+v", res.Summary.NothingGated, want, res.Summary)
	}
	c8 := synth(2, level{conc: 8, n: 50, ttft: 20, tpot: 2, sd: 0.05})
	if res, _ := Compare(base, c8, Options{}); res.Summary.NothingGated != `no level is in both (stage "s": the baseline has c=1, the new run c=8)` {
		t.Errorf("no level in common: %q", res.Summary.NothingGated)
	}
	fam, err := ChosenFamily("goodput")
	if err != nil {
		t.Fatal(err)
	}
	if res, _ := Compare(base, synth(2, level{conc: 1, n: 50, ttft: 20, tpot: 2, sd: 0.05}), Options{Family: fam}); !strings.HasPrefix(res.Summary.NothingGated, "no metric of the gate is in both runs") {
		t.Errorf("no gated metric in common: %q", res.Summary.NothingGated)
	}

	more := synth(3, level{conc: 1, n: 50, ttft: 20, tpot: 2, sd: 0.05}, level{conc: 4, n: 50, ttft: 20, tpot: 2, sd: 0.05})
	res, _ = Compare(base, more, Options{})
	s := res.Summary
	if s.NothingGated != "" || s.Levels != 1 || s.Unmatched != 1 || s.Gated == 0 || s.Worse+s.Better+s.Same+s.Inconclusive != s.Gated ||
		!strings.HasPrefix(s.Headline(), fmt.Sprintf("Partial: gated %d (%d worse, %d better, %d same, %d inconclusive), 1 of 2 levels unmatched; judged: the default family", s.Gated, s.Worse, s.Better, s.Same, s.Inconclusive)) {
		t.Errorf("partial: %q", s.Headline())
	}
	// The baseline having more than the run is not partial (a run of some stages).
	if res, _ := Compare(more, base, Options{}); res.Summary.Unmatched != 0 || !strings.HasPrefix(res.Summary.Headline(), "Compared: ") {
		t.Errorf("a baseline with more levels: %q", res.Summary.Headline())
	}

	lat, _ := ChosenFamily("ttft_p95_ms,tpot_p50_ms") // failed 0 → 0 would be same, without records too
	res, _ = Compare(Run{Report: base.Report}, more, Options{Family: lat})
	if s := res.Summary; !s.Blind() || s.Gated != s.Inconclusive || !strings.HasPrefix(s.Headline(), "Judged nothing, and partial: ") ||
		!strings.Contains(s.Headline(), "every gated comparison is inconclusive (no request records of the baseline: no interval)") {
		t.Errorf("without records: %q", s.Headline())
	}
}

// TestOneFamily: a plan's worse() checks decide the family stage by stage
// (the threshold is their smallest percentage, a metric only warn checks
// name warns), only its metrics get a verdict and share the Bonferroni
// confidence, a plan without worse() gets the default family, and --metrics
// refuses what worse() refuses.
func TestOneFamily(t *testing.T) {
	check := func(expr string, sev scenario.Severity) *scenario.Check {
		c := &scenario.Check{Name: expr, Expr: expr, Severity: sev}
		if err := c.Compile(); err != nil {
			t.Fatal(err)
		}
		return c
	}
	stages := []*scenario.Stage{
		{Name: "s", Checks: []*scenario.Check{check(`!worse("tpot_p50_ms", 2) && !worse("ttft_p95_ms", 10)`, ""), check(`!worse("output_tps_total", 10)`, scenario.SeverityWarn)}},
		{Name: "u", Checks: []*scenario.Check{check(`failed == 0`, "")}},
		nil,
	}
	fam := PlanFamily(stages)
	if fam.Threshold() != 0.02 || !fam.Judges("s", "tpot_p50_ms") || fam.Judges("s", "e2e_p95_ms") || fam.Judges("u", "tpot_p50_ms") ||
		!fam.WarnOnly("s", "output_tps_total") || fam.WarnOnly("s", "tpot_p50_ms") {
		t.Errorf("plan family %+v", fam.Record())
	}
	if got := fam.Record().String(); got != "the plan's worse() metrics (output_tps_total, ttft_p95_ms, tpot_p50_ms)" {
		t.Errorf("family named %q", got)
	}
	if d := PlanFamily(stages[1:]); d.Record().Source != FamilyDefault || d.Threshold() != DefaultThreshold || !d.Judges("u", "e2e_p95_ms") || d.Judges("u", "ttft_max_ms") {
		t.Errorf("no worse(): %+v", d.Record())
	}
	base := synth(1, level{conc: 1, n: 100, ttft: 20, tpot: 2, sd: 0.05})
	slow := synth(3, level{conc: 1, n: 100, ttft: 20, tpot: 2.6, sd: 0.05})
	res, err := Compare(base, slow, Options{Family: fam, Threshold: fam.Threshold()})
	if err != nil {
		t.Fatal(err)
	}
	if c := row(t, res, "c=1", "e2e_p95_ms"); c.Verdict != "" || c.Gated || c.Reason != NotGated || c.Interval != nil || c.Rel == nil {
		t.Errorf("a metric outside the family: %+v", c)
	}
	if c := row(t, res, "c=1", "tpot_p50_ms"); c.Verdict != "worse" || !c.Gated {
		t.Errorf("a metric of the family: %+v", c)
	}
	if s := res.Summary; s.Gated != 3 || s.Intervals != 3 || s.Each != stats.FamilyConfidence(0.95, 3) || s.Family.Source != FamilyPlan {
		t.Errorf("summary %+v", s)
	}
	for list, want := range map[string]string{
		"ttft_p95_ms,nope":        "unknown metric nope",
		"itl_p95_ms":              "itl_p95_ms has no interval",
		"dispatch_lag_p99_ms":     "the runner's own diagnostic",
		" , ":                     "no metric named",
		"tpot_p50_ms,ttft_p95_ms": "",
	} {
		f, err := ChosenFamily(list)
		if want == "" {
			if err != nil || f.Record().String() != "--metrics ttft_p95_ms,tpot_p50_ms" {
				t.Errorf("--metrics %s: %v %+v", list, err, f)
			}
		} else if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--metrics %q: %v, want %q", list, err, want)
		}
	}
}

// TestEqualCountsAreSame: failed 0 → 0 of a level too small for any
// interval to lie within ±5% is "same", never inconclusive.
func TestEqualCountsAreSame(t *testing.T) {
	base := synth(1, level{conc: 1, n: 24, ttft: 20, tpot: 2, sd: 0.05})
	cur := synth(2, level{conc: 1, n: 24, ttft: 20, tpot: 2, sd: 0.05})
	failed, _ := ChosenFamily("failed,ttft_p50_ms")
	res, err := Compare(base, cur, Options{Threshold: 0.05, Family: failed})
	if err != nil {
		t.Fatal(err)
	}
	if c := row(t, res, "c=1", "failed"); c.Verdict != "same" || !c.Gated || c.Reason != "" {
		t.Errorf("failed 0 → 0: %+v", c)
	}
	cur = synth(2, level{conc: 1, n: 24, ttft: 20, tpot: 2, sd: 0.05, failed: 1})
	res, _ = Compare(base, cur, Options{Threshold: 0.05, Family: failed})
	if c := row(t, res, "c=1", "failed"); c.Verdict != "inconclusive" {
		t.Errorf("failed 0 → 1 of 24: %+v", c)
	}
}

// TestShownMostImportantFirst: the rows shown are what was judged worse,
// the worst first, then better, the largest first; --all adds the rest,
// and the rest line counts what was left out.
func TestShownMostImportantFirst(t *testing.T) {
	base := synth(1, level{conc: 1, n: 100, ttft: 20, tpot: 2, sd: 0.05}, level{conc: 4, n: 100, ttft: 20, tpot: 2, sd: 0.05})
	cur := synth(2, level{conc: 1, n: 100, ttft: 20, tpot: 2.3, sd: 0.05}, level{conc: 4, n: 100, ttft: 15, tpot: 2.8, sd: 0.05})
	fam, _ := ChosenFamily("failed,ttft_p50_ms,ttft_p99_ms,tpot_p50_ms,tpot_mean_ms,e2e_p50_ms")
	res, err := Compare(base, cur, Options{Threshold: 0.05, Family: fam})
	if err != nil {
		t.Fatal(err)
	}
	rows, rest := res.Shown(false)
	if len(rows) == 0 || rows[0].Label != "c=4" || rows[0].Verdict != "worse" {
		t.Fatalf("first row %+v", rows)
	}
	seenBetter := false
	for i, f := range rows {
		if f.Verdict != "worse" && f.Verdict != "better" {
			t.Errorf("default view shows %s %s %s", f.Label, f.Metric, f.Verdict)
		}
		seenBetter = seenBetter || f.Verdict == "better"
		if f.Verdict == "worse" && seenBetter {
			t.Errorf("worse after better at row %d", i)
		}
		if i > 0 && f.Verdict == rows[i-1].Verdict && size(&f.Comparison) > size(&rows[i-1].Comparison) {
			t.Errorf("row %d (%s %s) changed more than the row before it", i, f.Label, f.Metric)
		}
	}
	all, none := res.Shown(true)
	n := 0
	for _, l := range res.Levels {
		n += len(l.Rows)
	}
	if len(all) != n || len(none) != 0 || len(rows)+rest["same"]+rest["inconclusive"]+rest["not judged"] != n ||
		!strings.HasPrefix(RestLine(rest, "--all"), "Not shown: ") {
		t.Errorf("--all %d of %d rows, rest %v", len(all), n, rest)
	}
}

// TestLimitChanges: compare says, per stage both runs have, how what limits
// the server changed, from each run's diagnosis; the same cause, or a
// stage only one run has, says nothing.
func TestLimitChanges(t *testing.T) {
	diag := func(cause, from string) *result.Diagnosis {
		return &result.Diagnosis{Cause: cause, Findings: []result.Finding{{Cause: cause, From: from}}}
	}
	rep := func(ds ...*result.Diagnosis) *result.Report {
		r := &result.Report{}
		for i, d := range ds {
			r.Stages = append(r.Stages, result.Stage{Name: string(rune('a' + i)), Diagnosis: d})
		}
		return r
	}
	base := Run{Report: rep(diag(result.CauseKVCacheFull, "c=24"), diag(result.CauseBatchFull, "c=8"))}
	cur := Run{Report: rep(diag(result.CauseBatchFull, "c=16"), diag(result.CauseBatchFull, "c=8"), diag(result.CauseDecodeBound, "c=4"))}
	res, err := Compare(base, cur, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"stage a: The KV cache is no longer the limit: a full batch is, from c=16 (it was from c=24)."}
	if !slices.Equal(res.Limits, want) {
		t.Errorf("limits %q, want %q", res.Limits, want)
	}
}

// TestTTFATRowsOnlyWhenTheyDiffer: a level where nothing reasoned has its
// TTFAT equal to its TTFT in every statistic; its ttfat_* rows would repeat
// the ttft_* rows (and a gate judging both would count one change twice),
// so there are none. Where a run's TTFAT differs (a reasoning model), they
// are back.
func TestTTFATRowsOnlyWhenTheyDiffer(t *testing.T) {
	l := level{conc: 1, n: 60, ttft: 20, tpot: 2, sd: 0.05}
	base, cur := synth(1, l), synth(2, l)
	ttfat := func(res *Result) (n int) {
		for _, lv := range res.Levels {
			for _, c := range lv.Rows {
				if strings.HasPrefix(c.Metric, "ttfat_") {
					n++
				}
			}
		}
		return n
	}
	res, err := Compare(base, cur, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := ttfat(res); n != 0 || row(t, res, "c=1", "ttft_p95_ms").Metric == "" {
		t.Errorf("%d ttfat rows where TTFAT is TTFT", n)
	}
	p := &cur.Report.Stages[0].Points[0]
	p.TTFATP95Ms = result.Ptr(*p.TTFTP95Ms + 40) // it reasoned first
	if res, _ = Compare(base, cur, Options{}); ttfat(res) == 0 {
		t.Error("no ttfat rows where the new run's TTFAT differs")
	}
}

// TestDiagnosticsAreNeverRegressions (issue 38, item 9): a TTFT 20% better
// whose part the server does not account for tripled (the server's own
// prompt time fell from 90% of it to 50%) is better; the overhead is shown
// with its change and no verdict, never gated, and the largest significant
// regression is none, so --fail-above 10 passes.
func TestDiagnosticsAreNeverRegressions(t *testing.T) {
	base := synth(1, level{conc: 4, n: 200, ttft: 100, tpot: 5, sd: 0.1, prompt: 0.9})
	cur := synth(2, level{conc: 4, n: 200, ttft: 80, tpot: 5, sd: 0.1, prompt: 0.5})
	res, err := Compare(base, cur, Options{Threshold: DefaultThreshold})
	if err != nil {
		t.Fatal(err)
	}
	if c := row(t, res, "c=4", "ttft_p50_ms"); c.Verdict != "better" {
		t.Errorf("TTFT 20%% faster: %+v", c)
	}
	o := row(t, res, "c=4", "ttft_overhead_p50_ms")
	if o.Verdict != "" || o.Gated || o.Rel == nil || *o.Rel < 1.5 {
		t.Errorf("the overhead tripled: shown with its change, never judged: %+v", o)
	}
	if f, ok := res.WorstRegression(); ok {
		t.Errorf("a regression named: %+v", f)
	}
	if bad := res.Failures(0.10); len(bad) != 0 {
		t.Errorf("--fail-above 10 fails on %+v", bad)
	}
	if err := scenario.GateableMetric("ttft_overhead_p50_ms"); err == nil || !strings.Contains(err.Error(), "is a diagnostic") {
		t.Errorf("worse() on a diagnostic: %v", err)
	}
}
