package runner

import (
	"github.com/rs/zerolog"

	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
)

// gapStats returns the mean gap (s) and squared coefficient of variation of
// the gaps between consecutive offsets.
func gapStats(offs []time.Duration) (mean, cv2 float64) {
	n := float64(len(offs) - 1)
	for i := 1; i < len(offs); i++ {
		mean += (offs[i] - offs[i-1]).Seconds()
	}
	mean /= n
	var v float64
	for i := 1; i < len(offs); i++ {
		d := (offs[i] - offs[i-1]).Seconds() - mean
		v += d * d
	}
	v /= n - 1
	return mean, v / (mean * mean)
}

func TestScheduleArrivals(t *testing.T) {
	const n = 40000
	for _, c := range []struct {
		arrival    scenario.Arrival
		burstiness float64
		rate       float64
		cv2        float64 // expected squared CV of the gaps
	}{
		{"poisson", 0, 50, 1},
		{"", 0, 200, 1}, // poisson is the default
		{"gamma", 1, 100, 1},
		{"gamma", 4, 100, 4},
		{"gamma", 0.25, 100, 0.25},
		{"constant", 0, 80, 0},
	} {
		offs := Schedule(7, c.rate, c.arrival, c.burstiness, n, 0)
		if len(offs) != n || offs[0] != 0 {
			t.Fatalf("%s: %d offsets, first %v", c.arrival, len(offs), offs[0])
		}
		if !slices.IsSorted(offs) {
			t.Fatalf("%s: offsets not sorted", c.arrival)
		}
		mean, cv2 := gapStats(offs)
		if math.Abs(mean*c.rate-1) > 0.03 {
			t.Errorf("%s b=%g: mean gap %.5f s at rate %g (want 1/rate within 3%%)", c.arrival, c.burstiness, mean, c.rate)
		}
		tol := 0.1 * c.cv2
		if c.cv2 == 0 {
			tol = 1e-9
		}
		if math.Abs(cv2-c.cv2) > tol {
			t.Errorf("%s b=%g: gap CV² %.4f, want %.4f", c.arrival, c.burstiness, cv2, c.cv2)
		}
	}
}

func TestScheduleConstantExact(t *testing.T) {
	offs := Schedule(1, 3, "constant", 0, 10000, 0)
	for i, o := range offs {
		want := time.Duration(math.Round(float64(i) / 3 * 1e9))
		if o != want {
			t.Fatalf("offset %d = %v, want %v", i, o, want)
		}
	}
}

func TestScheduleSeeded(t *testing.T) {
	a := Schedule(42, 100, "gamma", 2, 500, 0)
	b := Schedule(42, 100, "gamma", 2, 500, 0)
	c := Schedule(43, 100, "gamma", 2, 500, 0)
	if !slices.Equal(a, b) {
		t.Fatal("same seed gave different schedules")
	}
	if slices.Equal(a, c) {
		t.Fatal("different seeds gave the same schedule")
	}
	if p, q := Schedule(42, 100, "poisson", 0, 500, 0), Schedule(43, 100, "poisson", 0, 500, 0); slices.Equal(p, q) {
		t.Fatal("different seeds gave the same poisson schedule")
	}
}

func TestScheduleBounds(t *testing.T) {
	offs := Schedule(1, 1000, "poisson", 0, 0, 2*time.Second)
	if len(offs) < 1850 || len(offs) > 2150 {
		t.Fatalf("%d arrivals in 2 s at 1000/s", len(offs))
	}
	if offs[len(offs)-1] >= 2*time.Second {
		t.Fatalf("last arrival %v past the duration", offs[len(offs)-1])
	}
	if got := Schedule(1, 1000, "poisson", 0, 100, 2*time.Second); len(got) != 100 || !slices.Equal(got, offs[:100]) {
		t.Fatalf("requests bound: %d arrivals, or a different schedule", len(got))
	}
	if got := Schedule(1, 10, "constant", 0, 100, time.Second); len(got) != 10 {
		t.Fatalf("duration bound: %d arrivals, want 10", len(got))
	}
	if Schedule(1, 0, "poisson", 0, 10, 0) != nil || Schedule(1, 5, "poisson", 0, 0, 0) != nil {
		t.Fatal("a schedule without a rate or a bound")
	}
	if rateLevelTotal(0, 0, 12.5) != 125 || rateLevelTotal(7, time.Second, 5) != 7 || rateLevelTotal(0, time.Second, 5) != 0 {
		t.Fatal("rateLevelTotal")
	}
}

