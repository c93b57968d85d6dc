// Package compare computes per-metric deltas between two reports: the engine of
// `runner compare BASE.json NEW.json`. It is pure: two results in, rows out.
package compare

import (
	"reflect"
	"sort"
	"strings"

	"github.com/runnerbench/runner/result"
)

// Direction says which way a metric improves.
type Direction int

// Directions.
const (
	Neutral Direction = iota // informational: a change is neither better nor worse
	LowerIsBetter
	HigherIsBetter
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
	Direction Direction
	// Regression is true when the change is in the worse direction.
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

// points compares the numeric fields of two points, in the struct's field order.
func points(stage, label string, base, cur *result.Point) []Row {
	var rows []Row
	bv, cv := reflect.ValueOf(base).Elem(), reflect.ValueOf(cur).Elem()
	t := bv.Type()
	for i := 0; i < t.NumField(); i++ {
		name := strings.Split(t.Field(i).Tag.Get("json"), ",")[0]
		if name == "" || name == "-" || identity[name] {
			continue
		}
		b, okB := number(bv.Field(i))
		c, okC := number(cv.Field(i))
		if !okB || !okC {
			continue
		}
		row := Row{Stage: stage, Level: label, Metric: name, Base: b, New: c, Delta: c - b, Direction: DirectionOf(name)}
		if b != 0 {
			rel := (c - b) / abs(b)
			row.Rel = &rel
		}
		switch row.Direction {
		case LowerIsBetter:
			row.Regression = c > b
		case HigherIsBetter:
			row.Regression = c < b
		}
		rows = append(rows, row)
	}
	return rows
}

// identity fields name the level rather than measure it.
var identity = map[string]bool{"concurrency": true, "rate": true, "turn": true, "input_tokens": true, "output_tokens": true}

func number(v reflect.Value) (float64, bool) {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return 0, false
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Float64, reflect.Float32:
		return v.Float(), true
	case reflect.Int, reflect.Int64, reflect.Int32:
		return float64(v.Int()), true
	}
	return 0, false
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// higherIsBetter lists the metrics where more is better; latencies (_ms) and
// failure counts are lower-is-better; the rest are informational.
var higherIsBetter = map[string]bool{
	"completed": true, "output_tps_total": true, "output_tps_per_stream": true,
	"prefill_tps": true, "spec_acceptance_rate": true, "spec_acceptance_length": true,
	"request_tps": true, "goodput": true, "achieved_rate": true,
}

var lowerIsBetter = map[string]bool{
	"failed": true, "output_len_mismatch": true, "client_cpu_percent": true,
}

// DirectionOf returns the direction of a metric by name.
func DirectionOf(metric string) Direction {
	switch {
	case higherIsBetter[metric]:
		return HigherIsBetter
	case lowerIsBetter[metric], strings.HasSuffix(metric, "_ms"):
		return LowerIsBetter
	}
	return Neutral
}

// SortByRegression orders rows worst first (for a short summary).
func SortByRegression(rows []Row) {
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].RegressionPct() > rows[j].RegressionPct() })
}
