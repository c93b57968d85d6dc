package runner

import (
	"context"
	"testing"
	"time"
)

// TestSpinnerMargin: the spin margin starts at its limit (a quarter of the
// mean gap between requests, within [spinMin, spinMax]) and then follows
// the wake-ups' p99 lateness plus spinSlack, never past the limit.
func TestSpinnerMargin(t *testing.T) {
	for _, c := range []struct {
		rate float64
		want time.Duration
	}{
		{0, spinMax}, {100, spinMax}, {200, 1250 * time.Microsecond}, {2000, 125 * time.Microsecond}, {1e6, spinMin},
	} {
		s := newSpinner(c.rate)
		if s.limit != c.want || time.Duration(s.margin.Load()) != c.want {
			t.Errorf("rate %g: limit %v margin %v, want %v", c.rate, s.limit, time.Duration(s.margin.Load()), c.want)
		}
	}
	s := newSpinner(100) // limit 2 ms
	for i := range 64 {
		late := 100 * time.Microsecond
		if i == 63 {
			late = 900 * time.Microsecond // the p99 of 64 is the largest
		}
		s.observe(late)
	}
	if got := time.Duration(s.margin.Load()); got != 900*time.Microsecond+spinSlack {
		t.Fatalf("margin %v after a 900 µs wake-up among 100 µs ones", got)
	}
	for range 256 { // the 900 µs one leaves the window
		s.observe(10 * time.Microsecond)
	}
	if got := time.Duration(s.margin.Load()); got != 10*time.Microsecond+spinSlack {
		t.Fatalf("margin %v after punctual wake-ups", got)
	}
	for range 256 {
		s.observe(0)
	}
	if got := time.Duration(s.margin.Load()); got != max(spinMin, spinSlack) {
		t.Fatalf("margin %v after wake-ups on time, want the floor %v", got, spinMin)
	}
	for range 256 {
		s.observe(time.Second)
	}
	if got := time.Duration(s.margin.Load()); got != spinMax {
		t.Fatalf("margin %v after late wake-ups, want the limit %v", got, spinMax)
	}
}

// TestSpinnerWait: a wait never returns before its due time, and a
// cancelled one returns false without waiting it out.
func TestSpinnerWait(t *testing.T) {
	s := newSpinner(1000)
	a := newAlarm()
	defer a.close()
	for range 20 {
		due := time.Now().Add(3 * time.Millisecond)
		if !s.wait(context.Background(), due, a) || time.Now().Before(due) {
			t.Fatal("returned before its due time")
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	t0 := time.Now()
	if s.wait(ctx, t0.Add(time.Hour), a) || time.Since(t0) > time.Minute {
		t.Fatal("a cancelled wait went on")
	}
}