// rateStage is an open-loop stage over prompt set "p".
func rateStage(output int, arrival scenario.Arrival, rates ...float64) *scenario.Stage {
	return &scenario.Stage{
		Name: "open", Prompts: "p", API: "chat", Mode: "pinned",
		OutputTokens: scenario.Length{Fixed: output}, Rate: rates, Arrival: arrival,
	}
}

// dueOffsets returns each measured request's due time (actual send minus
// dispatch lag) relative to the first one's, in seq order.
func dueOffsets(rs []*result.Request) []float64 {
	due := func(r *result.Request) time.Time {
		return r.Start.Add(-time.Duration(r.DispatchLagMs * float64(time.Millisecond)))
	}
	out := make([]float64, len(rs))
	for i, r := range rs {
		out[i] = ms(due(r).Sub(due(rs[0])))
	}
	return out
}

// TestOpenLoopFollowsSchedule: requests leave on the seeded schedule, not
// when earlier ones finish (each takes far longer than the gap between
// arrivals), and the level reports its target and achieved rate.
func TestOpenLoopFollowsSchedule(t *testing.T) {
	cfg := fastSim()
	cfg.ITLMs = 5 // 30 tokens ≈ 150 ms per request, 15 gaps at 100/s
	s := startSim(t, cfg)
	e, col := newEngine(t, s.URL(), nil)
	st := rateStage(30, "poisson", 100)
	st.Requests.Each = 60
	seed := int64(9)
	st.Seed = &seed
	res := runStage(t, e, synthPlan(20, "reference"), st)
	if res.Load != "rate" || len(res.Points) != 1 {
		t.Fatalf("load %s, %d points", res.Load, len(res.Points))
	}
	p := res.Points[0]
	if p.Completed != 60 || p.Failed != 0 || p.Rate == nil || *p.Rate != 100 || p.Label() != "rate=100" {
		t.Fatalf("completed %d failed %d rate %v label %s (%v)", p.Completed, p.Failed, deref(p.Rate), p.Label(), p.Error)
	}
	sched := Schedule(seed, 100, "poisson", 0, 60, 0)
	rs := col.measured()
	if len(rs) != 60 {
		t.Fatalf("%d measured records", len(rs))
	}
	for i, d := range dueOffsets(rs) {
		if want := ms(sched[i]); math.Abs(d-want) > 0.01 {
			t.Fatalf("request %d due at %.3f ms, schedule says %.3f ms", i, d, want)
		}
		r := rs[i]
		if r.Rate != 100 || r.Concurrency != 0 || r.E2EFromScheduleMs == nil || r.TTFTFromScheduleMs == nil {
			t.Fatalf("record %d: rate %g conc %d from-schedule %v %v", i, r.Rate, r.Concurrency, r.E2EFromScheduleMs, r.TTFTFromScheduleMs)
		}
		if math.Abs(*r.E2EFromScheduleMs-(r.E2EMs+r.DispatchLagMs)) > 1e-6 || *r.TTFTFromScheduleMs < *r.TTFTMs {
			t.Fatalf("record %d: e2e %.3f lag %.3f from schedule %.3f", i, r.E2EMs, r.DispatchLagMs, *r.E2EFromScheduleMs)
		}
	}
	// No coordinated omission: many requests overlapped.
	inFlight := maxOverlap(rs)
	if inFlight < 5 {
		t.Fatalf("at most %d requests in flight: sends waited for completions", inFlight)
	}
	// Achieved rate over the actual sends matches the schedule's own rate.
	want := 59 / (sched[59] - sched[0]).Seconds()
	if p.AchievedRate == nil || (!raceOn && math.Abs(*p.AchievedRate-want) > 0.25*want) {
		t.Fatalf("achieved rate %v, schedule's %.2f", deref(p.AchievedRate), want)
	}
	// The median lag only: the tail depends on the machine's load, and
	// speed is the benchmarks' business.
	lags := make([]float64, len(rs))
	for i, r := range rs {
		lags[i] = r.DispatchLagMs
	}
	slices.Sort(lags)
	if !raceOn && lags[len(lags)/2] > 10 {
		t.Fatalf("median dispatch lag %.2f ms", lags[len(lags)/2])
	}
}

