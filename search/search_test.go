package search

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
)

// server is a model of an endpoint's metrics against load, for driving the
// search without sending a request: each probe draws its metrics around the
// model's values with relative noise.
type server struct {
	tpot     func(x float64) float64 // tpot_p50_ms
	ttft     func(x float64) float64 // ttft_p95_ms
	goodput  func(x float64) float64 // share of requests meeting the SLO
	noise    float64                 // relative standard deviation of each probe's value
	requests int                     // requests per probe
	lowConf  bool                    // mark the percentiles low-confidence
	rng      *rand.Rand
}

func (s *server) probe(cfg *scenario.Search, n int, x float64) result.Point {
	jitter := func(v float64) *float64 { return result.Ptr(v * (1 + s.noise*s.rng.NormFloat64())) }
	p := result.Point{Probe: n, NRequests: s.requests, Completed: s.requests, DurationS: 2}
	if cfg.Over == scenario.OverRate {
		p.Rate = result.Ptr(x)
	} else {
		p.Concurrency = int(x)
	}
	if s.tpot != nil {
		p.TPOTP50Ms = jitter(s.tpot(x))
	}
	if s.ttft != nil {
		p.TTFTP95Ms = jitter(s.ttft(x))
	}
	if s.goodput != nil {
		good := 0
		for range s.requests {
			if s.rng.Float64() < s.goodput(x) {
				good++
			}
		}
		p.Goodput = result.Ptr(result.Round(float64(good)/float64(s.requests), 4))
	}
	if s.lowConf {
		p.LowConfidence = []string{"ttft_p95_ms", "tpot_p50_ms"}
	}
	p.OutputTPSTotal = 100 * x
	return p
}

// run drives a search against the model until it stops, and returns its
// last decision and its probes.
func run(t *testing.T, cfg *scenario.Search, s *server) (Decision, []result.Point) {
	t.Helper()
	var points []result.Point
	for {
		d := Decide(cfg, points)
		if d.Stop != "" {
			return d, points
		}
		if len(points) > 1000 {
			t.Fatal("the search does not stop")
		}
		points = append(points, s.probe(cfg, len(points)+1, d.Next))
	}
}

