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
	"github.com/runnerbench/runner/runner/clock"
	"github.com/runnerbench/runner/runner/shape"
	"github.com/runnerbench/runner/scenario"
)

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
	sched := shape.Schedule(seed, 100, "poisson", 0, 60, 0)
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
// holds before the end, over several rates, and warns with their count
// about the arrivals it did not send.
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
	byLevel := map[int][]*result.Request{}
	for _, r := range col.measured() {
		byLevel[r.Level] = append(byLevel[r.Level], r)
	}
	for i, rate := range st.Rate {
		sched := shape.Schedule(shape.LevelSeed(1, i), rate, "gamma", 2, 0, 300*time.Millisecond)
		p, recs := res.Points[i], byLevel[i]
		// What a busy machine cannot take away: the level sends the
		// schedule's first arrivals, each due at its scheduled offset, none
		// past the duration, and fails none. It may send fewer than the
		// schedule holds: a dispatcher that a loaded machine holds off the
		// core past the duration's end claims no more (a level at rate 150
		// sent 36 of 46 at load average 7).
		if p.NRequests != len(recs) || len(recs) == 0 || len(recs) > len(sched) || p.Failed != 0 {
			t.Errorf("rate %g: %d requests (%d records, %d failed), schedule holds %d", rate, p.NRequests, len(recs), p.Failed, len(sched))
			continue
		}
		// What it did not send, it says, counting from the schedule.
		unsent := fmt.Sprintf("%d of the %d arrivals its schedule held before the level's duration ended were never sent", len(sched)-len(recs), len(sched))
		if warned := slices.ContainsFunc(p.Warnings, func(w string) bool { return strings.Contains(w, "were never sent") }); warned != (len(recs) < len(sched)) ||
			warned && !slices.ContainsFunc(p.Warnings, func(w string) bool { return strings.HasPrefix(w, unsent) }) {
			t.Errorf("rate %g: sent %d of the schedule's %d; warnings %q", rate, len(recs), len(sched), p.Warnings)
		}
		if len(recs) < len(sched) {
			t.Logf("rate %g: %d of the schedule's %d arrivals sent before the duration's end (dispatch lag max %v ms)", rate, len(recs), len(sched), deref(p.DispatchLagMaxMs))
		}
		due0 := recs[0].Start.Add(-time.Duration(recs[0].DispatchLagMs * float64(time.Millisecond)))
		for j, r := range recs {
			due := r.Start.Add(-time.Duration(r.DispatchLagMs * float64(time.Millisecond))).Sub(due0)
			if r.Seq != j || (due-sched[j]+sched[0]).Abs() > time.Millisecond {
				t.Errorf("rate %g: record %d is seq %d due at %v, the schedule's is at %v", rate, j, r.Seq, due, sched[j]-sched[0])
			}
		}
		if *p.Rate != rate || p.DurationS < 0.25 {
			t.Errorf("rate %v, duration %.3f", deref(p.Rate), p.DurationS)
		}
	}
}

// TestOpenLoopCountBeforeDuration: a level bounded by both a count and a
// duration that reaches its count first sent all it should: the schedule's
// later arrivals before the duration's end are not unsent, and no warning
// says so, however late a busy machine let the dispatcher find that out.
func TestOpenLoopCountBeforeDuration(t *testing.T) {
	s := startSim(t, fastSim())
	e, col := newEngine(t, s.URL(), nil)
	st := rateStage(4, "constant", 200)
	st.Requests.Each, st.Duration = 5, scenario.Duration(300*time.Millisecond)
	p := runStage(t, e, synthPlan(20, "reference"), st).Points[0]
	if n := len(col.measured()); n != 5 || p.NRequests != 5 || p.Failed != 0 {
		t.Fatalf("%d records, n_requests %d, failed %d; want the count, 5", n, p.NRequests, p.Failed)
	}
	if slices.ContainsFunc(p.Warnings, func(w string) bool { return strings.Contains(w, "never sent") }) {
		t.Fatalf("a level that reached its count warns %q", p.Warnings)
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
			sched := shape.Schedule(1, rate, "poisson", 0, st.Requests.Each, 0)
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
	// A rate that follows a series keeps the same precision: linear ramps
	// to each of the rates above over a second, from a tenth of it, their
	// precise waits sized for their peak.
	for _, peak := range []float64{500, 2000} {
		b.Run(fmt.Sprintf("series=linear(%g,%g,1s)", peak/10, peak), func(b *testing.B) {
			benchSeries(b, peak/10, peak)
		})
	}
}

// benchSeries is BenchmarkOpenLoopLag's level under a linear ramp of the
// rate from `from` to `to` requests/s over a second.
func benchSeries(b *testing.B, from, to float64) {
	e, _ := benchEngine(b, 1024)
	st := rateStage(16, "poisson")
	st.Series = &scenario.Series{Over: scenario.OverRate, Linear: &scenario.SeriesRamp{From: from, To: to, Duration: scenario.Duration(time.Second)}}
	plan := synthPlan(64, "reference")
	var p99, mx float64
	n := 0
	for b.Loop() {
		res, err := runStageCtx(context.Background(), e, plan, st)
		if err != nil || res.Points[0].Failed != 0 {
			b.Fatalf("err %v failed %d", err, res.Points[0].Failed)
		}
		p99 += deref0(res.Points[0].DispatchLagP99Ms)
		mx = max(mx, deref0(res.Points[0].DispatchLagMaxMs))
		n++
	}
	b.ReportMetric(p99/float64(n), "lag-p99-ms")
	b.ReportMetric(mx, "lag-max-ms")
}

// TestOpenLoopInterrupted: cancelling the run stops the schedule at once;
// arrivals not yet due are not requests of the level. The cancel comes once
// a few requests have finished (not at a fixed time, which a busy machine
// may spend on warm-ups), and every record must have been due before it.
func TestOpenLoopInterrupted(t *testing.T) {
	cfg := fastSim()
	cfg.ITLMs = 5
	s := startSim(t, cfg)
	e, col := newEngine(t, s.URL(), nil)
	st := rateStage(10, "constant", 50)
	st.Duration = scenario.Duration(10 * time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	cancelled := make(chan time.Time, 1)
	go func() {
		for len(col.measured()) < 5 && ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
		}
		cancelled <- time.Now()
		cancel()
	}()
	res, err := runStageCtx(ctx, e, synthPlan(20, "reference"), st)
	if err != nil {
		t.Fatal(err)
	}
	at := <-cancelled
	if el := time.Since(at); el > 5*time.Second {
		t.Fatalf("RunStage took %v after the cancel", el)
	}
	p := res.Points[0]
	rs := col.measured()
	if !p.Interrupted || p.NRequests < 5 || len(rs) != p.NRequests {
		t.Fatalf("interrupted %v, %d requests, %d records", p.Interrupted, p.NRequests, len(rs))
	}
	// A sender holds a request from 5 ms before it is due (clock.SendLead):
	// one due that close to the cancel may have gone out just before it.
	for _, r := range rs {
		if due := r.Start.Add(-time.Duration(r.DispatchLagMs * float64(time.Millisecond))); !r.Start.IsZero() && due.After(at.Add(clock.SendLead)) {
			t.Fatalf("request %d was due %v after the cancel, yet is a request of the level", r.Seq, due.Sub(at))
		}
	}
}
