package html

import (
	"fmt"
	"strconv"

	"github.com/runnerbench/runner/comparison"
	"github.com/runnerbench/runner/result"
)

// cmpRow is one metric of one level against the baseline, as the page
// shows it: the change, its interval, the verdict and what it rests on.
type cmpRow struct {
	Level, Metric, Base, New, Change, Interval, Verdict, Why string
}

// cmpView is a stage's comparison with the baseline: what was judged worse
// or better, most important first, and a line for the rest.
type cmpView struct {
	Rows []cmpRow
	Rest string
	Note string
}

// comparisonOf is the stage's comparison with the baseline (nil when its
// points were compared with none).
func comparisonOf(r *result.Report, st *result.Stage) *cmpView {
	res := comparison.FromReport(r, st.Name)
	if res == nil || len(res.Levels) == 0 {
		return nil
	}
	s := res.Summary
	v := &cmpView{}
	rows, rest := res.Shown(false)
	for _, f := range rows {
		c := &f.Comparison
		why := c.Samples()
		if c.Reason != "" {
			why = c.Reason
		}
		v.Rows = append(v.Rows, cmpRow{Level: f.Label, Metric: c.Metric, Base: fmtPtr(c.Base), New: fmtPtr(c.New),
			Change: c.Change(), Interval: c.IntervalText(), Verdict: c.Verdict, Why: why})
	}
	v.Rest = comparison.RestLine(rest, "runner compare --all")
	if s.Records {
		v.Note = fmt.Sprintf("Same: the whole interval within ±%s. Intervals hold together with %s confidence over the %d gated comparisons with an interval (%s each, Bonferroni); inconclusive means the data cannot tell, not that nothing changed.",
			pctText(s.Threshold), pctText(s.Confidence), s.Intervals, pctText(s.Each))
	} else {
		v.Note = "No intervals: the baseline's or this run's request records were missing, so no change is judged better or worse."
	}
	return v
}

func pctText(f float64) string { return strconv.FormatFloat(f*100, 'g', 4, 64) + "%" }
