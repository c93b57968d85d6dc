package shape

import (
	"slices"
	"testing"
	"time"

	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
)

// TestShare: the parts add up to the whole, differ by at most one, and the
// remainder goes to the low indexes.
func TestShare(t *testing.T) {
	for n := range 60 {
		for count := 1; count <= 7; count++ {
			sum := 0
			for i := range count {
				s := ShareOf(n, i, count)
				sum += s
				if want := n / count; s != want && s != want+1 {
					t.Fatalf("ShareOf(%d, %d, %d) = %d", n, i, count, s)
				}
				if i > 0 && s > ShareOf(n, i-1, count) {
					t.Fatalf("ShareOf(%d, %d, %d) = %d exceeds shard %d's", n, i, count, s, i-1)
				}
			}
			if sum != n {
				t.Fatalf("shares of %d over %d add up to %d", n, count, sum)
			}
		}
	}
}

// TestShardArrivalsAreThePlansSchedule: for every arrival process, the union
// of the shards' arrivals is exactly the whole level's seeded schedule, and
// shard i's k-th arrival is the schedule's (k·N+i)-th.
func TestShardArrivalsAreThePlansSchedule(t *testing.T) {
	const rate, dur = 50.0, 2 * time.Second
	for _, arr := range []struct {
		kind  scenario.Arrival
		burst float64
	}{{scenario.ArrivalPoisson, 0}, {scenario.ArrivalConstant, 0}, {scenario.ArrivalGamma, 4}} {
		whole := Schedule(7, rate, arr.kind, arr.burst, 0, dur)
		if len(whole) < 50 {
			t.Fatalf("%s: schedule of %d arrivals", arr.kind, len(whole))
		}
		for _, n := range []int{1, 2, 3, 5} {
			var union []time.Duration
			for i := range n {
				o := &openLoop{arrival: arr.kind, pace: Pace{Seed: 7, Rate: rate, Burstiness: arr.burst}, part: result.Shard{Index: i, Count: n}}
				src := o.arrivals()
				for k := 0; ; k++ {
					off, _ := src.Next()
					if off >= dur {
						break
					}
					if g := k*n + i; g >= len(whole) || whole[g] != off {
						t.Fatalf("%s, shard %d/%d: arrival %d is at %v, the schedule's %d-th", arr.kind, i, n, k, off, g)
					}
					union = append(union, off)
				}
			}
			slices.Sort(union)
			if !slices.Equal(union, whole) {
				t.Fatalf("%s over %d shards: the union has %d arrivals, the schedule %d", arr.kind, n, len(union), len(whole))
			}
		}
	}
}