// TestOpenLoopCoarseSends: with Options.CoarseSends (Go's timer alone, the
// benchmarks' "before") requests still leave on the seeded schedule.
func TestOpenLoopCoarseSends(t *testing.T) {
	s := startSim(t, fastSim())
	ep := defaulted(&scenario.Endpoint{Model: "sim"})
	e, err := NewEngine(Target{Name: "coarse", Endpoint: ep, BaseURL: s.URL()}, Options{Logger: zerolog.Nop(), CoarseSends: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	st := rateStage(4, "constant", 200)
	st.Requests, st.MaxConcurrency = scenario.PerLevel{Each: 20}, 3
	res := runStage(t, e, synthPlan(20, "reference"), st)
	if p := res.Points[0]; p.Completed != 20 || p.NRequests != 20 {
		t.Fatalf("completed %d of %d (%v)", p.Completed, p.NRequests, p.Error)
	}
}

// TestOpenLoopPendingIsNotInFlight: the bound on requests built ahead of
// their due time does not bound requests in flight (that would be
// coordinated omission): with room for 2 pending, 20 slow requests overlap,
// each sent on schedule.
func TestOpenLoopPendingIsNotInFlight(t *testing.T) {
	defer func(n int) { maxPending = n }(maxPending)
	maxPending = 2
	cfg := fastSim()
	cfg.ITLMs = 5 // 20 tokens ≈ 100 ms per request, a request every 5 ms
	s := startSim(t, cfg)
	e, col := newEngine(t, s.URL(), nil)
	st := rateStage(20, "constant", 200)
	st.Requests = scenario.PerLevel{Each: 20}
	if p := runStage(t, e, synthPlan(20, "reference"), st).Points[0]; p.Completed != 20 {
		t.Fatalf("completed %d (%v)", p.Completed, p.Error)
	}
	rs := col.measured()
	if n := maxOverlap(rs); n < 10 {
		t.Fatalf("at most %d requests in flight: the pending bound held sends back", n)
	}
	for i, d := range dueOffsets(rs) {
		if want := float64(i) * 5; math.Abs(d-want) > 0.01 {
			t.Fatalf("request %d due at %.3f ms, want %.3f", i, d, want)
		}
	}
	if last := rs[len(rs)-1]; !raceOn && last.DispatchLagMs > 50 {
		t.Fatalf("the last request left %.1f ms late", last.DispatchLagMs)
	}
}

// maxOverlap is the most requests in flight at once, by their records.
func maxOverlap(rs []*result.Request) int {
	type ev struct {
		t time.Time
		d int
	}
	var evs []ev
	for _, r := range rs {
		evs = append(evs, ev{r.Start, 1}, ev{r.Start.Add(time.Duration(r.E2EMs * float64(time.Millisecond))), -1})
	}
	slices.SortFunc(evs, func(a, b ev) int {
		if c := a.t.Compare(b.t); c != 0 {
			return c
		}
		return a.d - b.d
	})
	cur, best := 0, 0
	for _, e := range evs {
		cur += e.d
		best = max(best, cur)
	}
	return best
}

// TestOpenLoopMaxConcurrency: arrivals past the cap wait for a slot, and the
// wait shows as dispatch lag and in the latency from the schedule.
func TestOpenLoopMaxConcurrency(t *testing.T) {
	cfg := fastSim()
	cfg.ITLMs = 5
	s := startSim(t, cfg)
	e, col := newEngine(t, s.URL(), nil)
	st := rateStage(20, "constant", 200)
	st.Requests.Each, st.MaxConcurrency = 20, 2
	res := runStage(t, e, synthPlan(20, "reference"), st)
	p := res.Points[0]
	if p.Completed != 20 || p.Concurrency != 2 {
		t.Fatalf("completed %d conc %d (%v)", p.Completed, p.Concurrency, p.Error)
	}
	rs := col.measured()
	if n := maxOverlap(rs); n > 2 || p.MaxInFlight == nil || *p.MaxInFlight != n {
		t.Fatalf("%d requests in flight with max_concurrency 2; the point says %v", n, p.MaxInFlight)
	}
	// 20 requests of ~100 ms, 2 at a time: the last leaves ~900 ms after it
	// was due (95 ms on the schedule).
	last := rs[len(rs)-1]
	if last.DispatchLagMs < 300 || *last.E2EFromScheduleMs < last.E2EMs+300 {
		t.Fatalf("last request's lag %.1f ms, e2e %.1f, from schedule %.1f", last.DispatchLagMs, last.E2EMs, *last.E2EFromScheduleMs)
	}
	// The cap, not the client, made them late: no bottleneck flag, a note instead.
	if p.DispatchLagMaxMs == nil || *p.DispatchLagMaxMs < 300 || (!raceOn && p.ClientBottleneck) {
		t.Fatalf("lag max %v, bottleneck %v", deref(p.DispatchLagMaxMs), p.ClientBottleneck)
	}
	if !slices.ContainsFunc(p.Notes, func(w string) bool { return strings.Contains(w, "max_concurrency slot") }) {
		t.Fatalf("no cap note in %q", p.Notes)
	}
	// Requests that waited for a slot are due on the constant schedule all the same.
	for i, d := range dueOffsets(rs) {
		if want := float64(i) * 5; math.Abs(d-want) > 0.01 {
			t.Fatalf("request %d due at %.3f ms, want %.3f", i, d, want)
		}
	}
}

// TestOpenLoopDuration: a duration-bounded level sends what the schedule
// holds before the end, over several rates.
func TestOpenLoopDuration(t *testing.T) {
	s := startSim(t, fastSim())
	e, col := newEngine(t, s.URL(), nil)
	st := rateStage(4, "gamma", 50, 150)
	st.Burstiness = 2
	st.Duration = scenario.Duration(300 * time.Millisecond)
	res := runStage(t, e, synthPlan(20, "reference"), st)
	if len(res.Points) != 2 {
		t.Fatalf("%d points", len(res.Points))
	}
	byLevel := map[int]int{}
	for _, r := range col.measured() {
		byLevel[r.Level]++
	}
	for i, rate := range st.Rate {
		want := len(Schedule(1, rate, "gamma", 2, 0, 300*time.Millisecond))
		p := res.Points[i]
		if p.NRequests != want || byLevel[i] != want || p.Failed != 0 {
			t.Errorf("rate %g: %d requests (%d records, %d failed), schedule holds %d", rate, p.NRequests, byLevel[i], p.Failed, want)
		}
		if *p.Rate != rate || p.DurationS < 0.25 {
			t.Errorf("rate %v, duration %.3f", deref(p.Rate), p.DurationS)
		}
	}
}

// BenchmarkSchedule is the cost of drawing one arrival.
func BenchmarkSchedule(b *testing.B) {
	for _, arrival := range scenario.Arrivals {
		b.Run(string(arrival), func(b *testing.B) {
			a := newArrivals(1, 1000, arrival, 4)
			var last time.Duration
			for b.Loop() {
				last = a.next()
			}
			if last < 0 {
				b.Fatal("negative offset")
			}
		})
	}
}

// BenchmarkOpenLoopLag runs open-loop levels against a zero-latency
// simulator in a child process and reports how late requests left against
// their schedule (dispatch lag p99 and max, ms) and the achieved rate as a
// share of the schedule's: the rates one runner process holds to schedule.
func BenchmarkOpenLoopLag(b *testing.B) {
	for _, rate := range []float64{500, 2000} {
		b.Run(fmt.Sprint("rate=", rate), func(b *testing.B) {
			e, _ := benchEngine(b, 1024)
			st := rateStage(16, "poisson", rate)
			st.Requests.Each = int(rate / 2) // half a second per level
			plan := synthPlan(64, "reference")
			// The seeded schedule's own rate: a Poisson sample of a few
			// hundred arrivals is a few percent off the nominal one.
			sched := Schedule(1, rate, "poisson", 0, st.Requests.Each, 0)
			schedRate := float64(len(sched)-1) / sched[len(sched)-1].Seconds()
			var p99, mx, share float64
			n := 0
			for b.Loop() {
				res, err := runStageCtx(context.Background(), e, plan, st)
				if err != nil || res.Points[0].Failed != 0 {
					b.Fatalf("err %v failed %d", err, res.Points[0].Failed)
				}
				p := res.Points[0]
				p99 += deref0(p.DispatchLagP99Ms)
				mx = max(mx, deref0(p.DispatchLagMaxMs))
				share += deref0(p.AchievedRate) / schedRate
				n++
			}
			b.ReportMetric(p99/float64(n), "lag-p99-ms")
			b.ReportMetric(mx, "lag-max-ms")
			b.ReportMetric(share/float64(n), "achieved/target")
		})
	}
}

// TestOpenLoopInterrupted: cancelling the run stops the schedule at once;
// arrivals not yet due are not requests of the level.
func TestOpenLoopInterrupted(t *testing.T) {
	cfg := fastSim()
	cfg.ITLMs = 5
	s := startSim(t, cfg)
	e, col := newEngine(t, s.URL(), nil)
	st := rateStage(10, "constant", 50)
	st.Duration = scenario.Duration(10 * time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	t0 := time.Now()
	res, err := runStageCtx(ctx, e, synthPlan(20, "reference"), st)
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(t0); el > 3*time.Second {
		t.Fatalf("RunStage took %v after the cancel", el)
	}
	p := res.Points[0]
	if !p.Interrupted || p.NRequests < 5 || p.NRequests > 25 || len(col.measured()) != p.NRequests {
		t.Fatalf("interrupted %v, %d requests, %d records", p.Interrupted, p.NRequests, len(col.measured()))
	}
}
