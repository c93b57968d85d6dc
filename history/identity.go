package history

import (
	"fmt"
	"strings"

	"github.com/runnerbench/runner/comparison"
	"github.com/runnerbench/runner/store"
)

// identities are the identities of each run's stages (comparison.Identity
// less the replicate labels), and per stage the distinct ones in the order
// they first ran: a stage's series are one per identity.
type identities struct {
	runs    []*store.Run
	ignore  []string
	byStage map[string][]comparison.Identity // distinct, first-seen order
	names   map[string][]string              // comparison.Distinct of byStage
	stages  []string                         // first-seen order
}

func newIdentities(s *store.Series, ignore []string) *identities {
	ids := &identities{runs: s.Runs, ignore: ignore, byStage: map[string][]comparison.Identity{}, names: map[string][]string{}}
	seen := map[[2]string]bool{}
	for _, v := range s.Values {
		id := ids.of(v.Run, v.Stage)
		k := [2]string{v.Stage, id.Key()}
		if seen[k] {
			continue
		}
		seen[k] = true
		if _, ok := ids.byStage[v.Stage]; !ok {
			ids.stages = append(ids.stages, v.Stage)
		}
		ids.byStage[v.Stage] = append(ids.byStage[v.Stage], id)
	}
	for st, list := range ids.byStage {
		ids.names[st] = comparison.Distinct(list)
	}
	return ids
}

// of is the identity of run's stage: what the database recorded of it, or
// the run's labels alone where it recorded nothing.
func (ids *identities) of(run int, stage string) comparison.Identity {
	r := ids.runs[run]
	id, ok := r.Identities[stage]
	if !ok {
		id = comparison.Identity{Labels: r.Labels}
	}
	return id.Without(ids.ignore)
}

// rank is the identity's place among its stage's.
func (ids *identities) rank(stage string, id comparison.Identity) int {
	for i, x := range ids.byStage[stage] {
		if x.Key() == id.Key() {
			return i
		}
	}
	return -1
}

// distinct names id against its stage's other identities.
func (ids *identities) distinct(stage string, id comparison.Identity) string {
	if i := ids.rank(stage, id); i >= 0 {
		return ids.names[stage][i]
	}
	return ""
}

// maxChanges bounds the changes a note lists per stage.
const maxChanges = 5

// changes notes, per stage whose runs are more than one series, each run
// at which the identity changed from the run before it, and what changed.
func (ids *identities) changes(runName func(int) string) []string {
	var notes []string
	for _, st := range ids.stages {
		if len(ids.byStage[st]) < 2 {
			continue
		}
		var at []string
		var prev *comparison.Identity
		for i, r := range ids.runs {
			if _, ok := r.Identities[st]; !ok && len(r.Identities) > 0 {
				continue // the run has no such stage
			}
			id := ids.of(i, st)
			if prev != nil && prev.Key() != id.Key() {
				at = append(at, fmt.Sprintf("at %s (%s)", runName(i), strings.Join(id.Diff(*prev), ", ")))
			}
			prev = &id
		}
		more := ""
		if len(at) > maxChanges {
			more = fmt.Sprintf(", and %d more", len(at)-maxChanges)
			at = at[:maxChanges]
		}
		notes = append(notes, fmt.Sprintf("stage %s: its runs are %d series, each judged on its own runs, since what they measured changed %s%s; no window joins two of them (--replicate-label KEY makes runs that differ only by that label one series)",
			st, len(ids.byStage[st]), strings.Join(at, "; "), more))
	}
	return notes
}
