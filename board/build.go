package board

import (
	"cmp"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/runnerbench/runner/result"
)

// Options say what a board shows.
type Options struct {
	// Metrics are the columns, catalogue names (nil: DefaultMetrics).
	Metrics []string
	// Rank ranks each group's rows (zero: the default; see Rank).
	Rank Rank
}

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

// buildGroup ranks one group's runs and draws its Pareto views.
func buildGroup(ms []member, o Options) Group {
	first := ms[0]
	g := Group{Plan: first.run.Facts.PlanName, Stage: first.stage.Name, Shape: first.stage.Shape()}
	slices.SortStableFunc(ms, func(a, b member) int {
		return cmp.Or(a.run.Facts.StartedAt.Compare(b.run.Facts.StartedAt), cmp.Compare(a.run.Source, b.run.Source))
	})
	g.Common = commonLabels(ms)
	names := runNames(ms, g.Common)
	rank := o.Rank
	if rank.Metric == "" && rank.Capacity == "" {
		rank = Rank{Metric: DefaultRankMetric}
		if len(first.stage.Capacities) > 0 {
			rank = Rank{Capacity: first.stage.Capacities[0].Name}
		}
	}
	g.Rank = rank.String()
	for i, m := range ms {
		row := rankRow(m, &rank, o.Metrics)
		row.Name = names[i]
		g.Rows = append(g.Rows, row)
	}
	order := rowOrder(g.Rows, &rank)
	rows := make([]Row, len(g.Rows))
	mems := make([]member, len(ms))
	for i, j := range order {
		rows[i], mems[i] = g.Rows[j], ms[j]
	}
	g.Rows = rows
	place := 0
	for i := range g.Rows {
		if g.Rows[i].Key != nil {
			place++
			g.Rows[i].Place = place
		}
	}
	g.Views = views(mems, g.Rows)
	if len(g.Views) > 0 {
		for _, s := range g.Views[0].Series {
			for _, p := range s.Points {
				g.Rows[s.Row].Frontier = g.Rows[s.Row].Frontier || p.Frontier
			}
		}
	}
	g.Notes = groupNotes(mems)
	return g
}

// rowOrder sorts the rows best first (by key, in the metric's better
// direction), unranked last; ties keep start-time order.
func rowOrder(rows []Row, rank *Rank) []int {
	lower := false
	if rank.Capacity == "" {
		if m, ok := result.MetricNamed(rank.Metric); ok && m.Better == result.LowerIsBetter {
			lower = true
		}
	}
	idx := make([]int, len(rows))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		ka, kb := rows[a].Key, rows[b].Key
		switch {
		case ka == nil && kb == nil:
			return 0
		case ka == nil:
			return 1
		case kb == nil:
			return -1
		case lower:
			return cmp.Compare(*ka, *kb)
		}
		return cmp.Compare(*kb, *ka)
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

// runNames name each member's run by the labels that are not common, then
// by its start time where that leaves two runs alike (or a run nameless),
// then by its source's last element, then by its source, where even that
// does.
func runNames(ms []member, common result.Labels) []string {
	names := make([]string, len(ms))
	for i, m := range ms {
		var parts []string
		for _, k := range m.run.Labels.Keys() {
			if _, ok := common[k]; !ok {
				parts = append(parts, k+"="+m.run.Labels[k])
			}
		}
		names[i] = strings.Join(parts, " ")
	}
	names = disambiguate(names, func(i int) string { return ms[i].run.Facts.StartedAt.UTC().Format(TimeFormat) })
	names = disambiguate(names, func(i int) string { return filepath.Base(ms[i].run.Source) })
	return disambiguate(names, func(i int) string { return ms[i].run.Source })
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
// incomparable: plan versions (same stage and shape, edited elsewhere) and
// runner versions.
func groupNotes(ms []member) []string {
	var notes []string
	hashes, versions := map[string]bool{}, map[string]bool{}
	for _, m := range ms {
		hashes[m.run.Facts.PlanHash] = true
		versions[m.run.Facts.RunnerVersion] = true
	}
	if len(hashes) > 1 {
		notes = append(notes, fmt.Sprintf("the runs ran %d versions of the plan (different sha256): this stage's load shape is the same in each", len(hashes)))
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
