package checks

import (
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
)

// Deferred lists stage's checks as EvaluateStage would, each one skipped
// with why: the report of one shard of a sharded run holds that shard's part
// of each level only, and its checks are judged once, on the merged levels
// (runner merge). A shard that failed a throughput check on its own part
// would fail its job for nothing.
func Deferred(stage *scenario.Stage, res *result.Stage, why string) []result.CheckOutcome {
	var out []result.CheckOutcome
	if stage == nil || res == nil {
		return nil
	}
	for _, c := range stage.Checks {
		if c == nil || c.Scope == scenario.ScopeStage {
			continue
		}
		for i := range res.Points {
			o := newOutcome(c)
			o.Level, o.LevelLabel = &i, res.Points[i].Label()
			o.Status, o.Message = result.StatusSkipped, why
			out = append(out, o)
		}
	}
	for _, c := range stage.Checks {
		if c != nil && c.Scope == scenario.ScopeStage {
			o := newOutcome(c)
			o.Status, o.Message = result.StatusSkipped, why
			out = append(out, o)
		}
	}
	return out
}
