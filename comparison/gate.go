package comparison

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/runnerbench/runner/internal/stats"

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

// count fills the summary's verdict counts over the gated comparisons, and
// the most common reason of the inconclusive ones.
func (r *Result) count() {
	s := &r.Summary
	why := map[string]int{}
	for _, l := range r.Levels {
		for _, c := range l.Rows {
			if !c.Gated {
				continue
			}
			s.Gated++
			switch stats.Verdict(c.Verdict) {
			case stats.Worse:
				s.Worse++
			case stats.Better:
				s.Better++
			case stats.Same:
				s.Same++
			default:
				s.Inconclusive++
				why[c.Reason]++
			}
		}
	}
	for reason, n := range why {
		if n > why[s.InconclusiveWhy] || n == why[s.InconclusiveWhy] && reason < s.InconclusiveWhy {
			s.InconclusiveWhy = reason
		}
	}
}

// nothingGated says why the gate judged nothing ("": it judged something):
// no stage, level or metric the two runs have in common.
func nothingGated(base, cur *result.Report, r *Result, fam *Family) string {
	for _, l := range r.Levels {
		for _, c := range l.Rows {
			if c.Gated && c.Base != nil && c.New != nil {
				return ""
			}
		}
	}
	var common []string
	for _, st := range cur.Stages {
		if base.StageNamed(st.Name) != nil {
			common = append(common, strconv.Quote(st.Name))
		}
	}
	plans := ""
	if base.Plan.Name != cur.Plan.Name {
		plans = fmt.Sprintf("the runs are of plans %s and %s, and ", strconv.Quote(base.Plan.Name), strconv.Quote(cur.Plan.Name))
	}
	switch {
	case len(common) == 0:
		return fmt.Sprintf("%sno stage is in both (the baseline has %s, the new run %s)", plans, names(base), names(cur))
	case len(r.Levels) == 0:
		return fmt.Sprintf("%sno level is in both (stage %s: the baseline has %s, the new run %s)", plans, strings.Join(common, ", "),
			labelsOf(base, common), labelsOf(cur, common))
	}
	return fmt.Sprintf("%sno metric of the gate is in both runs at a level both have (judged: %s)", plans, fam.rec.String())
}

// labelsOf lists the levels of the stages named (quoted) in r.
func labelsOf(r *result.Report, quoted []string) string {
	var out []string
	for _, st := range r.Stages {
		if slices.Contains(quoted, strconv.Quote(st.Name)) {
			out = append(out, pointLabels(&st)...)
		}
	}
	return orNone(out)
}

// Shown are the rows a reader sees, most important first: what was judged
// worse (by how much worse), then better (by how much better); with all,
// then every other row (inconclusive by the size of its change, same, and
// what is not judged). Rest counts the rows left out, by what they are.
func (r *Result) Shown(all bool) (rows []Finding, rest map[string]int) {
	rest = map[string]int{}
	for _, l := range r.Levels {
		for _, c := range l.Rows {
			switch {
			case c.Verdict == string(stats.Worse) || c.Verdict == string(stats.Better) || all:
				rows = append(rows, Finding{Stage: l.Stage, Label: l.Label, Comparison: c})
			case c.Verdict == "":
				rest["not judged"]++
			default:
				rest[c.Verdict]++
			}
		}
	}
	sort.SliceStable(rows, func(i, j int) bool {
		ri, rj := rank(&rows[i].Comparison), rank(&rows[j].Comparison)
		if ri != rj {
			return ri < rj
		}
		return size(&rows[i].Comparison) > size(&rows[j].Comparison)
	})
	return rows, rest
}

// rank orders verdicts by how much they matter.
func rank(c *result.Comparison) int {
	switch stats.Verdict(c.Verdict) {
	case stats.Worse:
		return 0
	case stats.Better:
		return 1
	case stats.Inconclusive:
		return 2
	case stats.Same:
		return 3
	}
	return 4
}

// size is how large a change is, as a fraction of the base (+Inf from 0,
// 0 when there is none to tell).
func size(c *result.Comparison) float64 {
	w := math.Abs(c.WorseBy())
	if math.IsNaN(w) {
		return 0
	}
	return w
}

// RestLine is one line for the rows Shown left out ("" when none was); all
// names what shows them.
func RestLine(rest map[string]int, all string) string {
	var parts []string
	for _, k := range []string{"inconclusive", "same", "not judged"} {
		if n := rest[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, k))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "Not shown: " + strings.Join(parts, ", ") + " (" + all + " shows every row)."
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

// FromReport is the comparison a report carries (nil: none), of one stage
// or, with stage "", of all: what the report's sections show, by the rules
// runner compare shows its own by.
func FromReport(rep *result.Report, stage string) *Result {
	if rep.Comparison == nil {
		return nil
	}
	r := &Result{Summary: *rep.Comparison}
	for _, st := range rep.Stages {
		if stage != "" && st.Name != stage {
			continue
		}
		for i := range st.Points {
			if rows := st.Points[i].BaselineComparison; rows != nil {
				r.Levels = append(r.Levels, Level{Stage: st.Name, Label: st.Points[i].Label(), Rows: rows})
			}
		}
	}
	return r
}
