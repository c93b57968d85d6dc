package clock

import (
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"syscall"
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
		s := NewSpinner(c.rate)
		if s.limit != c.want || time.Duration(s.margin.Load()) != c.want {
			t.Errorf("rate %g: limit %v margin %v, want %v", c.rate, s.limit, time.Duration(s.margin.Load()), c.want)
		}
	}
	s := NewSpinner(100) // limit 2 ms
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
	s := NewSpinner(1000)
	a := NewAlarm()
	defer a.Close()
	for range 20 {
		due := time.Now().Add(3 * time.Millisecond)
		if !s.Wait(context.Background(), due, a) || time.Now().Before(due) {
			t.Fatal("returned before its due time")
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	t0 := time.Now()
	if s.Wait(ctx, t0.Add(time.Hour), a) || time.Since(t0) > time.Minute {
		t.Fatal("a cancelled wait went on")
	}
}

// BenchmarkWaitAlone is the precise wait with nothing else to do: Poisson
// due times at 200 and 2,000 per second for a second each, waited for one
// after another by one goroutine, as a sender does. It reports how late the
// waits returned (p50, p99, max in µs) and the CPU it took (percent of one
// core): the floor the machine gives the open loop's sends, before any
// request or stream reader competes for the core.
func BenchmarkWaitAlone(b *testing.B) {
	for _, rate := range []float64{200, 2000} {
		b.Run(strconv.FormatFloat(rate, 'f', -1, 64), func(b *testing.B) {
			a := NewAlarm()
			defer a.Close()
			var late []float64
			var cpu, wall time.Duration
			for b.Loop() {
				s := NewSpinner(rate)
				r := rand.New(rand.NewPCG(1, 0))
				var off time.Duration
				t0, c0 := time.Now(), processCPU()
				for range int(rate) {
					off += time.Duration(r.ExpFloat64() / rate * float64(time.Second))
					due := t0.Add(off)
					s.Wait(context.Background(), due, a)
					late = append(late, float64(time.Since(due))/float64(time.Microsecond))
				}
				cpu += processCPU() - c0
				wall += time.Since(t0)
			}
			slices.Sort(late)
			b.ReportMetric(late[len(late)/2], "late-p50-µs")
			b.ReportMetric(late[len(late)*99/100], "late-p99-µs")
			b.ReportMetric(late[len(late)-1], "late-max-µs")
			b.ReportMetric(100*float64(cpu)/float64(wall), "cpu-%")
		})
	}
}

// processCPU is the process's user and system time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
