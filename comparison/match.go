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

// Want is what a run produces of one stage: its name and the labels of its
// points, as far as they are known before it runs.
type Want struct {
	Stage  string
	Labels []string
}

// PlanWants is what the plan's stages will produce, known from the plan
// alone: a point per level of a concurrency or rate list, and per turn of a
// multi-turn prompt set. A stage whose levels are found as it runs has no
// labels here.
func PlanWants(p *scenario.Plan, stages []*scenario.Stage) []Want {
	var out []Want
	for _, st := range stages {
		w := Want{Stage: st.Name}
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
		for _, pt := range points {
			w.Labels = append(w.Labels, pt.Label())
			for k := 1; k <= turns; k++ {
				pt.Turn = k
				w.Labels = append(w.Labels, pt.Label())
			}
		}
		out = append(out, w)
	}
	return out
}

// ReportWants is what a report holds: its stages and their points' labels.
func ReportWants(r *result.Report) []Want {
	var out []Want
	for _, st := range r.Stages {
		w := Want{Stage: st.Name}
		for i := range st.Points {
			w.Labels = append(w.Labels, st.Points[i].Label())
		}
		out = append(out, w)
	}
	return out
}

// Mismatch returns an error, one line, naming what of a run of plan (by
// name) that produces want the baseline cannot be compared with: another
// plan, a stage it does not have, levels it does not have. A baseline with
// more stages or levels than the run is fine (a run of some stages).
func Mismatch(base *result.Report, plan string, want []Want) error {
	var bad []string
	if base.Plan.Name != plan {
		bad = append(bad, fmt.Sprintf("it is a run of plan %s, not %s", strconv.Quote(base.Plan.Name), strconv.Quote(plan)))
	}
	for _, w := range want {
		bst := base.StageNamed(w.Stage)
		if bst == nil {
			bad = append(bad, fmt.Sprintf("it has no stage %s (it has %s)", strconv.Quote(w.Stage), names(base)))
			continue
		}
		have := ReportWants(&result.Report{Stages: []result.Stage{*bst}})[0].Labels
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
