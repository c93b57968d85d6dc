// Package host watches the machine the runner itself runs on: the Go
// runtime's scheduling latency (a starved client reads its tokens late) and
// the process's open-file limit (one socket a stream).
package host

import (
	"math"
	"runtime/metrics"
	"time"
)

// schedLatencyMetric is the Go runtime's histogram of how long goroutines
// sat runnable before they ran. A stream's reader that waits here reads its
// token late and stamps it late, whatever the cause: the runner's own CPU
// saturation (which the CPU share shows) or other processes taking the
// machine's cores (which the CPU share cannot show, since the runner then
// uses little CPU while being late for all of it).
const schedLatencyMetric = "/sched/latencies:seconds"

// SchedSnapshot is a reading of the runtime's scheduling-latency histogram.
// Two snapshots taken around a level give that level's latencies.
type SchedSnapshot struct {
	counts  []uint64
	buckets []float64
}

// ReadSched takes a snapshot; it costs a few microseconds and does not stop the world.
func ReadSched() SchedSnapshot {
	s := []metrics.Sample{{Name: schedLatencyMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64Histogram {
		return SchedSnapshot{}
	}
	h := s[0].Value.Float64Histogram()
	// The runtime reuses nothing across Read calls, but copy to be safe.
	return SchedSnapshot{counts: append([]uint64(nil), h.Counts...), buckets: h.Buckets}
}

// SchedLatency is the scheduling latency between two snapshots: how many
// goroutine wake-ups there were and the latency quantile q (0..1) of them,
// as the upper bound of the bucket holding it (the histogram's resolution).
// ok is false when the runtime gave no histogram or nothing was scheduled.
func SchedLatency(before, after SchedSnapshot, q float64) (n uint64, lat time.Duration, ok bool) {
	if len(after.counts) == 0 || len(before.counts) != len(after.counts) && len(before.counts) != 0 {
		return 0, 0, false
	}
	delta := make([]uint64, len(after.counts))
	for i, c := range after.counts {
		delta[i] = c
		if len(before.counts) != 0 {
			delta[i] -= before.counts[i]
		}
		n += delta[i]
	}
	if n == 0 {
		return 0, 0, false
	}
	rank := uint64(math.Ceil(q * float64(n)))
	rank = max(rank, 1)
	var seen uint64
	for i, c := range delta {
		seen += c
		if seen >= rank {
			hi := after.buckets[i+1] // bucket i is [buckets[i], buckets[i+1])
			if math.IsInf(hi, 1) {
				hi = after.buckets[i]
			}
			return n, time.Duration(hi * float64(time.Second)), true
		}
	}
	return n, 0, false
}
