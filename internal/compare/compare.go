// Package compare computes per-metric deltas between two reports: the engine of
// `runner compare BASE.json NEW.json`. It is pure: two results in, rows out.
package compare

import (
	"sort"

	"github.com/runnerbench/runner/result"
)

// Row is one metric of one level present in both reports.
type Row struct {
	Stage  string
	Level  string // "c=32", "rate=4"
	Metric string // the JSON / expression name
	Base   float64
	New    float64
	Delta  float64 // New - Base
	// Rel is Delta / |Base| (nil when Base is 0).
	Rel       *float64
	Direction result.Better
	// Kind is what the metric describes; only server metrics regress.
	Kind result.Kind
	// Regression is true when a server metric changed in its worse direction.
	Regression bool
}

// RegressionPct returns how much worse the row got, in percent of the base (0
// when it did not get worse or the base is 0).
func (r Row) RegressionPct() float64 {
	if !r.Regression || r.Rel == nil {
		return 0
	}
	v := *r.Rel * 100
	if v < 0 {
		v = -v
	}
	return v
}

// Result is the whole comparison.
type Result struct {
	Rows []Row
	// Missing names levels or stages present in one report but not the other.
	Missing []string
}

// WorstRegression returns the row with the largest relative regression, if any.
func (r *Result) WorstRegression() (Row, bool) {
	var best Row
	found := false
	for _, row := range r.Rows {
		if row.Regression && row.Rel != nil && (!found || row.RegressionPct() > best.RegressionPct()) {
			best, found = row, true
		}
	}
	return best, found
}

// Regressions returns rows that got worse by more than pct percent.
func (r *Result) Regressions(pct float64) []Row {
	var out []Row
	for _, row := range r.Rows {
		if row.Regression && row.RegressionPct() > pct {
			out = append(out, row)
		}
	}
	return out
}

// Reports compares every numeric metric of every level present in both reports,
// matching stages by name and levels by label.
func Reports(base, cur *result.Report) *Result {
	res := &Result{}
	baseStages := map[string]*result.Stage{}
	for i := range base.Stages {
		baseStages[base.Stages[i].Name] = &base.Stages[i]
	}
	seen := map[string]bool{}
	for i := range cur.Stages {
		st := &cur.Stages[i]
		seen[st.Name] = true
		bst, ok := baseStages[st.Name]
		if !ok {
			res.Missing = append(res.Missing, "stage "+st.Name+" is not in the baseline")
			continue
		}
		basePoints := map[string]*result.Point{}
		for j := range bst.Points {
			basePoints[bst.Points[j].Label()] = &bst.Points[j]
		}
		curLabels := map[string]bool{}
		for j := range st.Points {
			p := &st.Points[j]
			label := p.Label()
			curLabels[label] = true
			bp, ok := basePoints[label]
			if !ok {
				res.Missing = append(res.Missing, st.Name+" "+label+" is not in the baseline")
				continue
			}
			res.Rows = append(res.Rows, points(st.Name, label, bp, p)...)
		}
		for j := range bst.Points {
			if l := bst.Points[j].Label(); !curLabels[l] {
				res.Missing = append(res.Missing, st.Name+" "+l+" is only in the baseline")
			}
		}
	}
	for _, bst := range base.Stages {
		if !seen[bst.Name] {
			res.Missing = append(res.Missing, "stage "+bst.Name+" is only in the baseline")
		}
	}
	return res
}

// points compares every numeric metric of two points, in catalogue order.
// Load metrics name the level and are not compared; the client's own
// diagnostics are compared but never count as a regression: they describe
// the measurement, not the server.
func points(stage, label string, base, cur *result.Point) []Row {
	var rows []Row
	for _, m := range result.Metrics() {
		if m.Kind == result.KindLoad || !m.Numeric() {
			continue
		}
		b, okB := m.Value(base)
		c, okC := m.Value(cur)
		if !okB || !okC {
			continue
		}
		row := Row{Stage: stage, Level: label, Metric: m.Name, Base: b, New: c, Delta: c - b, Direction: m.Better, Kind: m.Kind}
		if b != 0 {
			rel := (c - b) / abs(b)
			row.Rel = &rel
		}
		if m.Kind == result.KindServer {
			switch m.Better {
			case result.LowerIsBetter:
				row.Regression = c > b
			case result.HigherIsBetter:
				row.Regression = c < b
			}
		}
		rows = append(rows, row)
	}
	return rows
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// SortByRegression orders rows worst first (for a short summary).
func SortByRegression(rows []Row) {
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].RegressionPct() > rows[j].RegressionPct() })
}
