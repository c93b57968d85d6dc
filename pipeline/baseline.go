package pipeline

import (
	"fmt"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/comparison"
	"github.com/runnerbench/runner/records"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
)

// Baseline is the run a report is compared with (--baseline): its report,
// and its levels' per-request samples when its records are at hand.
type Baseline struct {
	// Path names it in the report, as the command line gave it.
	Path   string
	Report *result.Report
	// Samples are its points' samples (RecordSamples); nil without records.
	Samples func(stage, label string) *aggregate.Samples
	// FailInconclusive is --fail-inconclusive: a comparison that could judge
	// nothing it matched fails the run.
	FailInconclusive bool
}

// RecordSamples reads the records of the run in dir, whose report is rep,
// keeping every level's per-request samples: what comparing that run with
// another needs beyond its report. Records of another run than rep's (a
// different plan or start) are an error: their intervals would be about
// numbers rep does not show.
func RecordSamples(dir string, rep *result.Report) (func(stage, label string) *aggregate.Samples, error) {
	run, err := records.ReadRun(dir)
	if err != nil {
		return nil, err
	}
	if run.Header.Plan.Hash != rep.Plan.Hash || !run.Header.StartedAt.Equal(rep.StartedAt) {
		return nil, fmt.Errorf("%s: the records are of another run than its report.json (plan %.12s started %s, the report's %.12s started %s)",
			dir, run.Header.Plan.Hash, run.Header.StartedAt.Format("2006-01-02T15:04:05Z07:00"), rep.Plan.Hash, rep.StartedAt.Format("2006-01-02T15:04:05Z07:00"))
	}
	stages, err := replay([]*records.Run{run}, []string{dir}, true)
	if err != nil {
		return nil, err
	}
	return samplesOf(stages), nil
}

// samplesOf looks a point's samples up in the stages' aggregates.
func samplesOf(stages []stageResult) func(stage, label string) *aggregate.Samples {
	byName := map[string]*aggregate.Stage{}
	for _, sr := range stages {
		if name := sr.agg.Result().Name; byName[name] == nil {
			byName[name] = sr.agg
		}
	}
	return func(stage, label string) *aggregate.Samples {
		if a := byName[stage]; a != nil {
			return a.Samples(label)
		}
		return nil
	}
}

// compareBaseline compares the report's levels with the baseline's and puts
// the comparisons on its points, before the checks that read them. The gate
// judges the family of the plan's worse() checks (comparison.PlanFamily),
// the one runner compare judges on the same pair.
func compareBaseline(rep *result.Report, stages []stageResult, base *Baseline) {
	var plans []*scenario.Stage
	for _, sr := range stages {
		plans = append(plans, sr.plan)
	}
	fam := comparison.PlanFamily(plans)
	cur := comparison.Run{Report: rep, Samples: samplesOf(stages)}
	res, err := comparison.Compare(comparison.Run{Report: base.Report, Samples: base.Samples}, cur,
		comparison.Options{Threshold: fam.Threshold(), Family: fam, FailInconclusive: base.FailInconclusive})
	if err != nil { // the options are this function's own: a bug
		rep.Warnings = append(rep.Warnings, "the comparison with the baseline failed: "+err.Error())
		return
	}
	res.Attach(rep)
	for _, n := range res.Notes {
		rep.Warnings = append(rep.Warnings, "baseline "+base.Path+": "+n)
	}
}

// RecordedStages are the stages of the run recorded in dir with the checks
// recorded with them (compiled): what its gate is decided from
// (comparison.PlanFamily), as runner report decides it.
func RecordedStages(dir string) ([]*scenario.Stage, error) {
	run, err := records.ReadRun(dir)
	if err != nil {
		return nil, err
	}
	var out []*scenario.Stage
	for _, sr := range run.Stages {
		st, err := stagePlan(sr)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// CheckBaseline returns an error, one line, when base cannot be compared
// with a run of the plan named plan whose stages produce want: another
// plan, a stage or level it does not have, or a check calling worse() with
// no records of the baseline (its comparisons would have no intervals, and
// the gate could never fail).
func CheckBaseline(plan string, want []comparison.Want, stages []*scenario.Stage, base *Baseline) error {
	if base == nil {
		return nil
	}
	if err := comparison.Mismatch(base.Report, plan, want); err != nil {
		return fmt.Errorf("does not match the run: %w", err)
	}
	if base.Samples != nil {
		return nil
	}
	for _, st := range stages {
		for _, c := range st.Checks {
			if len(c.Gates) > 0 {
				return fmt.Errorf("has no request records (requests.jsonl and run.jsonl beside its report.json), which worse() in check %q of stage %s needs", checkName(c), st.Name)
			}
		}
	}
	return nil
}

func checkName(c *scenario.Check) string {
	if c.Name != "" {
		return c.Name
	}
	return c.Expr
}
