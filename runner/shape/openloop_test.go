package shape

import (
	"math"
	"slices"
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

// BenchmarkSchedule is the cost of drawing one arrival.
func BenchmarkSchedule(b *testing.B) {
	for _, arrival := range scenario.Arrivals {
		b.Run(string(arrival), func(b *testing.B) {
			a := NewArrivals(arrival, Pace{Seed: 1, Rate: 1000, Burstiness: 4})
			var last time.Duration
			for b.Loop() {
				last, _ = a.Next()
			}
			if last < 0 {
				b.Fatal("negative offset")
			}
		})
	}
}

// TestRateLevelsDrawTheirOwnArrivals (issue 38, item 9): the rate levels a
// stage lists are independent samples of the load: each draws its own
// arrivals from the stage's seed, so no level's schedule is another's scaled
// (which gave every level the same excess: a pattern 30% dense in its first
// seconds was so at every rate), and the same plan still sends the same
// schedule. The first level keeps the stage's seed.
func TestRateLevelsDrawTheirOwnArrivals(t *testing.T) {
	const seed = 7
	rates := []float64{5, 10, 20}
	st := Stage{
		Plan: &scenario.LoadPlan{Kind: result.LoadRate, Rate: rates, Seed: seed, Duration: 10 * time.Second, Arrival: scenario.ArrivalPoisson},
		Spec: func(label string, conc int, rate *float64) result.LevelSpec {
			return result.LevelSpec{Label: label, Concurrency: conc, Rate: rate}
		},
	}
	unit := func(n int) [][]float64 { // each level's first 40 offsets in mean gaps
		var out [][]float64
		sw := For(st)
		for i := range rates {
			lvl, ok := sw.Next(nil)
			o, isOpen := lvl.Load.(*openLoop)
			if !ok || !isOpen {
				t.Fatalf("level %d: %v %T", i, ok, lvl.Load)
			}
			offs := Schedule(o.pace.Seed, o.pace.Rate, o.arrival, o.pace.Burstiness, n, 0)
			u := make([]float64, len(offs))
			for j, d := range offs {
				u[j] = d.Seconds() * o.pace.Rate
			}
			out = append(out, u)
		}
		return out
	}
	got := unit(40)
	if !sameSchedule(got[0], unitOffsets(Schedule(seed, 1, scenario.ArrivalPoisson, 0, 40, 0))) {
		t.Error("the first level does not keep the stage's seed")
	}
	for i := 1; i < len(got); i++ {
		for j := range i {
			if sameSchedule(got[i], got[j]) {
				t.Errorf("rate %g replays rate %g's arrivals scaled", rates[i], rates[j])
			}
		}
	}
	if again := unit(40); !slices.EqualFunc(got, again, sameSchedule) {
		t.Error("the same stage drew other arrivals")
	}
}

func unitOffsets(offs []time.Duration) []float64 {
	out := make([]float64, len(offs))
	for i, d := range offs {
		out[i] = d.Seconds()
	}
	return out
}

// sameSchedule reports whether two schedules in mean gaps agree within their
// rounding to the nanosecond.
func sameSchedule(a, b []float64) bool {
	return slices.EqualFunc(a, b, func(x, y float64) bool { return math.Abs(x-y) < 1e-6 })
}
