package checks

import (
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
)

// Deferred lists stage's checks as EvaluateStage does, each one skipped
// with why: the report of one shard of a sharded run holds that shard's part
// of each level only, and its checks are judged once, on the merged levels
// (runner merge). A shard that failed a throughput check on its own part
// would fail its job for nothing.
func Deferred(stage *scenario.Stage, res *result.Stage, why string) []result.CheckOutcome {
	out := EvaluateStage(stage, res, nil)
	for i := range out {
		out[i].Status, out[i].Message, out[i].Values = result.StatusSkipped, why, nil
	}
	return out
}
