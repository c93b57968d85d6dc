package board

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/runnerbench/runner/comparison"
	"github.com/runnerbench/runner/result"
)

// ReplicateDisagreement is how far apart a row's replicates' keys may be
// before the row warns that they disagree: the highest more than 25% above
// the lowest. Nights of one engine on one machine differ by a few percent;
// a wider spread says something changed between them (or the load is not
// one the server holds steadily), and their mean describes none of them.
const ReplicateDisagreement = 0.25

// identityOf is what a member's run is: its stage's identity with its
// labels less the replicate keys.
func identityOf(m member, replicate []string) comparison.Identity {
	st := m.stage
	return comparison.Identity{Load: st.LoadOf(), Endpoint: comparison.EndpointName(st.Endpoint), Model: st.Endpoint.Model,
		Labels: m.run.Labels}.Without(replicate)
}

// replicateUnits splits a group's members (in start order) into its rows:
// with replicate keys, the members that ranked runs of one identity share;
// every other member alone (a run kept apart, a search's, or every run
// without replicate keys).
func replicateUnits(ms []member, replicate []string) [][]member {
	var units [][]member
	at := map[string]int{}
	for _, m := range ms {
		if len(replicate) == 0 || problems(m) != "" || m.stage.Search != "" {
			units = append(units, []member{m})
			continue
		}
		k := identityOf(m, replicate).Key()
		if i, ok := at[k]; ok {
			units[i] = append(units[i], m)
			continue
		}
		at[k] = len(units)
		units = append(units, []member{m})
	}
	return units
}

// problems says why a member's run does not rank ("" when it does): its
// stage's problems, else the run's other stages', else a fail verdict.
func problems(m member) string {
	if p := m.stage.Problems; len(p) > 0 {
		return strings.Join(p, "; ")
	}
	var other []string
	for i := range m.run.Stages {
		if st := &m.run.Stages[i]; st.Name != m.stage.Name {
			for _, p := range st.Problems {
				other = append(other, "stage "+st.Name+": "+p)
			}
		}
	}
	if len(other) > 0 {
		return strings.Join(other, "; ")
	}
	if m.run.Verdict == result.StatusFail {
		return "its verdict is fail (see its report)"
	}
	return ""
}

// unitRow is a unit's row before it is placed, and the member whose levels
// it shows: a single run's own; for replicates, one whose stage is their
// levels' mean, with each replicate's key at the row's level.
func unitRow(u []member, rank *Rank, metrics []string) (Row, member) {
	if len(u) == 1 {
		row := rankRow(u[0], rank, metrics)
		row.Apart = problems(u[0])
		return row, u[0]
	}
	m := member{run: u[0].run, stage: meanStage(u)}
	row := rankRow(m, rank, metrics)
	var keys []float64
	for _, r := range u {
		rep := Replicate{Source: r.run.Source, StartedAt: r.run.Facts.StartedAt, Labels: onlyKeys(r.run.Labels, u)}
		if l := levelLabelled(r.stage, row.Level); l != nil {
			if v, ok := l.Metric(rank.Metric); ok {
				rep.Key = &v
				keys = append(keys, v)
			}
		}
		row.Replicates = append(row.Replicates, rep)
	}
	row.Note = spreadNote(keys, rank.Metric, len(u))
	return row, m
}

// onlyKeys are the labels of l whose values differ among the unit's runs:
// what tells its replicates apart.
func onlyKeys(l result.Labels, u []member) result.Labels {
	out := result.Labels{}
	for k, v := range l {
		for _, o := range u {
			if o.run.Labels[k] != v {
				out[k] = v
				break
			}
		}
	}
	return out
}

// spreadNote says how n replicates' keys spread, and warns where they
// disagree (ReplicateDisagreement).
func spreadNote(keys []float64, metric string, n int) string {
	if len(keys) == 0 {
		return fmt.Sprintf("%d replicates, none with %s at this level", n, metric)
	}
	lo, hi := slices.Min(keys), slices.Max(keys)
	s := fmt.Sprintf("%d replicates: %s %s to %s", n, metric, formatValue(metric, &lo), formatValue(metric, &hi))
	if lo > 0 && hi/lo-1 > ReplicateDisagreement {
		s += fmt.Sprintf(": they disagree (the highest %.0f%% above the lowest, more than %.0f%%): something changed between them, and their mean describes none of them",
			(hi/lo-1)*100, ReplicateDisagreement*100)
	}
	return s
}

// meanStage is the replicates' stage with, per level all of them measured
// (in the first's order), each metric all of them have at their mean.
func meanStage(u []member) *Stage {
	st := *u[0].stage
	st.Levels = nil
	for _, l := range u[0].stage.Levels {
		ls := []*Level{}
		for _, m := range u {
			if x := levelLabelled(m.stage, l.Label); x != nil {
				ls = append(ls, x)
			}
		}
		if len(ls) < len(u) {
			continue
		}
		mean := Level{Label: l.Label, Metrics: map[string]float64{}}
		for _, name := range slices.Sorted(maps.Keys(l.Metrics)) {
			sum, n := 0.0, 0
			for _, x := range ls {
				if v, ok := x.Metric(name); ok {
					sum, n = sum+v, n+1
				}
			}
			if n == len(ls) {
				mean.Metrics[name] = sum / float64(n)
			}
		}
		for _, x := range ls {
			mean.Warnings = append(mean.Warnings, x.Warnings...)
		}
		st.Levels = append(st.Levels, mean)
	}
	return &st
}

func levelLabelled(st *Stage, label string) *Level {
	for i := range st.Levels {
		if st.Levels[i].Label == label {
			return &st.Levels[i]
		}
	}
	return nil
}

// unitNames name each unit by what tells its identity apart from the
// others' (labels not common, then the endpoint and model:
// comparison.Distinct), then as runNames does where that leaves two alike;
// a row of replicates says how many.
func unitNames(units [][]member, common result.Labels, replicate []string) []string {
	ids := make([]comparison.Identity, len(units))
	heads := make([]member, len(units))
	for i, u := range units {
		heads[i] = u[0]
		ids[i] = identityOf(u[0], replicate)
		if len(u) == 1 {
			ids[i] = identityOf(u[0], nil)
		}
	}
	names := comparison.Distinct(ids)
	for i := range names {
		if names[i] == "" {
			names[i] = commonless(heads[i].run.Labels, common)
		}
	}
	names = disambiguate(names, func(i int) string { return heads[i].run.Facts.StartedAt.UTC().Format(TimeFormat) })
	names = disambiguate(names, func(i int) string { return filepath.Base(heads[i].run.Source) })
	names = disambiguate(names, func(i int) string { return heads[i].run.Source })
	for i, u := range units {
		if len(u) > 1 {
			names[i] = strings.TrimSpace(names[i] + fmt.Sprintf(" (×%d)", len(u)))
		}
	}
	return names
}

// commonless is the labels not in common, as "k=v k=v".
func commonless(l, common result.Labels) string {
	var parts []string
	for _, k := range l.Keys() {
		if _, ok := common[k]; !ok {
			parts = append(parts, k+"="+l[k])
		}
	}
	return strings.Join(parts, " ")
}