// config is a compiled search over concurrency.
func config(t *testing.T, over scenario.Over, lo, hi, step float64, probes int, targets ...string) *scenario.Search {
	t.Helper()
	repeats := 3
	cfg := &scenario.Search{Over: over, Min: lo, Max: hi, Step: step, Repeats: &repeats, Budget: scenario.Budget{Probes: probes}}
	for i := 0; i+1 < len(targets); i += 2 {
		cfg.Targets = append(cfg.Targets, &scenario.Target{Name: targets[i], Expr: targets[i+1]})
	}
	if err := cfg.Compile(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func outcome(t *testing.T, d Decision, name string) result.SearchTarget {
	t.Helper()
	for _, tg := range d.Result.Targets {
		if tg.Name == name {
			return tg
		}
	}
	t.Fatalf("no target %s in %+v", name, d.Result)
	return result.SearchTarget{}
}

// probesAt counts the probes at each load.
func probesAt(points []result.Point) map[int]int {
	out := map[int]int{}
	for _, p := range points {
		out[p.Concurrency]++
	}
	return out
}

// TestTiersFound: two targets with known boundaries (TPOT grows linearly,
// TTFT jumps past the batch limit of 12), found within the precision, each
// decision confident, with one search serving both.
func TestTiersFound(t *testing.T) {
	cfg := config(t, scenario.OverConcurrency, 1, 256, 1, 40,
		"interactive", "tpot_p50_ms < 4.75", "batch", "ttft_p95_ms < 50")
	s := &server{
		tpot:     func(c float64) float64 { return 2 + 0.5*(c-1) }, // < 4.75 up to c = 6
		ttft:     func(c float64) float64 { return map[bool]float64{true: 5, false: 150}[c <= 12] },
		noise:    0.01,
		requests: 100,
		rng:      rand.New(rand.NewPCG(1, 2)),
	}
	d, points := run(t, cfg, s)
	if d.Stop != result.SearchStopDone {
		t.Fatalf("stop %q after %d probes", d.Stop, len(points))
	}
	for name, want := range map[string]float64{"interactive": 6, "batch": 12} {
		tg := outcome(t, d, name)
		if tg.Status != result.SearchFound || tg.Capacity == nil || *tg.Capacity != want || !tg.Confident {
			t.Errorf("%s: %+v, want capacity %g, confident", name, tg, want)
		}
		if tg.Pass.Load != want || tg.Fail.Load != want+1 {
			t.Errorf("%s: bracket %g..%g", name, tg.Pass.Load, tg.Fail.Load)
		}
		if tg.AtCapacity["output_tps_total"] != 100*want {
			t.Errorf("%s: at capacity %v", name, tg.AtCapacity)
		}
	}
	// Bracketing 1..16 is 5 probes and bisecting two brackets of 8 is 3
	// each; every load near TPOT's boundary (within the noise prior) is
	// repeated until its interval clears it.
	if len(points) < 11 || len(points) > 30 {
		t.Errorf("%d probes: %v", len(points), probesAt(points))
	}
	t.Logf("%d probes, per load %v", len(points), probesAt(points))
}

// TestNoisyBoundaryRepeated: a load whose TPOT sits within the run-to-run
// noise of the target is probed again, never decided by one probe, and the
// decision says whether it became clear.
func TestNoisyBoundaryRepeated(t *testing.T) {
	cfg := config(t, scenario.OverConcurrency, 1, 64, 1, 40, "interactive", "tpot_p50_ms < 10")
	s := &server{
		tpot:     func(c float64) float64 { return 2 + 0.25*(c-1) }, // c=33 gives 10.0: the boundary itself
		noise:    0.03,
		requests: 100,
		rng:      rand.New(rand.NewPCG(3, 4)),
	}
	d, points := run(t, cfg, s)
	at := probesAt(points)
	tg := outcome(t, d, "interactive")
	if tg.Status != result.SearchFound || tg.Capacity == nil {
		t.Fatalf("%+v (probes %v)", tg, at)
	}
	// The true boundary is c = 33 (TPOT 10.0, exactly the bound): the
	// capacity may be 32 or 33 within the noise, never further off.
	if c := *tg.Capacity; c < 31 || c > 33 {
		t.Errorf("capacity %g, want 32 ± 1 (probes %v)", c, at)
	}
	if at[32]+at[33] < 3 {
		t.Errorf("the loads at the boundary were not re-measured: %v", at)
	}
	for _, l := range []*result.SearchLoad{tg.Pass, tg.Fail} {
		if len(l.Probes) < 2 && math.Abs(l.Load-33) <= 1 {
			t.Errorf("%s next to the boundary decided by one probe %v", l.Label, l.Probes)
		}
		if !l.Confident && !strings.Contains(strings.Join(tg.Notes, "\n"), l.Label+" stayed statistically unclear") {
			t.Errorf("unclear %s without a note: %v", l.Label, tg.Notes)
		}
	}
	t.Logf("probes %v; %s", at, tg.Notes)
}

// TestBudgetRunsOut: a search stopped by its budget reports its bracket and
// no capacity, whichever bound stopped it.
func TestBudgetRunsOut(t *testing.T) {
	s := &server{tpot: func(c float64) float64 { return 1 + 0.1*c }, noise: 0.01, requests: 50, rng: rand.New(rand.NewPCG(5, 6))}
	cfg := config(t, scenario.OverConcurrency, 1, 256, 1, 6, "t", "tpot_p50_ms < 10") // boundary at c = 89
	d, points := run(t, cfg, s)
	tg := outcome(t, d, "t")
	if d.Stop != result.SearchStopProbeBudget || len(points) != 6 || d.Result.Probes != 6 {
		t.Fatalf("stop %q after %d probes", d.Stop, len(points))
	}
	if tg.Status != result.SearchUnresolved || tg.Capacity != nil || tg.Confident {
		t.Errorf("budget ran out but %+v", tg)
	}
	if tg.Pass == nil || tg.Pass.Load != 32 || tg.Fail != nil {
		t.Errorf("bracket after 1,2,4,8,16,32: %+v %+v", tg.Pass, tg.Fail)
	}
	cfg = config(t, scenario.OverConcurrency, 1, 256, 1, 100, "t", "tpot_p50_ms < 10")
	cfg.Budget.Time = scenario.Duration(7 * time.Second) // probes measure 2 s each
	d, points = run(t, cfg, s)
	if d.Stop != result.SearchStopTimeBudget || len(points) != 4 || d.Result.ProbeTimeS != 8 {
		t.Fatalf("time budget: stop %q after %d probes, %g s", d.Stop, len(points), d.Result.ProbeTimeS)
	}
	if tg := outcome(t, d, "t"); tg.Capacity != nil || tg.Status != result.SearchUnresolved {
		t.Errorf("time budget ran out but %+v", tg)
	}
}

// TestOutOfRange: a target that holds at max has max as its capacity (a
// lower bound, said by the status); one that fails at min has none.
func TestOutOfRange(t *testing.T) {
	s := &server{tpot: func(c float64) float64 { return 2 + 0.01*c }, noise: 0.01, requests: 50, rng: rand.New(rand.NewPCG(7, 8))}
	cfg := config(t, scenario.OverConcurrency, 2, 40, 1, 30, "easy", "tpot_p50_ms < 100", "impossible", "tpot_p50_ms < 1")
	d, points := run(t, cfg, s)
	easy, impossible := outcome(t, d, "easy"), outcome(t, d, "impossible")
	if easy.Status != result.SearchAboveMax || easy.Capacity == nil || *easy.Capacity != 40 || !easy.Confident {
		t.Errorf("easy: %+v", easy)
	}
	if impossible.Status != result.SearchBelowMin || impossible.Capacity != nil || impossible.Fail.Load != 2 || !impossible.Confident {
		t.Errorf("impossible: %+v", impossible)
	}
	// 2, 4, 8, 16, 32, 40, and 2 and 40 again: the outcomes rest on them.
	if at := probesAt(points); d.Stop != result.SearchStopDone || len(points) != 8 || at[2] != 2 || at[40] != 2 {
		t.Errorf("stop %q after probes %v", d.Stop, at)
	}
}

// TestGoodputWilson: goodput is judged by its Wilson interval: a load whose
// share straddles the bound is repeated (pooling requests narrows it), a
// load far from it is decided at once.
func TestGoodputWilson(t *testing.T) {
	s := &server{
		goodput:  func(c float64) float64 { return map[bool]float64{true: 0.995, false: 0.5}[c <= 20] },
		requests: 200,
		rng:      rand.New(rand.NewPCG(9, 10)),
	}
	cfg := config(t, scenario.OverConcurrency, 1, 64, 1, 40, "good", "goodput >= 0.95")
	d, points := run(t, cfg, s)
	tg := outcome(t, d, "good")
	if tg.Capacity == nil || *tg.Capacity != 20 || !tg.Confident {
		t.Fatalf("%+v, probes %v", tg, probesAt(points))
	}
	e := tg.Pass.Estimates[0]
	if e.Interval != result.IntervalWilson || *e.Low < 0.95 || *e.High > 1 {
		t.Errorf("estimate at capacity %+v", e)
	}
	lo, hi := wilson(190, 200) // 0.95 observed: the bound is inside
	if !(lo < 0.95 && hi > 0.95) || math.Abs(lo-0.9103) > 1e-3 || math.Abs(hi-0.9728) > 1e-3 {
		t.Errorf("wilson(190, 200) = %.4f..%.4f, want 0.9103..0.9728", lo, hi)
	}
}

// TestLowConfidenceRepeated: a probe whose percentiles were drawn from too
// few samples decides nothing alone; its load is probed again and its
// decision rests on the repeats' spread.
func TestLowConfidenceRepeated(t *testing.T) {
	s := &server{tpot: func(c float64) float64 { return 1 + c }, noise: 0.01, requests: 10, lowConf: true, rng: rand.New(rand.NewPCG(11, 12))}
	cfg := config(t, scenario.OverConcurrency, 1, 16, 1, 60, "t", "tpot_p50_ms < 6.5")
	d, points := run(t, cfg, s)
	tg := outcome(t, d, "t")
	if tg.Capacity == nil || *tg.Capacity != 5 {
		t.Fatalf("%+v", tg)
	}
	for c, n := range probesAt(points) {
		if n < 2 {
			t.Errorf("c=%d decided on one low-confidence probe", c)
		}
	}
}

// TestRateSearch: a rate search bisects geometrically to a relative
// precision.
func TestRateSearch(t *testing.T) {
	s := &server{tpot: func(r float64) float64 { return 10 * math.Exp(r/20) }, noise: 0.005, requests: 100, rng: rand.New(rand.NewPCG(13, 14))}
	cfg := config(t, scenario.OverRate, 0.5, 100, 0.05, 40, "t", "tpot_p50_ms < 30") // 20 ln 3 = 21.97 req/s
	d, points := run(t, cfg, s)
	tg := outcome(t, d, "t")
	if tg.Capacity == nil || tg.Status != result.SearchFound {
		t.Fatalf("%+v", tg)
	}
	if c, f := *tg.Capacity, tg.Fail.Load; c > 21.97 || f < 21.97 || f > c*1.05*(1+1e-9) {
		t.Errorf("bracket %g..%g does not hold 21.97 within 5%%", c, f)
	}
	if !strings.HasPrefix(tg.Pass.Label, "rate=") {
		t.Errorf("label %q", tg.Pass.Label)
	}
	t.Logf("%d probes, bracket %s..%s", len(points), tg.Pass.Label, tg.Fail.Label)
}

// TestInterrupted: a search whose records end while it wanted another
// probe, or with an interrupted probe, reports no capacity and says so.
func TestInterrupted(t *testing.T) {
	s := &server{tpot: func(c float64) float64 { return c }, noise: 0.01, requests: 50, rng: rand.New(rand.NewPCG(15, 16))}
	cfg := config(t, scenario.OverConcurrency, 1, 64, 1, 40, "t", "tpot_p50_ms < 20")
	var points []result.Point
	for i := range 3 {
		points = append(points, s.probe(cfg, i+1, Decide(cfg, points).Next))
	}
	if d := Decide(cfg, points); d.Stop != "" || d.Result.Stop != result.SearchStopInterrupted {
		t.Errorf("cut between probes: stop %q, reported %q", d.Stop, d.Result.Stop)
	}
	points[2].Interrupted = true
	d := Decide(cfg, points)
	if d.Stop != result.SearchStopInterrupted || outcome(t, d, "t").Capacity != nil {
		t.Errorf("interrupted probe: %+v", d)
	}
}

// TestNotMonotone: a pass above the lowest failing load is named, and the
// bracket ends at that failure.
func TestNotMonotone(t *testing.T) {
	s := &server{tpot: func(c float64) float64 { return map[bool]float64{true: 50, false: 5}[c == 8] }, noise: 0.01, requests: 50, rng: rand.New(rand.NewPCG(17, 18))}
	cfg := config(t, scenario.OverConcurrency, 1, 64, 1, 40, "t", "tpot_p50_ms < 20")
	var points []result.Point
	for _, c := range []float64{1, 2, 4, 8, 16} {
		points = append(points, s.probe(cfg, len(points)+1, c))
	}
	d := Decide(cfg, points)
	tg := outcome(t, d, "t")
	if tg.Fail == nil || tg.Fail.Load != 8 || tg.Pass.Load != 4 || len(tg.Notes) == 0 || !strings.Contains(tg.Notes[0], "c=16 passed although c=8") {
		t.Errorf("%+v", tg)
	}
	if d.Next != 6 {
		t.Errorf("next %g, want the middle of 4..8", d.Next)
	}
}

// TestNullMetricFails: a load where no request succeeded (null metrics)
// fails the target clearly, once confirmed by a second probe.
func TestNullMetricFails(t *testing.T) {
	cfg := config(t, scenario.OverConcurrency, 1, 4, 1, 40, "t", "ttft_p95_ms < 20")
	points := []result.Point{{Probe: 1, Concurrency: 1, NRequests: 10, Failed: 10}}
	d := Decide(cfg, points)
	if tg := outcome(t, d, "t"); d.Stop != "" || d.Next != 1 || tg.Confident || !strings.Contains(tg.Notes[0], "c=1 was probed once") {
		t.Errorf("one probe: next %g stop %q %+v", d.Next, d.Stop, tg)
	}
	points = append(points, result.Point{Probe: 2, Concurrency: 1, NRequests: 10, Failed: 10})
	d = Decide(cfg, points)
	tg := outcome(t, d, "t")
	if d.Stop != result.SearchStopDone || tg.Status != result.SearchBelowMin || !tg.Confident || tg.Fail.Estimates[0].Value != nil {
		t.Errorf("%+v", tg)
	}
}

// TestOneAccidentDecidesNothing: one probe thrown far off (a stalled client
// tripling TPOT) at the load a capacity would rest on is probed again before
// the search is done; the second probe disagrees, and the bracket moves to
// where the server really is.
func TestOneAccidentDecidesNothing(t *testing.T) {
	cfg := config(t, scenario.OverConcurrency, 1, 64, 1, 60, "t", "tpot_p50_ms < 10")
	s := &server{tpot: func(c float64) float64 { return 2 + 0.25*(c-1) }, noise: 0.01, requests: 100, rng: rand.New(rand.NewPCG(19, 20))}
	var points []result.Point
	for {
		d := Decide(cfg, points)
		if d.Stop != "" {
			break
		}
		p := s.probe(cfg, len(points)+1, d.Next)
		if d.Next == 16 && probesAt(points)[16] == 0 {
			p.TPOTP50Ms = result.Ptr(3 * *p.TPOTP50Ms) // the accident: 17.25 ms, far past the bound
		}
		points = append(points, p)
	}
	tg := outcome(t, Decide(cfg, points), "t")
	if tg.Capacity == nil || *tg.Capacity < 31 || *tg.Capacity > 33 {
		t.Errorf("capacity %v, want 32 ± 1: the accident at c=16 decided it (probes %v)", tg.Capacity, probesAt(points))
	}
	if probesAt(points)[16] < 2 {
		t.Errorf("c=16 not probed again: %v", probesAt(points))
	}
}

func TestTQuantile(t *testing.T) {
	for dof, want := range map[float64]float64{1: 12.7062, 2: 4.3027, 10: 2.2281, 30: 2.0423, 31: 2.0395, 60: 2.0003, 1000: 1.9623} {
		if got := tQuantile(dof); math.Abs(got-want) > 2e-4 {
			t.Errorf("t(%g) = %.4f, want %.4f", dof, got, want)
		}
	}
}

// TestAccidentClipped: the probes a real search made at c=7 while the
// machine stalled once (TTFT p95 262.57 ms among 8.47 to 9.22): at a load
// probed three times or more, the odd probe weighs as a few typical
// deviations from the median, so the load passes a 9.8 ms bound instead of
// failing on a mean of 72 ms.
func TestAccidentClipped(t *testing.T) {
	cfg := config(t, scenario.OverConcurrency, 6, 8, 1, 40, "t", "ttft_p95_ms < 9.8")
	var points []result.Point
	for _, pv := range []struct {
		c int
		v float64
	}{{6, 8.24}, {6, 9.31}, {7, 262.57}, {7, 9.03}, {7, 8.47}, {7, 9.22}, {8, 10.31}, {8, 10.5}} {
		points = append(points, result.Point{Probe: len(points) + 1, Concurrency: pv.c, NRequests: 90, TTFTP95Ms: result.Ptr(pv.v)})
	}
	tg := outcome(t, Decide(cfg, points), "t")
	if tg.Pass == nil || tg.Pass.Load != 7 {
		t.Fatalf("c=7 did not pass: %+v", tg)
	}
	if e := tg.Pass.Estimates[0]; *e.Value > 10 || *e.High > 12 {
		t.Errorf("c=7 estimate %+v: the accident still weighs", e)
	}
}
