package pipeline

import (
	"fmt"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/records"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
)

// Recompute computes the report of the run recorded in dir from its records
// alone, with the code a live run uses, so it equals the live report. The
// checks are the ones recorded with each stage; baseline is compared against
// as in Run.
func Recompute(dir string, baseline *result.Report, baselinePath string) (*result.Report, error) {
	run, err := records.ReadRun(dir)
	if err != nil {
		return nil, err
	}
	stages, err := replay([]*records.Run{run}, []string{dir})
	if err != nil {
		return nil, err
	}
	return assemble(&run.Header, stages, run.End, baseline, baselinePath), nil
}

// replay feeds the records of one or more runs of the same plan (the shards
// of a sharded run, or one run) through the stages' aggregates, level by
// level in the order they ran, and returns the stages.
func replay(runs []*records.Run, dirs []string) ([]stageResult, error) {
	first := runs[0]
	var out []stageResult
	byName := map[string]*aggregate.Stage{}
	for _, sr := range first.Stages {
		plan, err := stagePlan(sr)
		if err != nil {
			return nil, err
		}
		agg := aggregate.NewStage(0)
		agg.StageStarted(&sr.Record)
		for _, lvl := range sr.Levels {
			agg.LevelStarted(lvl)
		}
		byName[sr.Record.Name] = agg
		out = append(out, stageResult{agg: agg, plan: plan})
	}
	for _, dir := range dirs {
		err := records.EachRequest(dir, func(r *result.Request) error {
			if agg := byName[r.Stage]; agg != nil {
				agg.Request(r)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	for i, sr := range first.Stages {
		for _, lvl := range sr.Levels {
			out[i].agg.LevelDone(lvl)
		}
		if sr.Done != nil && sr.Done.Error != "" {
			out[i].agg.Error(sr.Done.Error)
		}
	}
	return out, nil
}

// stagePlan rebuilds the plan stage a stage's checks need from its records.
func stagePlan(sr *records.StageRun) (*scenario.Stage, error) {
	st := &scenario.Stage{Name: sr.Record.Name, Checks: sr.Checks}
	for _, c := range st.Checks {
		if err := c.Compile(); err != nil {
			return nil, fmt.Errorf("stage %s: %w", st.Name, err)
		}
	}
	return st, nil
}
