package runner

import (
	"math"
	"testing"
	"time"

	"github.com/runnerbench/runner/scenario"
)

// A rate series is one level whose arrivals follow the ramp: its label
// names the series, its mean rate is the series' mean, and each second of
// the schedule (each request's due time: its send less its dispatch lag)
// holds the ramp's integral over it (constant arrivals: to one), but for
// the last ones a late client did not send before the level's end. Each 1 s
// slice says what the series asked for; what it counts as sent goes by the
// actual sends, which a busy machine may make late across a slice's edge,
// so those only have to grow with the ramp and add up to every request.
func TestRateSeries(t *testing.T) {
	s := startSim(t, fastSim())
	e, col := newEngine(t, s.URL(), nil)
	st := &scenario.Stage{Name: "ramp", Prompts: "p", API: "chat", Mode: "pinned", OutputTokens: scenario.Length{Fixed: 4},
		Arrival: scenario.ArrivalConstant,
		Series:  &scenario.Series{Over: scenario.OverRate, Linear: &scenario.SeriesRamp{From: 20, To: 100, Duration: scenario.Duration(3 * time.Second)}}}
	res := runStage(t, e, synthPlan(16, "reference"), st)
	p := res.Points[0]
	if p.Label() != "rate=linear(20,100,3s)" || p.Rate == nil || *p.Rate != 60 || p.Failed != 0 {
		t.Fatalf("level %s, rate %v, %d failed", p.Label(), p.Rate, p.Failed)
	}
	rs := col.measured()
	// The schedule holds 180 arrivals (its shape test holds it to the
	// ramp). One claimed after the level's end is not sent: a busy machine
	// that sends late loses the last ones, those due within the latest lag
	// of the end, at the ramp's last rate, 100 requests/s.
	lagS := 0.0
	if p.DispatchLagMaxMs != nil {
		lagS = *p.DispatchLagMaxMs / 1000
	}
	lost := int(math.Ceil(100*(lagS+0.01))) + 1
	if n := len(rs); n > 181 || n < 180-lost {
		t.Errorf("%d requests, the ramp's integral is 180 (at most %d lost to a latest lag of %.0f ms)", n, lost, lagS*1000)
	}
	if p.Slices == nil || len(p.Slices.Windows) < 3 {
		t.Fatalf("slices %+v: a series level is sliced by default", p.Slices)
	}
	due := make([]int, 3)
	for _, r := range rs {
		at := r.Start.Add(-time.Duration(r.DispatchLagMs * float64(time.Millisecond))).Sub(p.Slices.Start)
		if k := int(at / time.Second); k >= 0 && k < 3 {
			due[k]++
		}
	}
	sent := 0
	for k, want := range []float64{100.0 / 3, 60, 260.0 / 3} {
		w := p.Slices.Windows[k]
		if w.Load == nil || math.Abs(*w.Load-want) > 0.01 {
			t.Errorf("slice %d: load %v, the series' mean over it is %g", k, w.Load, want)
		}
		lo := want - 1.5
		if k == 2 {
			lo -= max(0, float64(180-len(rs))) // the last ones a late client lost
		}
		if d := float64(due[k]); d > want+1.5 || d < lo {
			t.Errorf("second %d: %d requests due, the series asked for %.1f", k, due[k], want)
		}
		if k > 0 && w.Sent <= p.Slices.Windows[k-1].Sent {
			t.Errorf("slice %d: %d sent, not more than slice %d's %d: the ramp grows", k, w.Sent, k-1, p.Slices.Windows[k-1].Sent)
		}
	}
	for _, w := range p.Slices.Windows {
		sent += w.Sent
	}
	if sent != len(rs) {
		t.Errorf("the slices count %d sent, the level %d", sent, len(rs))
	}
	if p.Slices.Steadiness.Judged || p.Steady != nil {
		t.Errorf("a series level judged for steadiness: %+v", p.Slices.Steadiness)
	}
}

// A concurrency series holds the streams it asks for: steps of 1, 2, 3 and
// 4 streams, a second each; each slice's peak in flight is at most the
// step's streams and its mean in flight close to them.
func TestConcurrencySeries(t *testing.T) {
	cfg := fastSim()
	cfg.ITLMs = 5
	s := startSim(t, cfg)
	e, _ := newEngine(t, s.URL(), nil)
	st := &scenario.Stage{Name: "steps", Prompts: "p", API: "chat", Mode: "pinned", OutputTokens: scenario.Length{Fixed: 10},
		Series: &scenario.Series{Over: scenario.OverConcurrency, Steps: &scenario.SeriesSteps{From: 1, To: 4, Step: 1, Duration: scenario.Duration(time.Second)}}}
	res := runStage(t, e, synthPlan(16, "reference"), st)
	p := res.Points[0]
	if p.Label() != "c=steps(1,4,1,1s)" || p.Concurrency != 4 || p.Failed != 0 || p.Slices == nil {
		t.Fatalf("level %s, concurrency %d, %d failed, slices %v", p.Label(), p.Concurrency, p.Failed, p.Slices != nil)
	}
	for k := range 4 {
		w := p.Slices.Windows[k]
		want := float64(k + 1)
		if w.Load == nil || *w.Load != want || w.InFlightMax > k+1 || w.InFlightMean < want-0.6 {
			t.Errorf("slice %d: load %v, in flight mean %.2f max %d; want %g streams", k, w.Load, w.InFlightMean, w.InFlightMax, want)
		}
	}
}
