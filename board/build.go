package board

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/comparison"
	"github.com/runnerbench/runner/internal/stats"
	"github.com/runnerbench/runner/result"
)

// Options say what a board shows.
type Options struct {
	// Metrics are the columns, catalogue names (nil: DefaultMetrics).
	Metrics []string
	// Rank ranks each group's rows (zero: the default; see Rank).
	Rank Rank
	// Replicate are the label keys that tell replicates apart (a night, a
	// date): a group's runs that differ only by them (the same other
	// labels, endpoint and model) are one row, their levels' mean, with
	// their spread.
	Replicate []string
	// Confidence is the ranking's: each ranked row is judged against the
	// row above at it, for a group's comparisons together (0: 95%).
	Confidence float64
	// Samples gives a run's level's per-request samples (nil: none), which
	// decide two single runs' order; replicates decide without them.
	Samples SamplesFunc
}

// SamplesFunc returns the per-request samples of a run's (by its Source)
// stage's level, nil when they are not at hand.
type SamplesFunc func(source, stage, level string) *aggregate.Samples

// DefaultMetrics are the columns when none are chosen: throughput, then
// latency as a request experiences it, then failures.
var DefaultMetrics = []string{"output_tps_total", "output_tps_per_stream", "ttft_p95_ms", "tpot_p50_ms", "failed"}

// TimeFormat is how a run's start time is shown where it names the run.
const TimeFormat = "2006-01-02 15:04:05Z07:00"

// Build puts the runs side by side. It is a pure function of its
// arguments: the same runs, in any order, give the same board. An unknown
// or non-numeric metric is an error.
func Build(runs []Run, o Options) (*Board, error) {
	if o.Metrics == nil {
		o.Metrics = DefaultMetrics
	}
	for _, m := range o.Metrics {
		if _, err := numericMetric(m); err != nil {
			return nil, fmt.Errorf("--metrics: %w", err)
		}
	}
	if o.Rank.Metric == "" && o.Rank.Capacity == "" && o.Rank.Where != "" {
		return nil, fmt.Errorf("rank: a condition without a metric")
	}
	if o.Confidence == 0 {
		o.Confidence = stats.DefaultConfidence
	}
	if !(o.Confidence > 0 && o.Confidence < 1) {
		return nil, fmt.Errorf("confidence %g is not between 0 and 1", o.Confidence)
	}
	b := &Board{Rank: o.Rank.String(), Metrics: slices.Clone(o.Metrics), Runs: len(runs), Groups: []Group{}}
	if b.Rank == "" {
		b.Rank = "default: a search stage's first target's capacity, else the best " + DefaultRankMetric
	}
	byKey := map[string][]member{}
	for i := range runs {
		r := &runs[i]
		if why := runApart(r); why != "" {
			b.Apart = append(b.Apart, Apart{Source: r.Source, Plan: r.Facts.PlanName, Labels: r.Labels, Reason: why})
			continue
		}
		for j := range r.Stages {
			st := &r.Stages[j]
			if why := stageApart(st); why != "" {
				b.Apart = append(b.Apart, Apart{Source: r.Source, Plan: r.Facts.PlanName, Stage: st.Name, Labels: r.Labels, Reason: why})
				continue
			}
			k := groupKey(r.Facts.PlanName, st.Name, st.Shape())
			byKey[k] = append(byKey[k], member{run: r, stage: st})
		}
	}
	keys := slices.Sorted(maps.Keys(byKey))
	for _, k := range keys {
		b.Groups = append(b.Groups, buildGroup(byKey[k], o))
	}
	noteShapes(b.Groups)
	slices.SortFunc(b.Apart, func(x, y Apart) int {
		return cmp.Or(cmp.Compare(x.Plan, y.Plan), cmp.Compare(x.Source, y.Source), cmp.Compare(x.Stage, y.Stage))
	})
	return b, nil
}

// member is one run's stage in a group.
type member struct {
	run   *Run
	stage *Stage
}

func groupKey(plan, stage, shape string) string { return plan + "\x00" + stage + "\x00" + shape }

// runApart says why a whole run cannot be compared ("" when it can).
func runApart(r *Run) string {
	switch r.StopReason {
	case result.StopInterrupted:
		return "interrupted: its levels cover part of the load they were asked for"
	case result.StopError:
		why := "the run could not be carried out"
		if len(r.Warnings) > 0 {
			why += ": " + r.Warnings[len(r.Warnings)-1]
		}
		return why
	}
	if r.Facts.PlanName == "" {
		return "no plan name"
	}
	return ""
}

