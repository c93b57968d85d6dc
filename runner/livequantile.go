package runner

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// liveQuantile estimates a quantile of durations while a level runs, for
// the progress line: log-spaced buckets, liveSub to each power of two of
// microseconds (each at most 1/liveSub of its lower bound wide, so a
// quantile is within ~6%), counted with atomics. Its memory is fixed
// (liveBuckets counters, 2 KiB), adding costs a few nanoseconds, and reading
// takes no lock, so the progress ticker never waits on a worker nor a worker
// on it. It is not what the report computes (that is every sample, or the
// exact histogram): only a live hint.
type liveQuantile struct {
	counts [liveBuckets]atomic.Int64 // no total: one atomic add a value
}

const (
	liveSubBits = 3
	liveSub     = 1 << liveSubBits
	// liveBuckets covers 1 µs to 2^33 µs (about 2.4 h) at liveSub a power of two.
	liveBuckets = (33 - liveSubBits + 1) * liveSub
)

// liveBucket is the bucket of us microseconds: values below liveSub one
// each, then liveSub to each power of two.
func liveBucket(us uint64) int {
	if us < liveSub {
		return int(us)
	}
	e := bits.Len64(us) - 1 // us in [2^e, 2^(e+1))
	i := (e-liveSubBits+1)*liveSub + int(us>>(e-liveSubBits))&(liveSub-1)
	return min(i, liveBuckets-1)
}

// liveLow is the lowest value (µs) of bucket i.
func liveLow(i int) uint64 {
	if i < liveSub {
		return uint64(i)
	}
	e := i/liveSub + liveSubBits - 1
	return uint64(liveSub+i%liveSub) << (e - liveSubBits)
}

func (q *liveQuantile) add(d time.Duration) {
	us := max(0, d.Microseconds())
	q.counts[liveBucket(uint64(us))].Add(1)
}

// quantile estimates the p-quantile (0..1) in ms, as the middle of its
// bucket; ok is false before the first value. It reads each count once, so
// counts added meanwhile are seen or not, consistently: a snapshot of a
// moving level.
func (q *liveQuantile) quantile(p float64) (ms float64, ok bool) {
	var counts [liveBuckets]int64
	var n int64
	for i := range q.counts {
		counts[i] = q.counts[i].Load()
		n += counts[i]
	}
	if n == 0 {
		return 0, false
	}
	// The reference's rule, as the report's percentiles: the sample at
	// sorted index round_half_even(p·(n−1)).
	rank := int64(math.RoundToEven(p*float64(n-1))) + 1
	var seen int64
	for i, c := range counts {
		if seen += c; seen >= rank {
			lo, hi := liveLow(i), liveLow(i+1)
			return float64(lo+hi) / 2 / 1000, true
		}
	}
	return float64(liveLow(liveBuckets-1)) / 1000, true
}
