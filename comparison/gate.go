package comparison

import (
	"sort"

	"github.com/runnerbench/runner/result"
)

// Finding is one comparison with the level it belongs to.
type Finding struct {
	Stage, Label string
	result.Comparison
}

// Failures are the comparisons that fail a gate at pct percent (Fails:
// worse, and worse by more than pct), worst first.
func (r *Result) Failures(pct float64) []Finding {
	var out []Finding
	for _, l := range r.Levels {
		for _, c := range l.Rows {
			if c.Fails(pct) {
				out = append(out, Finding{Stage: l.Stage, Label: l.Label, Comparison: c})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].WorseBy() > out[j].WorseBy() })
	return out
}

// WorstRegression is the largest significant regression of a server metric:
// of the comparisons called worse, the one worse by the most.
func (r *Result) WorstRegression() (Finding, bool) {
	all := r.Failures(-100) // every worse one: a worse change is worse by more than -100%
	if len(all) == 0 {
		return Finding{}, false
	}
	return all[0], true
}

// Count is how many comparisons have each verdict.
func (r *Result) Count() map[string]int {
	out := map[string]int{}
	for _, l := range r.Levels {
		for _, c := range l.Rows {
			if c.Verdict != "" {
				out[c.Verdict]++
			}
		}
	}
	return out
}

// Attach puts each level's comparisons on rep's points (baseline_comparison)
// and the summary on rep, so the report carries what its checks read.
func (r *Result) Attach(rep *result.Report) {
	s := r.Summary
	rep.Comparison = &s
	for _, l := range r.Levels {
		for si := range rep.Stages {
			st := &rep.Stages[si]
			if st.Name != l.Stage {
				continue
			}
			for pi := range st.Points {
				if st.Points[pi].Label() == l.Label {
					st.Points[pi].BaselineComparison = l.Rows
				}
			}
		}
	}
}
