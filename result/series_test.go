package result

import (
	"math"
	"testing"
	"time"
)

// The series' integral, its inverse and its crossings, held to sums done by
// hand and to each other: a linear ramp 2→10 over 4 s integrates to 24; an
// exponential 1→8 over 3 s (doubling every second) to 7/ln 2; steps and
// pieces are sums of rectangles.
func TestSeriesCalculus(t *testing.T) {
	sec := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-6*max(1, math.Abs(b)) }
	lin := &Series{Over: LoadRate, Shape: "linear", Pieces: []SeriesPiece{{DurationS: 4, From: 2, To: 10}}}
	exp := &Series{Over: LoadRate, Shape: "exponential", Pieces: []SeriesPiece{{DurationS: 3, From: 1, To: 8, Exponential: true}}}
	steps := &Series{Over: LoadConcurrency, Shape: "steps", Pieces: []SeriesPiece{{DurationS: 2, From: 1, To: 1}, {DurationS: 2, From: 3, To: 3}, {DurationS: 2, From: 5, To: 5}}}
	down := &Series{Over: LoadRate, Shape: "pieces", Pieces: []SeriesPiece{{DurationS: 1, From: 4, To: 4}, {DurationS: 2, From: 4, To: 0}}}
	for _, c := range []struct {
		s          *Series
		at, value  float64
		upTo, area float64
	}{
		{lin, 1, 4, 4, 24}, {lin, 2, 6, 2, 8},
		{exp, 1, 2, 3, 7 / math.Ln2}, {exp, 2, 4, 1, 1 / math.Ln2},
		{steps, 3, 3, 6, 18}, {steps, 5.5, 5, 3, 5},
		{down, 2, 2, 3, 8}, {down, 0.5, 4, 2, 7},
	} {
		if v := c.s.At(sec(c.at)); !near(v, c.value) {
			t.Errorf("%s at %gs = %g, want %g", c.s.Label(), c.at, v, c.value)
		}
		if a := c.s.Integral(sec(c.upTo)); !near(a, c.area) {
			t.Errorf("%s integral to %gs = %g, want %g", c.s.Label(), c.upTo, a, c.area)
		}
		// The inverse of the integral returns the time, to a nanosecond.
		if back, ok := c.s.Inverse(c.area); !ok || math.Abs(back.Seconds()-c.upTo) > 1e-6 {
			t.Errorf("%s inverse of %g = %v (%v), want %gs", c.s.Label(), c.area, back, ok, c.upTo)
		}
	}
	if _, ok := lin.Inverse(24.01); ok {
		t.Error("an integral past the series' end has a time")
	}
	if d := lin.Duration(); d != 4*time.Second || lin.Peak() != 10 || !near(lin.Mean(0, 4*time.Second), 6) {
		t.Errorf("duration %v peak %g mean %g", d, lin.Peak(), lin.Mean(0, 4*time.Second))
	}
	// When stream 3 (value ≥ 3.5) is first wanted: in the steps, at the third step.
	if at, ok := steps.First(3.5, 0); !ok || at != 4*time.Second {
		t.Errorf("steps reach 3.5 at %v (%v), want 4s", at, ok)
	}
	if at, ok := lin.First(6, sec(0.5)); !ok || math.Abs(at.Seconds()-2) > 1e-6 {
		t.Errorf("the ramp reaches 6 at %v (%v), want 2s", at, ok)
	}
	if _, ok := down.First(5, 0); ok {
		t.Error("a series that never reaches 5 reaches it")
	}
	for s, want := range map[*Series]string{
		lin: "rate=linear(2,10,4s)", exp: "rate=exponential(1,8,3s)", steps: "c=steps(1,5,2,2s)", down: "rate=pieces(1s:4,2s:4..0)",
	} {
		if got := s.Label(); got != want {
			t.Errorf("label %q, want %q", got, want)
		}
	}
}
