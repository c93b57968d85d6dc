package shape

import (
	"slices"
	"testing"
	"time"

	"github.com/runnerbench/runner/scenario"
)

// TestArrivalProcessesArePlansList: every arrival process a plan may name
// has its process, and no process is unreachable from a plan.
func TestArrivalProcessesArePlansList(t *testing.T) {
	for _, a := range scenario.Arrivals {
		if arrivalProcesses[a] == nil {
			t.Errorf("the plan's arrival %q has no process in arrivalProcesses", a)
		}
	}
	for a := range arrivalProcesses {
		if !slices.Contains(scenario.Arrivals, a) {
			t.Errorf("arrival process %q is not in scenario.Arrivals: no plan can choose it", a)
		}
	}
}

// TestArrivalsRestart: a process built twice from one Pace gives the same
// offsets (each replicate of a level replays its schedule), starting at 0.
func TestArrivalsRestart(t *testing.T) {
	for a := range arrivalProcesses {
		p := Pace{Seed: 5, Rate: 40, Burstiness: 3}
		x, y := NewArrivals(a, p), NewArrivals(a, p)
		for i := range 200 {
			ox, okx := x.Next()
			oy, oky := y.Next()
			if !okx || !oky || ox != oy || (i == 0 && ox != 0) {
				t.Fatalf("%s: arrival %d at %v (%v) and %v (%v)", a, i, ox, okx, oy, oky)
			}
		}
	}
}

// TestRecordedArrivalsEnd: a replay's recorded times are its arrivals, and
// its schedule ends after the last; a shard's part of a finite process ends
// with it.
func TestRecordedArrivalsEnd(t *testing.T) {
	times := []time.Duration{0, 3 * time.Millisecond, 3 * time.Millisecond, time.Second}
	o := Replayed(times, 2, 0).(*openLoop)
	var got []time.Duration
	for a := o.arrivals(); ; {
		off, ok := a.Next()
		if !ok {
			break
		}
		got = append(got, off)
	}
	if !slices.Equal(got, times) {
		t.Fatalf("replayed arrivals %v, want %v", got, times)
	}
	part := &partArrivals{a: &recorded{times: times}, stride: 3, phase: 2}
	if off, ok := part.Next(); !ok || off != times[2] {
		t.Fatalf("shard 2 of 3: first arrival %v %v, want %v", off, ok, times[2])
	}
	if off, ok := part.Next(); ok {
		t.Fatalf("shard 2 of 3: an arrival %v past the recorded times", off)
	}
}
