// Package pipeline runs a plan end to end and returns its result.Report:
//
//	plan (scenario) → load (runner) → records (records) → report (aggregate) → checks (checks)
//
// The load stage sends requests and hands over records; everything after the
// records is a pure function of the plan and the records, computed by the
// same code whether the records arrive live (Run) or are read back from a
// result directory (Recompute). Reporters, the output directory and exit
// codes belong to the caller (the CLI).
package pipeline

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/checks"
	"github.com/runnerbench/runner/diagnosis"
	"github.com/runnerbench/runner/records"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
	"github.com/runnerbench/runner/search"
)

// stageResult is one stage as the report needs it: its points (aggregated
// from its records) and the plan stage whose checks judge them.
type stageResult struct {
	agg  *aggregate.Stage
	plan *scenario.Stage
	// interrupted: the run stopped before the stage's levels were done.
	interrupted bool
	// sweepStop: why the sweep stopped at saturation (nil: it did not).
	sweepStop *result.SweepStop
}

// assemble builds the report from a run's header, its stages and how it
// ended, compares it with the baseline (when given), evaluates every check
// and decides the verdict. It is the one place a report is put together.
func assemble(h *records.Header, stages []stageResult, end *records.End, base *Baseline) *result.Report {
	rep := &result.Report{
		SchemaVersion: result.SchemaVersion,
		RunnerVersion: h.RunnerVersion,
		Plan:          h.Plan,
		StartedAt:     h.StartedAt,
		Labels:        h.Labels,
		Host:          h.Host,
		Stages:        []result.Stage{},
	}
	if end == nil {
		rep.StopReason = result.StopInterrupted
		rep.Warnings = append(rep.Warnings, "the run's records end without its end: it was killed or crashed, and the report covers what was recorded")
	} else {
		rep.EndedAt, rep.StopReason = end.EndedAt, end.StopReason
		rep.Warnings = append(rep.Warnings, end.Warnings...)
		rep.Export, rep.Telemetry = end.Export, end.Telemetry
	}
	shard := shardReport(rep, h)
	for _, sr := range stages {
		res := sr.agg.Result()
		res.Interrupted = sr.interrupted || slices.ContainsFunc(res.Points, func(p result.Point) bool { return p.Interrupted })
		if s := sr.plan.Search; s != nil {
			res.Search = search.Decide(s, res.Points).Result
		}
		finishStops(res, sr)
		if !shard {
			// A shard's levels hold its part of the load only.
			res.Diagnosis = diagnosis.Diagnose(res, sr.agg.ExpectsPrefixHits())
		}
		rep.Stages = append(rep.Stages, *res)
	}
	var baseline *result.Report
	if base != nil && !shard {
		rep.Baseline, baseline = base.Path, base.Report
		compareBaseline(rep, stages, base)
	}
	for i, sr := range stages {
		res := &rep.Stages[i]
		if shard {
			// A shard's levels hold its part only: its checks are the merge's.
			res.Checks = checks.Deferred(sr.plan, res, deferredChecks)
			continue
		}
		bst := checks.BaselineStage(baseline, res.Name)
		res.Checks = checks.EvaluateStage(sr.plan, res, bst)
		if base != nil {
			rep.Warnings = append(rep.Warnings, baselineGaps(base.Path, bst, res)...)
		}
	}
	rep.Verdict = checks.Verdict(rep)
	return rep
}

// baselineGaps names what of res the --baseline report (at path) cannot be
// compared with: the whole stage, or single levels. Checks there see
// baseline == nil, so a guarded check passes without comparing anything.
func baselineGaps(path string, base, res *result.Stage) []string {
	if len(res.Points) == 0 {
		return nil
	}
	if base == nil {
		return []string{fmt.Sprintf("baseline %s has no stage %s: its checks ran with baseline == nil", path, res.Name)}
	}
	missing := checks.MissingBaselineLevels(base, res)
	if len(missing) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("baseline %s has no level %s of stage %s: checks there ran with baseline == nil", path, strings.Join(missing, ", "), res.Name)}
}

// stageEntry is the stage's record with the checks that judge it, so a
// report can be recomputed (and re-gated) from the records alone.
func stageEntry(rec *result.StageRecord, st *scenario.Stage) records.Entry {
	return records.Entry{Kind: records.KindStage, Stage: rec, Checks: st.Checks, Search: st.Search, Until: st.UntilPlan()}
}

// utcNow is the wall-clock time reports carry.
func utcNow() time.Time { return time.Now().UTC() }
