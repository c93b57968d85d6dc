package runner

import (
	"context"
	"fmt"
	"strings"

	"github.com/runnerbench/runner/internal/redact"
	"github.com/runnerbench/runner/protocol"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/runner/body"
	"github.com/runnerbench/runner/runner/shape"
	"github.com/runnerbench/runner/runner/shard"
	"github.com/runnerbench/runner/scenario"
)

// stagePlan is a stage compiled for sending: its API, its bodies, and the
// rules that hold for the whole stage.
type stagePlan struct {
	st      *scenario.LoadPlan // the stage, compiled by the plan
	proto   protocol.Protocol  // the API the stage speaks
	body    *body.Stage        // how to build request seq's body
	warmups int                // unmeasured warm-up requests before each level
	// served decides once whether the endpoint serves the stage's API.
	served *servedCheck
}

// unit is what one claimed request of this stage is.
func (sp *stagePlan) unit() unit {
	if sp.body.Turns() > 1 {
		return conversations{}
	}
	return single{}
}

// sweep is the stage's load shape across levels (shape.For picks it).
func (sp *stagePlan) sweep() shape.Sweep {
	st := shape.Stage{Plan: sp.st, Spec: sp.levelSpec}
	if times, summary := sp.body.Trace(); summary != nil {
		st.Replay = &shape.Replay{Times: times, Summary: summary}
	}
	return shape.For(st)
}

// levelSpec is the spec of a level of this stage: what was requested, and
// the objectives its metrics are judged against.
func (sp *stagePlan) levelSpec(label string, conc int, rate *float64) result.LevelSpec {
	spec := result.LevelSpec{Label: label, Concurrency: conc, Rate: rate, SliceNs: int64(sp.st.Slices)}
	sp.body.Describe(&spec)
	// What a level says it asked for is what a baseline is matched by
	// before the run (comparison.PlanWants): one rule for both.
	spec.InputTokens, spec.OutputTokens = sp.st.Requested()
	if slo := sp.st.SLO; slo != nil {
		spec.SLO = &result.SLO{TTFTMs: slo.TTFTMs, TPOTMs: slo.TPOTMs, E2EMs: slo.E2EMs}
	}
	return spec
}

// compileStage prepares st for sending. It trusts the plan as scenario
// loaded it (validated, defaults applied): nothing is checked or defaulted
// twice, but a plan built in code may name an api nobody registered.
func (e *Engine) compileStage(ctx context.Context, st *scenario.LoadPlan) (*stagePlan, []string, error) {
	proto, ok := protocol.Lookup(string(st.API))
	if !ok {
		return nil, nil, fmt.Errorf("stage %s: api %q is not one of %s", st.Name, st.API, strings.Join(protocol.Names(), ", "))
	}
	b, warns, err := body.Compile(ctx, st, proto, e.model, e.nonces, e.cal)
	if err != nil {
		return nil, nil, err
	}
	return &stagePlan{st: st, proto: proto, body: b, warmups: st.Warmup, served: newServedCheck(proto)}, warns, nil
}

// RunStage runs every level of st (a stage the plan compiled: see
// scenario.Plan.LoadPlan), sending the stage's records to sink as they are
// made, and stops early when ctx is cancelled (the cut level marked
// Interrupted, its in-flight requests recorded as interrupted). It returns an
// error only when the stage could not run at all, or stopped before its
// levels were done for a reason other than ctx.
func (e *Engine) RunStage(ctx context.Context, st *scenario.LoadPlan, sink Sink) error {
	info := &result.StageRecord{
		Name: st.Name,
		Endpoint: result.Endpoint{
			Name: e.t.Name, BaseURL: redact.URL(e.c.BaseURL()), Model: e.model,
			Simulator: e.t.Endpoint.Simulator != nil,
		},
		API: string(st.API), Mode: string(st.Mode), Load: st.Kind,
	}
	sp, warns, err := e.compileStage(ctx, st)
	if err != nil {
		sink.StageStarted(info)
		return err
	}
	sweep := shard.Coordinate(e.opts.Sharding, st.Name, sp.sweep())
	_, info.Trace = sp.body.Trace()
	info.Warnings = append(append(info.Warnings, e.c.Warnings()...), warns...)
	sink.StageStarted(info)

	e.c.Resize(sweep.MaxConns())
	scraper := e.scraper()
	var last *result.Point
	for idx := 0; ctx.Err() == nil; idx++ {
		lvl, ok := sweep.Next(last)
		if !ok {
			break
		}
		rec := e.runLevel(ctx, sp, idx, lvl, scraper, sink)
		p := sink.LevelDone(rec)
		last = &p
		if err := sp.served.Err(); err != nil {
			return err
		}
		if ss, ok := sink.(SweepStopper); ok && st.StopAtSaturation && ss.StopSweep() {
			ss.Skipped(rest(sweep, last))
			break
		}
	}
	return shape.Err(sweep)
}

// rest are the levels a sweep had left, which a stop at saturation skips.
func rest(sweep shape.Sweep, last *result.Point) []result.LevelSpec {
	var out []result.LevelSpec
	for {
		lvl, ok := sweep.Next(last)
		if !ok {
			return out
		}
		out = append(out, lvl.Spec)
	}
}