// stageApart says why one stage of a run cannot be compared ("" when it can).
func stageApart(st *Stage) string {
	switch {
	case st.Error != "":
		return "the stage could not run: " + st.Error
	case len(st.Levels) == 0:
		return "no level was measured"
	}
	for i := range st.Levels {
		if st.Levels[i].Interrupted {
			return "level " + st.Levels[i].Label + " was interrupted"
		}
	}
	return ""
}

// buildGroup ranks one group's runs (replicates combined into one row),
// decides each ranked row against the one above, and draws its Pareto
// views. A run that failed its checks, or a level of which failed every
// request, is listed after the ranking with the reason.
func buildGroup(ms []member, o Options) Group {
	first := ms[0]
	g := Group{Plan: first.run.Facts.PlanName, Stage: first.stage.Name, Shape: first.stage.Shape()}
	slices.SortStableFunc(ms, func(a, b member) int {
		return cmp.Or(a.run.Facts.StartedAt.Compare(b.run.Facts.StartedAt), cmp.Compare(a.run.Source, b.run.Source))
	})
	g.Common = commonLabels(ms)
	rank := o.Rank
	if rank.Metric == "" && rank.Capacity == "" {
		rank = Rank{Metric: DefaultRankMetric}
		if len(first.stage.Capacities) > 0 {
			rank = Rank{Capacity: first.stage.Capacities[0].Name}
		}
	}
	g.Rank = rank.String()
	units := replicateUnits(ms, o.Replicate)
	names := unitNames(units, g.Common, o.Replicate)
	rows := make([]Row, len(units))
	reps := make([]member, len(units)) // each row's levels: its run's, or its replicates' mean
	for i, u := range units {
		rows[i], reps[i] = unitRow(u, &rank, o.Metrics)
		rows[i].Name = names[i]
	}
	order := rowOrder(rows, &rank)
	g.Rows = make([]Row, len(rows))
	mems := make([]member, len(rows))
	us := make([][]member, len(rows))
	for i, j := range order {
		g.Rows[i], mems[i], us[i] = rows[j], reps[j], units[j]
	}
	place := 0
	for i := range g.Rows {
		if ranked(&g.Rows[i]) {
			place++
			g.Rows[i].Place = place
		}
	}
	g.Notes = decide(&g, us, &rank, o)
	g.Views = views(mems, g.Rows)
	if len(g.Views) > 0 {
		for _, s := range g.Views[0].Series {
			for _, p := range s.Points {
				g.Rows[s.Row].Frontier = g.Rows[s.Row].Frontier || p.Frontier
			}
		}
	}
	g.Notes = append(g.Notes, groupNotes(ms)...)
	return g
}

// ranked reports whether a row takes a place: it has a key, and nothing
// keeps it apart.
func ranked(r *Row) bool { return r.Key != nil && r.Apart == "" }

// rowOrder sorts the rows best first (by key, in the metric's better
// direction), then the rows kept apart (by key too), then those without a
// key; ties keep start-time order.
func rowOrder(rows []Row, rank *Rank) []int {
	lower := false
	if rank.Capacity == "" {
		if m, ok := result.MetricNamed(rank.Metric); ok && m.Better == result.LowerIsBetter {
			lower = true
		}
	}
	class := func(r *Row) int {
		switch {
		case r.Key == nil:
			return 2
		case r.Apart != "":
			return 1
		}
		return 0
	}
	idx := make([]int, len(rows))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		ca, cb := class(&rows[a]), class(&rows[b])
		switch {
		case ca != cb:
			return cmp.Compare(ca, cb)
		case ca == 2:
			return 0
		case lower:
			return cmp.Compare(*rows[a].Key, *rows[b].Key)
		}
		return cmp.Compare(*rows[b].Key, *rows[a].Key)
	})
	return idx
}

// rankRow is a run's row before it is placed: its key, the level that gave
// it, and the chosen metrics there.
func rankRow(m member, rank *Rank, metrics []string) Row {
	r := m.run
	row := Row{Source: r.Source, Labels: r.Labels, StartedAt: r.Facts.StartedAt, Verdict: r.Verdict, Values: make([]*float64, len(metrics)),
		Knee: m.stage.Knee, Saturation: m.stage.Saturation, Cause: m.stage.Cause}
	var lvl *Level
	if rank.Capacity != "" {
		lvl, row.Key, row.Note = capacityLevel(m.stage, rank.Capacity)
	} else {
		lvl, row.Key, row.Note = bestLevel(m.stage, rank)
	}
	if lvl == nil {
		return row
	}
	row.Level = lvl.Label
	row.Warned = len(lvl.Warnings) > 0
	for i, name := range metrics {
		if v, ok := lvl.Metric(name); ok {
			row.Values[i] = &v
		}
	}
	return row
}

