package board

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"

	"github.com/runnerbench/runner/result"
)

// View is one Pareto view of a group: every level of every run a point,
// each run's levels a series, and the frontier marked: the points no other
// point beats on both axes at once.
type View struct {
	// Name is the view's key (throughput, per_gpu, ttft); Title says it.
	Name  string `json:"name"`
	Title string `json:"title"`
	X     Axis   `json:"x"`
	Y     Axis   `json:"y"`
	// Series are the runs' levels, by row (Group.Rows) order.
	Series []Series `json:"series"`
	// Frontier are the frontier's points, by X, best first.
	Frontier []FrontierPoint `json:"frontier"`
	Notes    []string        `json:"notes,omitempty"`
}

// Axis is one axis of a view: a metric, per GPU or not, and which way is
// better.
type Axis struct {
	Metric string `json:"metric"`
	Title  string `json:"title"`
	// PerGPU divides the metric by the run's gpus label.
	PerGPU bool `json:"per_gpu,omitempty"`
	// Higher is set when a higher value is better.
	Higher bool `json:"higher"`
}

// Series is one run's levels in a view.
type Series struct {
	// Row is the run's index in Group.Rows.
	Row    int         `json:"row"`
	Name   string      `json:"name"`
	Points []ViewPoint `json:"points"`
}

// ViewPoint is one level in a view.
type ViewPoint struct {
	Level    string  `json:"level"`
	X        float64 `json:"x"`
	Y        float64 `json:"y"`
	Frontier bool    `json:"frontier"`
}

// FrontierPoint is a point of the frontier, named by its run and level.
type FrontierPoint struct {
	Row   int     `json:"row"`
	Run   string  `json:"run"`
	Level string  `json:"level"`
	X     float64 `json:"x"`
	Y     float64 `json:"y"`
}

// viewSpec is one Pareto view the board draws. A measured view (energy:
// only runs with GPU telemetry have it) is drawn only when some level of
// the group has both its axes.
type viewSpec struct {
	name, title string
	x, y        Axis
	measured    bool
}

var viewSpecs = []viewSpec{
	{"throughput", "Total against per-user throughput",
		Axis{Metric: "output_tps_per_stream", Title: "per-user output (tok/s)", Higher: true},
		Axis{Metric: "output_tps_total", Title: "total output (tok/s)", Higher: true}, false},
	{"per_gpu", "Per-GPU against per-user throughput",
		Axis{Metric: "output_tps_per_stream", Title: "per-user output (tok/s)", Higher: true},
		Axis{Metric: "output_tps_total", Title: "output per GPU (tok/s)", PerGPU: true, Higher: true}, false},
	{"ttft", "Total throughput against TTFT p95",
		Axis{Metric: "ttft_p95_ms", Title: "TTFT p95 (ms)"},
		Axis{Metric: "output_tps_total", Title: "total output (tok/s)", Higher: true}, false},
	{"energy", "Output tokens per joule against per-user throughput",
		Axis{Metric: "output_tps_per_stream", Title: "per-user output (tok/s)", Higher: true},
		Axis{Metric: "output_tokens_per_joule", Title: "output tokens per joule (all GPUs)", Higher: true}, true},
}

// views are a group's Pareto views (per GPU only when a run is labelled
// with its gpus), members in row order.
func views(ms []member, rows []Row) []View {
	var out []View
	for _, spec := range viewSpecs {
		v := View{Name: spec.name, Title: spec.title, X: spec.x, Y: spec.y, Series: []Series{}, Frontier: []FrontierPoint{}}
		missing := 0
		for i, m := range ms {
			gpus, ok := GPUs(m.run.Labels)
			if (spec.x.PerGPU || spec.y.PerGPU) && !ok {
				missing++
				continue
			}
			s := Series{Row: i, Name: rows[i].Name, Points: []ViewPoint{}}
			for _, l := range byLoad(m.stage.Levels) {
				x, okx := axisValue(l, spec.x, gpus)
				y, oky := axisValue(l, spec.y, gpus)
				if okx && oky {
					s.Points = append(s.Points, ViewPoint{Level: l.Label, X: x, Y: y})
				}
			}
			v.Series = append(v.Series, s)
		}
		if len(v.Series) == 0 {
			continue // per GPU with no run labelled
		}
		if spec.measured && !slices.ContainsFunc(v.Series, func(s Series) bool { return len(s.Points) > 0 }) {
			continue // no run measured it
		}
		if missing > 0 {
			v.Notes = append(v.Notes, fmt.Sprintf("%d of the group's %d runs have no gpus label and are left out", missing, len(ms)))
		}
		markFrontier(&v)
		out = append(out, v)
	}
	return out
}

// byLoad are the levels in the order of their load (rate, else
// concurrency), so a line joins them as the load rises: a search's probes
// ran out of that order.
func byLoad(levels []Level) []*Level {
	out := make([]*Level, len(levels))
	for i := range levels {
		out[i] = &levels[i]
	}
	load := func(l *Level) float64 {
		if r, ok := l.Metric("rate"); ok {
			return r
		}
		c, _ := l.Metric("concurrency")
		return c
	}
	slices.SortStableFunc(out, func(a, b *Level) int { return cmp.Compare(load(a), load(b)) })
	return out
}

// GPUs is a run's gpus label as a positive number.
func GPUs(l result.Labels) (float64, bool) {
	g, err := strconv.ParseFloat(l["gpus"], 64)
	if err != nil || !(g > 0) || g > 1e6 {
		return 0, false
	}
	return g, true
}

func axisValue(l *Level, a Axis, gpus float64) (float64, bool) {
	v, ok := l.Metric(a.Metric)
	if !ok {
		return 0, false
	}
	if a.PerGPU {
		v /= gpus
	}
	return v, true
}

// markFrontier marks the view's non-dominated points: sorted by X best
// first (ties by Y best first), a point is on the frontier when its Y beats
// every point before it, or equals the best so far at the same X (a
// duplicate of a frontier point is not beaten either).
func markFrontier(v *View) {
	type ref struct{ s, p int }
	var all []ref
	for i := range v.Series {
		for j := range v.Series[i].Points {
			all = append(all, ref{i, j})
		}
	}
	pt := func(r ref) *ViewPoint { return &v.Series[r.s].Points[r.p] }
	xb, yb := better(v.X.Higher), better(v.Y.Higher)
	slices.SortStableFunc(all, func(a, b ref) int {
		pa, pb := pt(a), pt(b)
		return cmp.Or(xb(pa.X, pb.X), yb(pa.Y, pb.Y))
	})
	var best *ViewPoint
	for _, r := range all {
		p := pt(r)
		if best == nil || yb(p.Y, best.Y) < 0 || (p.Y == best.Y && p.X == best.X) {
			p.Frontier = true
			best = p
			s := &v.Series[r.s]
			v.Frontier = append(v.Frontier, FrontierPoint{Row: s.Row, Run: s.Name, Level: p.Level, X: p.X, Y: p.Y})
		}
	}
}

// better orders values best first: descending when higher is better.
func better(higher bool) func(a, b float64) int {
	if higher {
		return func(a, b float64) int { return cmp.Compare(b, a) }
	}
	return cmp.Compare[float64]
}

// FrontierRuns are the names of the runs with a point on the view's
// frontier, in frontier order, each once.
func (v *View) FrontierRuns() []string {
	var out []string
	for _, f := range v.Frontier {
		if !slices.Contains(out, f.Run) {
			out = append(out, f.Run)
		}
	}
	return out
}
