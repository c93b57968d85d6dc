package stopping

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/checks"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// stage builds a stage with until: settings and level checks, compiled.
func stage(t *testing.T, u scenario.UntilPlan, conc []int, exprs ...string) *scenario.Stage {
	t.Helper()
	st := &scenario.Stage{Name: "s", Concurrency: conc}
	for _, e := range exprs {
		c := &scenario.Check{Name: e, Expr: e}
		if err := c.Compile(); err != nil {
			t.Fatal(err)
		}
		st.Checks = append(st.Checks, c)
	}
	if u.Confidence == 0 {
		u.Confidence = scenario.DefaultConfidence
	}
	if u.Undecided == "" {
		u.Undecided = scenario.DefaultUndecided
	}
	st.SetUntil(&u)
	return st
}

// lvl is a level of n requests at conc streams whose TTFT is lognormal
// around ttft ms (log-sd sigma), each taking e2e ms and giving tokens
// output tokens, over wall: its point and its samples, as the report
// makes them.
type lvl struct {
	idx, conc, n, tokens int
	ttft, sigma, e2e     float64
	wall                 time.Duration
	seed                 uint64
	rate                 *float64
	achieved             time.Duration // open loop: the span of its sends (0: on schedule)
}

func (l lvl) make(t *testing.T) (*result.Point, *aggregate.Samples) {
	t.Helper()
	r := rand.New(rand.NewPCG(l.seed, 1))
	spec := result.LevelSpec{Label: "c=" + strconv.Itoa(l.conc), Concurrency: l.conc, OutputTokens: l.tokens, Pinned: true, Until: "decided"}
	if l.rate != nil {
		spec.Label, spec.Rate, spec.Concurrency = "rate="+strconv.FormatFloat(*l.rate, 'g', -1, 64), l.rate, 0
	}
	st := aggregate.NewStage(0)
	st.KeepSamples()
	rec := &result.LevelRecord{Level: l.idx, Spec: spec, Start: t0, End: t0.Add(l.wall), WallNs: int64(l.wall)}
	st.LevelStarted(rec)
	span := l.achieved
	if span == 0 && l.rate != nil {
		span = time.Duration(float64(l.n-1) / *l.rate * float64(time.Second))
	}
	for i := range l.n {
		ttft := l.ttft * math.Exp(l.sigma*r.NormFloat64())
		e2e := ttft + (l.e2e-l.ttft)*math.Exp(0.05*r.NormFloat64())
		tpot := (e2e - ttft) / float64(l.tokens-1)
		start := t0
		if l.n > 1 {
			start = t0.Add(span * time.Duration(i) / time.Duration(l.n-1))
		}
		st.Request(&result.Request{Level: l.idx, Seq: i, Concurrency: l.conc, Start: start, OK: true, TTFTMs: &ttft, E2EMs: e2e, TPOTMs: &tpot,
			OutputTokens: l.tokens, Chunks: l.tokens, UsageReported: true, FinishReason: "length"})
	}
	p := st.LevelDone(rec)
	return &p, st.Samples(p.Label())
}

func TestLookDecidesFarThresholdsEarly(t *testing.T) {
	st := stage(t, scenario.UntilPlan{Rules: scenario.UntilRules{Each: "decided"}}, []int{1}, "ttft_p95_ms < 500", "failed == 0")
	rules := New(st)
	rule := scenario.UntilRule{Decided: true}
	// TTFT p95 near 60 ms against 500 ms: decided as soon as the sequence
	// bounds a p95 (81 requests), passing; failed == 0 holds nothing.
	for _, n := range []int{40, 80, 81, 120} {
		p, smp := lvl{conc: 1, n: n, tokens: 8, ttft: 50, sigma: 0.1, e2e: 120, wall: time.Duration(n) * 120 * time.Millisecond}.make(t)
		p.Anytime = rules.Intervals(p, rule, smp)
		stop := rules.Look(0, p, n)
		if want := n >= 81; (stop != nil) != want {
			t.Errorf("n=%d: stop %+v, want a stop: %v", n, stop, want)
			continue
		}
		if stop != nil && (stop.Reason != result.StopDecided || !slices.Equal(stop.By, []string{"ttft_p95_ms < 500"}) || stop.Requests != n) {
			t.Errorf("n=%d: stop %+v", n, stop)
		}
	}
	// The same level against a threshold at its p95 is not decided.
	st = stage(t, scenario.UntilPlan{Rules: scenario.UntilRules{Each: "decided"}}, []int{1}, "ttft_p95_ms < 58.5")
	rules = New(st)
	p, smp := lvl{conc: 1, n: 400, tokens: 8, ttft: 50, sigma: 0.1, e2e: 120, wall: 48 * time.Second}.make(t)
	p.Anytime = rules.Intervals(p, rule, smp)
	if stop := rules.Look(0, p, 400); stop != nil {
		t.Errorf("a threshold at the p95 was decided: %+v (interval %s)", stop, p.Anytime[0].Text())
	}
	if decided, _ := checks.Decide(st.Checks[0], p, 0.95); decided {
		t.Error("checks.Decide agrees it is not decided")
	}
}

