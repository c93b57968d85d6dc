package pipeline

import (
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/stopping"
)

// finishStops completes the stage's points for the report from its
// records: each until level's intervals and stop, and the sweep's recorded
// stop (stopping.Stage.FinishStage).
func finishStops(res *result.Stage, sr stageResult) {
	stopping.New(sr.plan).FinishStage(res, sr.agg.Samples, sr.sweepStop)
}
