package pipeline

import (
	"fmt"
	"time"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/comparison"
	"github.com/runnerbench/runner/records"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
)

// Recompute computes the report of the run recorded in dir from its records
// alone, with the code a live run uses, so it equals the live report. The
// checks are the ones recorded with each stage; base (nil: none) is compared
// with as in Run.
func Recompute(dir string, base *Baseline) (*result.Report, error) {
	run, err := records.ReadRun(dir)
	if err != nil {
		return nil, err
	}
	return recompute(dir, run, base)
}

// recompute is Recompute of the records read from dir.
func recompute(dir string, run *records.Run, base *Baseline) (*result.Report, error) {
	stages, err := replay([]*records.Run{run}, []string{dir}, base != nil)
	if err != nil {
		return nil, err
	}
	if base != nil {
		var plans []*scenario.Stage
		var want []comparison.Want
		for _, sr := range stages {
			plans = append(plans, sr.plan)
			w := comparison.ReportWants(&result.Report{Stages: []result.Stage{*sr.agg.Result()}})[0]
			if sr.plan.Search != nil {
				// A search's outcome is added to its stage later: its
				// probes are found as it runs, and matched by their load.
				w.Load.Search, w.Labels = true, nil
			}
			want = append(want, w)
		}
		if err := CheckBaseline(run.Header.Plan.Name, want, plans, base); err != nil {
			return nil, fmt.Errorf("baseline %s %w", base.Path, err)
		}
	}
	return assemble(&run.Header, stages, run.End, base), nil
}

// replay feeds the records of one or more runs of the same plan (the shards
// of a sharded run, or one run) through the stages' aggregates, level by
// level in the order they ran, and returns the stages; with keep, they keep
// every level's per-request samples.
func replay(runs []*records.Run, dirs []string, keep bool) ([]stageResult, error) {
	first := runs[0]
	var out []stageResult
	byName := map[string]*aggregate.Stage{}
	for _, sr := range first.Stages {
		plan, err := stagePlan(sr)
		if err != nil {
			return nil, err
		}
		agg := aggregate.NewStage(0)
		if keep || plan.UntilPlan() != nil {
			agg.KeepSamples() // a baseline's comparison, until:'s intervals
		}
		agg.StageStarted(&sr.Record)
		for _, lvl := range sr.Levels {
			agg.LevelStarted(lvl)
		}
		if sr.Started != nil {
			agg.LevelStarted(sr.Started)
		}
		byName[sr.Record.Name] = agg
		// A stage without its end was running when the run was killed.
		interrupted := sr.Done == nil || sr.Done.Interrupted
		var sweep *result.SweepStop
		if sr.Done != nil {
			sweep = sr.Done.SweepStop
		}
		out = append(out, stageResult{agg: agg, plan: plan, interrupted: interrupted, sweepStop: sweep})
	}
	cut := map[*result.LevelRecord]*time.Time{} // killed levels: their last completion
	for _, dir := range dirs {
		err := records.EachRequest(dir, func(r *result.Request) error {
			if agg := byName[r.Stage]; agg != nil {
				agg.Request(r)
			}
			noteCut(first, r, cut)
			return nil
		})
		if err != nil {
			return nil, err
		}
		err = records.EachTelemetry(dir, func(r *result.TelemetryScrape) error {
			if agg := byName[r.Stage]; agg != nil {
				agg.Telemetry(r)
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
		if sr.Started != nil {
			out[i].agg.LevelDone(killedLevel(sr.Started, cut[sr.Started]))
		}
		if sr.Done != nil && sr.Done.Error != "" {
			out[i].agg.Error(sr.Done.Error)
		}
	}
	return out, nil
}

// stagePlan rebuilds the plan stage a stage's checks need from its records.
func stagePlan(sr *records.StageRun) (*scenario.Stage, error) {
	st := &scenario.Stage{Name: sr.Record.Name, Checks: sr.Checks, Search: sr.Search}
	st.SetUntil(sr.Until)
	for _, c := range st.Checks {
		if err := c.Compile(); err != nil {
			return nil, fmt.Errorf("stage %s: %w", st.Name, err)
		}
	}
	if st.Search != nil {
		if err := st.Search.Compile(); err != nil {
			return nil, fmt.Errorf("stage %s: %w", st.Name, err)
		}
	}
	return st, nil
}

// noteCut tracks, for a level the run was killed in, when its last finished
// request ended.
func noteCut(run *records.Run, r *result.Request, cut map[*result.LevelRecord]*time.Time) {
	for _, sr := range run.Stages {
		if l := sr.Started; l != nil && sr.Record.Name == r.Stage && l.Level == r.Level && !r.Warmup && !r.Start.IsZero() {
			end := r.Start.Add(time.Duration(r.E2EMs * float64(time.Millisecond)))
			if t := cut[l]; t == nil || end.After(*t) {
				cut[l] = &end
			}
		}
	}
}

// killedLevel is the record of a level the run was killed in: its window
// from its start to its last finished request, marked interrupted. Its
// token gaps and server counters died with the process; its finished
// requests did not, and count.
func killedLevel(started *result.LevelRecord, lastEnd *time.Time) *result.LevelRecord {
	rec := *started
	rec.Interrupted = true
	rec.End = rec.Start
	if lastEnd != nil && lastEnd.After(rec.Start) {
		rec.End = *lastEnd
	}
	rec.WallNs = int64(rec.End.Sub(rec.Start))
	return &rec
}
