package pipeline

import (
	"fmt"
	"time"

	"github.com/runnerbench/runner/records"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/runner/shard"
	"github.com/runnerbench/runner/scenario"
)

// Sharding checks that the stages of plan can run as shard part of a
// sharded run (or, with one shard, a scheduled one) from startAt, and returns
// what Options.Sharding takes; nil for a whole, unscheduled run. The shards'
// nonce key is the plan's hash and startAt: the same on every shard of a run,
// different from run to run.
func Sharding(plan *scenario.Plan, stages []*scenario.Stage, part result.Shard, startAt time.Time, warmup, drain time.Duration) (*shard.Sharding, error) {
	key := plan.Hash + "@" + startAt.UTC().Format(time.RFC3339Nano)
	sh, err := shard.NewSharding(part, startAt, warmup, drain, key, plan.LoadPlans(stages))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", plan.Path, err)
	}
	return sh, nil
}

// describeSharding writes the run's part and timetable into its header, so
// runner merge can tell which shard it is and that the shards ran together.
func describeSharding(h *records.Header, sh *shard.Sharding) {
	if sh == nil {
		return
	}
	part := sh.Part
	h.Shard = &part
	if tt := sh.Timetable; tt != nil {
		at := tt.StartAt.UTC()
		h.StartAt, h.SlotWarmupNs, h.SlotDrainNs = &at, int64(tt.Warmup), int64(tt.Drain)
	}
}

// deferredChecks is why a shard's report leaves its checks to the merge.
const deferredChecks = "a shard's levels hold its part of the load only: checks are evaluated on the merged levels (runner merge)"

// shardReport marks the report of one shard of several (and says so in its
// warnings), and reports whether it is one.
func shardReport(rep *result.Report, h *records.Header) bool {
	if s := h.Shard; s != nil && s.Count > 1 {
		sh := *s
		rep.Shard = &sh
		rep.Warnings = append(rep.Warnings, fmt.Sprintf(
			"shard %d of %d (0-based): every level holds this shard's part of the load; %s", s.Index, s.Count, deferredChecks))
		return true
	}
	if h.Shards > 1 {
		rep.Shards = h.Shards
	}
	return false
}
