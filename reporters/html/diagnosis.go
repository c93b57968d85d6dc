package html

import (
	"slices"

	"github.com/runnerbench/runner/diagnosis"
	"github.com/runnerbench/runner/internal/render/chart"
	"github.com/runnerbench/runner/result"
)

// diagView is a stage's diagnosis at the top of its section: the headline,
// the sentences, and the evidence charts beside them (the engine's running
// and waiting requests and its KV-cache usage against load, the knee and
// saturation marked).
type diagView struct {
	Cause    string
	Headline string
	Text     []string
	Charts   []chartView
}

// buildDiagnosis is st's diagnosis view (st as charted: its load-level
// points in load order), or nil without a diagnosis.
func buildDiagnosis(st *result.Stage, anchor string, d *result.Diagnosis) *diagView {
	if d == nil {
		return nil
	}
	v := &diagView{Cause: d.Cause, Headline: diagnosis.Headline(d), Text: d.Text}
	var marks []chart.Mark
	if k := d.Knee; k != nil {
		label := "knee " + k.Level
		if k.Beyond {
			label = "knee ≥ " + k.Level
		}
		marks = append(marks, chart.Mark{X: k.Load, Label: label, Color: 3, Dashed: true})
	}
	if s := d.Saturation; s != nil {
		marks = append(marks, chart.Mark{X: s.Load, Label: "saturation " + s.Level, Color: 4, Dashed: true})
	}
	add := func(title, id string, c chart.Line) {
		c.Marks = marks
		v.Charts = append(v.Charts, lineView(id, title, st.Name, c))
	}
	has := func(get func(*result.Point) *float64) bool {
		return slices.ContainsFunc(st.Points, func(p result.Point) bool { return get(&p) != nil })
	}
	id := anchor + "-running"
	if has(func(p *result.Point) *float64 { return p.ServerRunningMax }) || has(func(p *result.Point) *float64 { return p.ServerWaitingP95 }) {
		add("Requests running and waiting vs load", id, loadChart(id, st, nil, "requests (the engine's gauges)", []metric{
			{"running max", "requests", 0, func(p *result.Point) *float64 { return p.ServerRunningMax }},
			{"running mean", "requests", 1, func(p *result.Point) *float64 { return p.ServerRunningMean }},
			{"waiting p95", "requests", 2, func(p *result.Point) *float64 { return p.ServerWaitingP95 }},
		}))
	} else {
		v.Charts = append(v.Charts, chartView{ID: id, Title: "Requests running and waiting vs load",
			Note: "The endpoint gave no running or waiting gauge (see docs/telemetry.md)."})
	}
	id = anchor + "-kv"
	if has(func(p *result.Point) *float64 { return p.KVCacheUsageMax }) {
		c := loadChart(id, st, nil, "KV-cache usage (%)", []metric{
			{"KV usage max", "%", 0, func(p *result.Point) *float64 { return pct(p.KVCacheUsageMax) }},
			{"KV usage mean", "%", 1, func(p *result.Point) *float64 { return pct(p.KVCacheUsageMean) }},
		})
		c.Y.Max, c.Y.Percent = 100, true
		add("KV-cache usage vs load", id, c)
	} else {
		v.Charts = append(v.Charts, chartView{ID: id, Title: "KV-cache usage vs load",
			Note: "The endpoint gave no KV-cache usage gauge."})
	}
	return v
}

// pct is a share (0..1) as a percentage.
func pct(v *float64) *float64 {
	if v == nil {
		return nil
	}
	return chart.F(100 * *v)
}
