package shape

import (
	"math"
	"testing"
	"time"

	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
)

// A rate that follows a series: constant arrivals land where the expected
// count reaches each whole number, so every second of a ramp from 10 to 50
// requests/s over 4 s holds its integral's arrivals (to one); Poisson
// arrivals hold them to their noise; a shard's part of the schedule is
// every N-th arrival of the whole one; the schedule ends with the series.
func TestSeriesArrivals(t *testing.T) {
	sr := &result.Series{Over: result.LoadRate, Shape: "linear", Pieces: []result.SeriesPiece{{DurationS: 4, From: 10, To: 50}}}
	pace := Pace{Seed: 3, Rate: sr.Integral(sr.Duration()) / 4, Series: sr}
	perSecond := func(offs []time.Duration) []int {
		out := make([]int, 4)
		for _, o := range offs {
			if o >= 4*time.Second {
				t.Fatalf("an arrival at %v, past the series' 4 s", o)
			}
			out[int(o/time.Second)]++
		}
		return out
	}
	constant := perSecond(schedule(scenario.ArrivalConstant, pace, 0, 10*time.Second))
	for s, n := range constant {
		want := sr.Integral(time.Duration(s+1)*time.Second) - sr.Integral(time.Duration(s)*time.Second) // 15, 25, 35, 45
		if math.Abs(float64(n)-want) > 1 {
			t.Errorf("second %d: %d constant arrivals, the series asks for %g", s, n, want)
		}
	}
	poisson := schedule(scenario.ArrivalPoisson, pace, 0, 10*time.Second)
	counts := perSecond(poisson)
	if counts[3] <= counts[0] || math.Abs(float64(len(poisson))-120) > 4*math.Sqrt(120) {
		t.Errorf("Poisson arrivals per second %v (%d in all): want about 15, 25, 35, 45", counts, len(poisson))
	}
	// A shard keeps every N-th arrival of the whole schedule.
	o := OpenSeries(sr, pace.Rate, scenario.ArrivalPoisson, 0, 3, 0).(*openLoop)
	whole := 0
	for i := range 3 {
		sh, err := o.Split(result.Shard{Index: i, Count: 3}, 4*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		a := sh.Load.(*openLoop).arrivals()
		for k := 0; ; k++ {
			off, ok := a.Next()
			if !ok {
				break
			}
			if want := poisson[k*3+i]; off != want {
				t.Fatalf("shard %d arrival %d at %v, the whole schedule's %d-th at %v", i, k, off, k*3+i, want)
			}
			whole++
		}
	}
	if whole != len(poisson) {
		t.Errorf("the shards' parts hold %d arrivals, the schedule %d", whole, len(poisson))
	}
}

// An open loop under a series keeps its send precision where its gaps are
// shortest: its precise waits and its connections are sized for the
// series' peak rate, not its mean.
func TestSeriesSizedForPeak(t *testing.T) {
	sr := &result.Series{Over: result.LoadRate, Shape: "linear", Pieces: []result.SeriesPiece{{DurationS: 4, From: 10, To: 500}}}
	o := OpenSeries(sr, 255, scenario.ArrivalPoisson, 0, 1, 0).(*openLoop)
	if got := o.spinRate(nil); got != 500 {
		t.Errorf("precise waits sized for %g req/s, the series' peak is 500", got)
	}
	if got, want := o.Conns(), rateConns(500, 0); got != want || got == rateConns(255, 0) {
		t.Errorf("%d connections, want %d (a second at the peak)", got, want)
	}
}
