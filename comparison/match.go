package comparison

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
)

// Want is what a run produces of one stage: its name, its load, and the
// labels of its points, as far as they are known before it runs.
type Want struct {
	Stage  string
	Load   Load
	Labels []string
}

// PlanWants is what the plan's stages will produce, known from the plan
// alone: the stage's load, a point per level of a concurrency, rate or
// users list, and per part of it (a turn of a multi-turn prompt set, a
// model of models:). A stage whose levels are found
// as it runs (a search) has no labels here.
func PlanWants(p *scenario.Plan, stages []*scenario.Stage) []Want {
	var out []Want
	for _, st := range stages {
		lp := p.LoadPlan(st)
		w := Want{Stage: st.Name, Load: NewLoad(lp.Kind, st.Search != nil, string(st.API), string(st.Mode)).WithLengths(lp.Requested())}
		turns := 0
		if ps := p.Prompts[st.Prompts]; ps != nil && ps.Turns > 1 {
			turns = ps.Turns
		}
		var points []result.Point
		for _, c := range st.Concurrency {
			points = append(points, result.Point{Concurrency: c})
		}
		for _, r := range st.Rate {
			points = append(points, result.Point{Rate: result.Ptr(r)})
		}
		for _, u := range st.Users {
			points = append(points, result.Point{Users: u})
		}
		for _, pt := range points {
			w.Labels = append(w.Labels, pt.Label())
			for _, k := range partsOf(lp, turns) {
				pt.Turn, pt.Model, pt.ProbeRequests = k.Turn, k.Model, k.ProbeRequests
				w.Labels = append(w.Labels, pt.Label())
			}
		}
		out = append(out, w)
	}
	return out
}

// partsOf are the parts a level of lp reports beside its own point, in
// their order: its turns (of a multi-turn prompt set of turns), its models
// of weight above 0, its probe requests.
func partsOf(lp *scenario.LoadPlan, turns int) []result.PartKey {
	var out []result.PartKey
	for k := 1; k <= turns; k++ {
		out = append(out, result.PartKey{Turn: k})
	}
	for _, m := range lp.Models {
		if m.Share() > 0 {
			out = append(out, result.PartKey{Model: m.Name})
		}
	}
	return out
}

// ReportWants is what a report holds, read as PlanWants reads a plan: its
// stages' loads and their points' labels (none for a search, whose probes
// are found as it runs and matched by their load).
func ReportWants(r *result.Report) []Want {
	var out []Want
	for i := range r.Stages {
		st := &r.Stages[i]
		w := Want{Stage: st.Name, Load: StageLoad(st)}
		if st.Search == nil {
			w.Labels = pointLabels(st)
		}
		out = append(out, w)
	}
	return out
}

func pointLabels(st *result.Stage) []string {
	var out []string
	for i := range st.Points {
		out = append(out, st.Points[i].Label())
	}
	return out
}

// Unlike returns an error, one line, when a run of plan (by name) that
// produces want measured something else than the baseline: another plan, or
// a stage both have that asked the server for another load (Load.Diff). It
// is the rule runner compare and --baseline share, so the two refuse the
// same pairs with the same words; their difference is not a change.
func Unlike(base *result.Report, plan string, want []Want) error {
	return joined(unlike(base, plan, want))
}

func unlike(base *result.Report, plan string, want []Want) []string {
	var bad []string
	if base.Plan.Name != plan {
		bad = append(bad, fmt.Sprintf("it is a run of plan %s, not %s", strconv.Quote(base.Plan.Name), strconv.Quote(plan)))
	}
	for _, w := range want {
		if bst := base.StageNamed(w.Stage); bst != nil {
			if d := w.Load.Diff(StageLoad(bst)); len(d) > 0 {
				bad = append(bad, fmt.Sprintf("its stage %s ran another load (baseline → this run: %s)", strconv.Quote(w.Stage), strings.Join(d, ", ")))
			}
		}
	}
	return bad
}

// Mismatch is Unlike, and what a run's --baseline needs besides: every stage
// and listed level of the run in the baseline, since the run's checks read
// them (runner compare shows a partial match instead, saying so first). A
// baseline with more stages or levels than the run is fine (a run of some
// stages).
func Mismatch(base *result.Report, plan string, want []Want) error {
	bad := unlike(base, plan, want)
	for _, w := range want {
		bst := base.StageNamed(w.Stage)
		if bst == nil {
			bad = append(bad, fmt.Sprintf("it has no stage %s (it has %s)", strconv.Quote(w.Stage), names(base)))
			continue
		}
		have := pointLabels(bst)
		var lack []string
		for _, l := range w.Labels {
			if !slices.Contains(have, l) {
				lack = append(lack, l)
			}
		}
		if len(lack) > 0 {
			bad = append(bad, fmt.Sprintf("it has no level %s of stage %s (it has %s)", strings.Join(lack, ", "), strconv.Quote(w.Stage), orNone(have)))
		}
	}
	return joined(bad)
}

func joined(bad []string) error {
	if len(bad) == 0 {
		return nil
	}
	return errors.New(strings.Join(bad, "; "))
}

func names(r *result.Report) string {
	var out []string
	for _, st := range r.Stages {
		out = append(out, strconv.Quote(st.Name))
	}
	return orNone(out)
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
