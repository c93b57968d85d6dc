package html

import (
	"fmt"
	"strconv"

	"github.com/runnerbench/runner/result"
)

// cmpRow is one metric of one level against the baseline, as the page
// shows it: the change, its interval, the verdict and what it rests on.
type cmpRow struct {
	Level, Metric, Base, New, Change, Interval, Verdict, Why string
}

// cmpView is a stage's comparison with the baseline: the changes worth a
// look (result.Comparison.Changed), and how many metrics were the same.
type cmpView struct {
	Rows []cmpRow
	Same int
	Note string
}

// comparisonOf is the stage's comparison with the baseline (nil when its
// points were compared with none).
func comparisonOf(st *result.Stage, s *result.ComparisonSummary) *cmpView {
	if s == nil {
		return nil
	}
	v := &cmpView{}
	compared := false
	for i := range st.Points {
		pt := &st.Points[i]
		for j := range pt.BaselineComparison {
			c := &pt.BaselineComparison[j]
			compared = true
			if c.Verdict == "same" {
				v.Same++
			}
			if !c.Changed(s.Records) {
				continue
			}
			why := c.Samples()
			if c.Reason != "" {
				why = c.Reason
			}
			v.Rows = append(v.Rows, cmpRow{Level: pt.Label(), Metric: c.Metric, Base: fmtPtr(c.Base), New: fmtPtr(c.New),
				Change: c.Change(), Interval: c.IntervalText(), Verdict: c.Verdict, Why: why})
		}
	}
	if !compared {
		return nil
	}
	v.Note = fmt.Sprintf("%d metrics are the same as the baseline's (the whole interval within ±%s). ", v.Same, pctText(s.Threshold))
	if s.Records {
		v.Note += fmt.Sprintf("Intervals hold together with %s confidence over the %d gated comparisons (%s each, Bonferroni); inconclusive means the data cannot tell, not that nothing changed.",
			pctText(s.Confidence), s.Gated, pctText(s.Each))
	} else {
		v.Note += "No intervals: the baseline's or this run's request records were missing, so no change is judged better or worse."
	}
	return v
}

func pctText(f float64) string { return strconv.FormatFloat(f*100, 'g', 4, 64) + "%" }