// bestLevel is the level with the best value of the rank's metric among
// those that meet its condition, and that value; a note says why none did.
func bestLevel(st *Stage, rank *Rank) (*Level, *float64, string) {
	m, _ := result.MetricNamed(rank.Metric)
	var best *Level
	var key float64
	met := 0
	for i := range st.Levels {
		l := &st.Levels[i]
		if !rank.meets(l) {
			continue
		}
		met++
		v, ok := l.Metric(rank.Metric)
		if !ok {
			continue
		}
		better := v > key
		if m != nil && m.Better == result.LowerIsBetter {
			better = v < key
		}
		if best == nil || better {
			best, key = l, v
		}
	}
	switch {
	case best != nil:
		return best, &key, ""
	case met == 0:
		return nil, nil, "no level meets " + rank.Where
	}
	return nil, nil, "no level has " + rank.Metric
}

// capacityLevel is a search stage's capacity for the target, and the probe
// measured at it (the last there); a note says why there is none.
func capacityLevel(st *Stage, target string) (*Level, *float64, string) {
	if st.Search == "" {
		return nil, nil, "not a capacity search: nothing to rank by capacity:" + target
	}
	var c *Capacity
	for i := range st.Capacities {
		if st.Capacities[i].Name == target {
			c = &st.Capacities[i]
		}
	}
	switch {
	case c == nil:
		return nil, nil, "the search has no target " + target
	case c.Capacity == nil:
		return nil, nil, "capacity " + target + " is " + c.Status
	}
	load := result.LoadConcurrency // the level's metric of that name
	if st.Search == result.LoadRate {
		load = result.LoadRate
	}
	var at *Level
	for i := range st.Levels {
		if v, ok := st.Levels[i].Metric(string(load)); ok && v == *c.Capacity {
			at = &st.Levels[i]
		}
	}
	key := *c.Capacity
	return at, &key, ""
}

// commonLabels are the labels every member's run gives the same value
// (none for a group of one run, which its labels name).
func commonLabels(ms []member) result.Labels {
	var out result.Labels
	if len(ms) < 2 {
		return nil
	}
	for k, v := range ms[0].run.Labels {
		same := true
		for _, m := range ms[1:] {
			if w, ok := m.run.Labels[k]; !ok || w != v {
				same = false
				break
			}
		}
		if same {
			if out == nil {
				out = result.Labels{}
			}
			out[k] = v
		}
	}
	return out
}

// disambiguate appends more(i) to each name that is empty or not unique.
func disambiguate(names []string, more func(int) string) []string {
	count := map[string]int{}
	for _, n := range names {
		count[n]++
	}
	out := slices.Clone(names)
	for i, n := range names {
		if n == "" || count[n] > 1 {
			out[i] = strings.TrimSpace(n + " " + more(i))
		}
	}
	return out
}

// groupNotes say what differs between a group's runs without making them
// incomparable: plan versions among runs of one endpoint and model (the
// same stage and load, edited elsewhere: a plan that names another
// endpoint, with --set or by hand, is another version of it, and the rows'
// names say the endpoint), and runner versions.
func groupNotes(ms []member) []string {
	var notes []string
	hashes, versions := map[string]map[string]bool{}, map[string]bool{}
	most := 0
	for _, m := range ms {
		at := comparison.EndpointName(m.stage.Endpoint) + "\x00" + m.stage.Endpoint.Model
		if hashes[at] == nil {
			hashes[at] = map[string]bool{}
		}
		hashes[at][m.run.Facts.PlanHash] = true
		most = max(most, len(hashes[at]))
		versions[m.run.Facts.RunnerVersion] = true
	}
	if most > 1 {
		notes = append(notes, fmt.Sprintf("runs of one endpoint and model ran up to %d versions of the plan (different sha256): this stage's load is the same in each", most))
	}
	if len(versions) > 1 {
		notes = append(notes, fmt.Sprintf("the runs were made by %d runner versions: %s", len(versions), strings.Join(slices.Sorted(maps.Keys(versions)), ", ")))
	}
	return notes
}

// noteShapes notes, on groups of the same plan and stage, that another load
// shape of it is a group of its own: those runs measured something else.
func noteShapes(gs []Group) {
	for i := range gs {
		for j := range gs {
			if i != j && gs[i].Plan == gs[j].Plan && gs[i].Stage == gs[j].Stage {
				gs[i].Notes = append(gs[i].Notes, "not compared with the runs of the same stage whose load shape is "+gs[j].Shape)
			}
		}
	}
}
