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
			e2e := ttft + 63*tpot
			req := &result.Request{Stage: "s", Level: i, Seq: k, OK: k >= l.failed, E2EMs: e2e}
			if l.reps > 1 {
				req.Replicate = k * l.reps / l.n
				repWall[req.Replicate] += e2e
			}
			if req.OK {
				req.TTFTMs, req.TPOTMs, req.OutputTokens, req.InputTokens = &ttft, &tpot, 64, 128
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

// TestFamilyAndWhatIsNeverJudged: the family counts the server metrics
// with enough samples, each interval at its Bonferroni confidence; the
// client's diagnostics and neutral metrics get no verdict; a p99 of 32
// requests and a maximum are inconclusive and outside the family.
func TestFamilyAndWhatIsNeverJudged(t *testing.T) {
	base := synth(1, level{conc: 1, n: 32, ttft: 20, tpot: 2, sd: 0.05}, level{conc: 16, n: 32, ttft: 20, tpot: 2, sd: 0.05})
	cur := synth(2, level{conc: 1, n: 32, ttft: 20, tpot: 2, sd: 0.05}, level{conc: 16, n: 32, ttft: 20, tpot: 2, sd: 0.05})
	cur.Report.Stages[0].Points[0].ClientCPUPercent = result.Ptr(50.0)
	base.Report.Stages[0].Points[0].ClientCPUPercent = result.Ptr(5.0)
	res, err := Compare(base, cur, Options{Confidence: 0.9})
	if err != nil {
		t.Fatal(err)
	}
	gated := 0
	for _, l := range res.Levels {
		for _, c := range l.Rows {
			if c.Gated {
				gated++
			}
		}
	}
	if gated == 0 || res.Summary.Gated != gated || res.Summary.Each != stats.FamilyConfidence(0.9, gated) || !res.Summary.Records {
		t.Errorf("summary %+v, %d gated rows", res.Summary, gated)
	}
	if c := row(t, res, "c=1", "client_cpu_percent"); c.Verdict != "" || c.Rel == nil || *c.Rel != 9 {
		t.Errorf("client diagnostic: %+v", c)
	}
	if c := row(t, res, "c=1", "duration_s"); c.Verdict != "" {
		t.Errorf("neutral metric judged: %+v", c)
	}
	if c := row(t, res, "c=1", "ttft_p99_ms"); c.Gated || (c.Verdict != "same" && !strings.Contains(c.Reason, "too few samples: p99 needs 100")) {
		t.Errorf("p99 of 32: %+v", c)
	}
	if c := row(t, res, "c=1", "ttft_max_ms"); c.Verdict != "inconclusive" || !strings.Contains(c.Reason, "maximum") || c.Gated {
		t.Errorf("maximum: %+v", c)
	}
	if c := row(t, res, "c=1", "output_tps_total"); !c.Gated {
		t.Errorf("the rate of 32 waves is in the family: %+v", c)
	}
	if c := row(t, res, "c=16", "output_tps_total"); c.Gated || (c.Verdict != "same" && !strings.Contains(c.Reason, "too few waves")) {
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
	if c.Verdict != "inconclusive" || c.Gated || !strings.Contains(c.Reason, "client was the bottleneck in the new run") || c.Interval == nil {
		t.Errorf("bottleneck level: %+v", c)
	}
	if len(res.Failures(0)) != 0 || res.Summary.Gated != 0 {
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
	got := fmt.Sprint(PlanWants(p, stages))
	want := "[{a [c=1 c=8]} {b [rate=0.5 rate=4]} {c [c=4 c=4 turn=1 c=4 turn=2]}]"
	if got != want {
		t.Errorf("wants %s, want %s", got, want)
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
