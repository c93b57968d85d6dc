package shape

import (
	"time"

	"github.com/runnerbench/runner/result"
)

// Part is one shard's part of a level.
type Part struct {
	Shard result.Shard
	// Concurrency is the shard's streams (closed loop) or its part of the
	// in-flight cap (open loop; 0: none).
	Concurrency int
	// Rate is the mean arrival rate of the shard's part of an open-loop
	// level: the level's rate / N.
	Rate *float64
	// Empty is set when the shard has nothing of the level to send.
	Empty bool
}

// Global is the level's sequence number of the shard's n-th claimed
// request: n·N+i (n itself for the whole level, a nil part).
func (p *Part) Global(n int) int {
	if p == nil {
		return n
	}
	return n*p.Shard.Count + p.Shard.Index
}

// Describe writes the part into the level's record.
func (p *Part) Describe(rec *result.LevelRecord) {
	if p == nil {
		return
	}
	sh := p.Shard
	rec.Shard, rec.ShardConcurrency, rec.ShardRate, rec.Skipped = &sh, p.Concurrency, p.Rate, p.Empty
}

// Slot is a level's place in a scheduled run.
type Slot struct {
	// Start is when the level's warm-ups begin, Open when its measured
	// window opens (and its duration is counted from), End when requests
	// still in flight are cut.
	Start, Open, End time.Time
}

// ShareOf is shard i's part of n things split over count shards: n/count,
// and one more for each of the first n%count shards.
func ShareOf(n, i, count int) int {
	s := n / count
	if i < n%count {
		s++
	}
	return s
}