func TestLookPrecise(t *testing.T) {
	st := stage(t, scenario.UntilPlan{Rules: scenario.UntilRules{Each: "ttft_p50_ms within 5%"}}, []int{1})
	rules := New(st)
	rule := scenario.UntilRule{Metric: "ttft_p50_ms", Within: 0.05}
	first := 0
	for n := 20; n <= 2000 && first == 0; n += 20 {
		p, smp := lvl{conc: 1, n: n, tokens: 8, ttft: 50, sigma: 0.2, e2e: 120, wall: time.Duration(n) * 120 * time.Millisecond, seed: 3}.make(t)
		p.Anytime = rules.Intervals(p, rule, smp)
		if stop := rules.Look(0, p, n); stop != nil {
			if stop.Reason != result.StopPrecise || stop.By[0] != "ttft_p50_ms" {
				t.Fatalf("stop %+v", stop)
			}
			first = n
		}
	}
	// A median of a log-sd 0.2 latency within ±5% at 95%, time-uniformly,
	// takes some hundreds of requests: a fixed-size interval would need
	// about (1.96 · 0.2 · 1.25 / 0.05)² ≈ 96.
	if first < 96 || first > 1200 {
		t.Errorf("precise at %d requests, want between 96 and 1200", first)
	}
}

func TestMin(t *testing.T) {
	st := stage(t, scenario.UntilPlan{Rules: scenario.UntilRules{Each: "decided"}}, []int{1, 32}, "ttft_p99_ms < 500", "tpot_p50_ms < 9")
	rules := New(st)
	p := &result.Point{Concurrency: 1}
	if got := rules.Min(0, p, scenario.UntilRule{Decided: true}); got != 100 {
		t.Errorf("a p99: min %d, want 100", got)
	}
	st = stage(t, scenario.UntilPlan{Rules: scenario.UntilRules{Each: "decided"}}, []int{1, 64}, "tpot_p50_ms < 9", "tpot_mean_ms < 9")
	rules = New(st)
	if got := rules.Min(0, p, scenario.UntilRule{Decided: true}); got != 5 {
		t.Errorf("a p50 (and a mean, which no interval decides): min %d, want 5", got)
	}
	if got := rules.Min(1, &result.Point{Concurrency: 64}, scenario.UntilRule{Decided: true}); got != 64 {
		t.Errorf("c=64: min %d, want its concurrency", got)
	}
	st = stage(t, scenario.UntilPlan{Rules: scenario.UntilRules{Each: "decided"}, MaxRequests: scenario.PerLevel{Each: 50}}, []int{1}, "ttft_p99_ms < 500")
	if got := New(st).Min(0, p, scenario.UntilRule{Decided: true}); got != 50 {
		t.Errorf("capped below the p99's need: min %d, want max_requests 50", got)
	}
	st = stage(t, scenario.UntilPlan{Rules: scenario.UntilRules{Each: "decided"}, MinRequests: scenario.PerLevel{List: []int{7, 200}}}, []int{1, 8}, "ttft_p99_ms < 500")
	if got := New(st).Min(1, p, scenario.UntilRule{Decided: true}); got != 200 {
		t.Errorf("the plan's min_requests: %d, want 200", got)
	}
}

// TestFinishCapped: a level that reached its cap undecided lists the
// checks left undecided, and its checks read what undecided: asks.
func TestFinishCapped(t *testing.T) {
	for _, c := range []struct {
		rule   scenario.Undecided
		status string
	}{{scenario.UndecidedPoint, result.StatusFail}, {scenario.UndecidedStatus, result.StatusUndecided}, {scenario.UndecidedFail, result.StatusFail}} {
		st := stage(t, scenario.UntilPlan{Rules: scenario.UntilRules{Each: "decided"}, Undecided: c.rule}, []int{1}, "ttft_p50_ms < 50", "ttft_p95_ms < 500")
		p, smp := lvl{conc: 1, n: 200, tokens: 8, ttft: 50, sigma: 0.1, e2e: 120, wall: 24 * time.Second, seed: 9}.make(t)
		p.Stop = &result.LevelStop{Rule: "decided", Reason: result.StopCapped, Cap: "max_requests"}
		New(st).Finish(0, p, smp)
		if !slices.Equal(p.Stop.Undecided, []string{"ttft_p50_ms < 50"}) {
			t.Fatalf("undecided %v, want the p50 check only", p.Stop.Undecided)
		}
		res := &result.Stage{Name: "s", Points: []result.Point{*p}}
		out := checks.EvaluateStage(st, res, nil)
		o := out[0]
		if !o.Undecided || o.Status != c.status || !strings.Contains(o.Message, "undecided when the level stopped (capped, undecided): ttft_p50_ms [") {
			t.Errorf("%s: outcome %+v", c.rule, o)
		}
		if out[1].Undecided || out[1].Status != result.StatusPass {
			t.Errorf("%s: the decided check: %+v", c.rule, out[1])
		}
	}
}

// TestFinishFixed: a fixed level of a stage with until: says so, and its
// checks are judged as any fixed level's.
func TestFinishFixed(t *testing.T) {
	st := stage(t, scenario.UntilPlan{Rules: scenario.UntilRules{List: []string{"fixed", "decided"}}}, []int{1, 2}, "ttft_p50_ms < 50")
	p, smp := lvl{conc: 1, n: 10, tokens: 8, ttft: 50, sigma: 0.1, e2e: 120, wall: time.Second}.make(t)
	New(st).Finish(0, p, smp)
	if p.Stop == nil || p.Stop.Reason != result.StopFixed || p.Anytime != nil {
		t.Errorf("fixed level: stop %+v, intervals %v", p.Stop, p.Anytime)
	}
	o := checks.EvaluateStage(st, &result.Stage{Points: []result.Point{*p}}, nil)[0]
	if o.Undecided {
		t.Errorf("a fixed level's check is undecided: %+v", o)
	}
}

func TestSaturated(t *testing.T) {
	st := stage(t, scenario.UntilPlan{StopAtSaturation: true}, []int{8, 16, 32})
	rules := New(st)
	at := func(conc, n int, ttft, e2e float64, wallS float64) Level {
		p, smp := lvl{conc: conc, n: n, tokens: 16, ttft: ttft, sigma: 0.1, e2e: e2e, wall: time.Duration(wallS * float64(time.Second)), seed: uint64(conc)}.make(t)
		return Level{Point: p, Samples: smp}
	}
	// c=8 → c=16 below saturation: twice the throughput, same latency.
	c8 := at(8, 160, 20, 100, 2)
	c16 := at(16, 320, 20, 100, 2)
	if s := rules.Saturated(c8, c16, 3); s != nil {
		t.Errorf("growing throughput stopped the sweep: %+v", s)
	}
	// c=16 → c=32 past it: the same throughput (twice the E2E, so the same
	// wall for twice the streams), TTFT three times longer.
	c32 := at(32, 320, 60, 200, 2)
	s := rules.Saturated(c16, c32, 3)
	if s == nil {
		t.Fatal("flat throughput and growing TTFT did not stop the sweep")
	}
	if s.Reason != result.SweepSaturated || s.Level != "c=16" || s.Shown != "c=32" || len(s.Evidence) != 2 ||
		s.Evidence[0].Metric != "output_tps_total" || s.Evidence[1].Metric != "ttft_p50_ms" || *s.Evidence[1].Low <= 0 {
		t.Errorf("stop %+v", s)
	}
	if !strings.Contains(s.Text, "saturated at c=16: at c=32 Out tok/s changed") || !strings.Contains(s.Text, "while TTFT p50 grew +") {
		t.Errorf("text: %s", s.Text)
	}
	// Flat throughput with flat latency is not shown to be saturated.
	if s := rules.Saturated(c16, at(32, 320, 20, 200, 2), 3); s != nil {
		t.Errorf("flat latency stopped the sweep: %+v", s)
	}
	// Too few waves to tell: goes on.
	if s := rules.Saturated(at(16, 32, 20, 100, 0.2), at(32, 64, 60, 200, 0.4), 3); s != nil {
		t.Errorf("two waves stopped the sweep: %+v", s)
	}
	if s := New(stage(t, scenario.UntilPlan{}, []int{16, 32})).Saturated(c16, c32, 2); s != nil {
		t.Error("a stage without stop_at_saturation stopped")
	}
}

func TestSaturatedSchedule(t *testing.T) {
	st := stage(t, scenario.UntilPlan{StopAtSaturation: true}, nil)
	rules := New(st)
	rate := 10.0
	p, smp := lvl{n: 100, tokens: 16, ttft: 20, sigma: 0.1, e2e: 100, wall: 20 * time.Second, rate: &rate, achieved: 14 * time.Second}.make(t)
	s := rules.Saturated(Level{}, Level{Point: p, Samples: smp}, 3)
	if s == nil || s.Reason != result.SweepSchedule || s.Level != "" || !strings.Contains(s.Text, "requests went out at 7.071/s of the 10/s offered") {
		t.Errorf("stop %+v", s)
	}
	p, smp = lvl{n: 100, tokens: 16, ttft: 20, sigma: 0.1, e2e: 100, wall: 10 * time.Second, rate: &rate}.make(t)
	if s := rules.Saturated(Level{}, Level{Point: p, Samples: smp}, 3); s != nil {
		t.Errorf("a level on schedule stopped: %+v", s)
	}
}

// TestMinWithSaturation: a sweep that stops at saturation sends each until
// level at least three waves, so its throughput can be compared.
func TestMinWithSaturation(t *testing.T) {
	st := stage(t, scenario.UntilPlan{Rules: scenario.UntilRules{Each: "decided"}, StopAtSaturation: true}, []int{1, 64}, "ttft_p50_ms < 500")
	if got := New(st).Min(1, &result.Point{Concurrency: 64}, scenario.UntilRule{Decided: true}); got != 192 {
		t.Errorf("c=64: min %d, want 3 waves (192)", got)
	}
}
