package pipeline

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/runnerbench/runner/records"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
)

// EditedPlan returns an error naming dir's plan.yaml when it is not the
// plan its run recorded (its sha256 is not the one run.jsonl's header
// holds): someone edited it after the run. Nothing reads it to recompute a
// report (the checks come from run.jsonl), so an edit would be silently
// ignored; the error says what to do instead.
func EditedPlan(dir string) error {
	run, err := records.ReadRun(dir)
	if err != nil {
		return nil // not a run's records: Recompute says why
	}
	if err := editedPlan(dir, run); err != nil {
		path := filepath.Join(dir, records.FilePlan)
		return fmt.Errorf("%w, and the report uses the checks the run recorded; to judge the records with other checks, put the edited plan in another file, "+
			"restore %s, and run: runner report %s --plan EDITED.yaml", err, path, dir)
	}
	return nil
}

// editedPlan says how dir's plan.yaml differs from the one its run recorded.
func editedPlan(dir string, run *records.Run) error {
	sum := sha256.Sum256(run.Plan)
	if got := hex.EncodeToString(sum[:]); got != run.Header.Plan.Hash {
		return fmt.Errorf("%s is not the plan the run recorded (sha256 %.12s…, the run's %.12s…): it was edited after the run",
			filepath.Join(dir, records.FilePlan), got, run.Header.Plan.Hash)
	}
	return nil
}

// Regate is Recompute with the checks and SLOs of next (a plan loaded in
// full, checks compiled) in place of those the run recorded, when next
// sends the load the run sent: the same endpoints, prompt sets and stages
// but for checks and SLOs (scenario.LoadDiff), compared with the run's
// plan.yaml, which must be the one it recorded. The report says which
// checks changed (Report.Regated, and a warning).
func Regate(dir string, base *Baseline, next *scenario.Plan) (*result.Report, error) {
	run, err := records.ReadRun(dir)
	if err != nil {
		return nil, err
	}
	if err := editedPlan(dir, run); err != nil {
		return nil, fmt.Errorf("%w, so what the run sent is unknown and no plan's load can be checked against it; restore the plan the run wrote there", err)
	}
	was, err := scenario.Written(filepath.Join(dir, records.FilePlan), run.Plan)
	if err != nil {
		return nil, fmt.Errorf("the run's plan: %w", err)
	}
	now, err := scenario.Written(next.Path, next.Source)
	if err != nil {
		return nil, err
	}
	if d := scenario.LoadDiff(was, now, "the run's plan", next.Path); d != "" {
		return nil, fmt.Errorf("its load is not the run's, so its checks cannot judge the run's records (only checks, and the slo of a stage that does not search, may differ): %s", d)
	}
	rg := &result.Regate{Plan: result.Plan{Name: next.Name, Path: next.Path, Hash: next.Hash}, Checks: []result.CheckChange{}}
	for _, sr := range run.Stages {
		st := stageNamed(next, sr.Record.Name)
		if st == nil {
			return nil, fmt.Errorf("%s has no stage %s, which the run ran", next.Path, sr.Record.Name)
		}
		rg.Checks = append(rg.Checks, checkChanges(st.Name, sr.Checks, st.Checks)...)
		if setSLO(sr, st.SLO) {
			rg.SLOChanged = append(rg.SLOChanged, st.Name)
		}
		sr.Checks = st.Checks
		// The same rules (LoadDiff held them), judged at the new plan's
		// confidence and undecided: rule.
		sr.Until = st.UntilPlan()
	}
	rep, err := recompute(dir, run, base)
	if err != nil {
		return nil, err
	}
	rep.Regated = rg
	rep.Warnings = append(rep.Warnings, rg.Summary())
	return rep, nil
}

func stageNamed(p *scenario.Plan, name string) *scenario.Stage {
	for _, s := range p.Stages {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// checkChanges lists how the checks now differ from those the run had, by
// name (the expression when unnamed, as outcomes are named): the run's
// order, then the added ones in theirs.
func checkChanges(stage string, was, now []*scenario.Check) []result.CheckChange {
	name := func(c *scenario.Check) string {
		if c.Name != "" {
			return c.Name
		}
		return c.Expr
	}
	find := func(list []*scenario.Check, n string) *scenario.Check {
		if i := slices.IndexFunc(list, func(c *scenario.Check) bool { return c != nil && name(c) == n }); i >= 0 {
			return list[i]
		}
		return nil
	}
	var out []result.CheckChange
	for _, c := range was {
		if c == nil {
			continue
		}
		switch d := find(now, name(c)); {
		case d == nil:
			out = append(out, result.CheckChange{Stage: stage, Check: name(c), Change: result.CheckRemoved})
		case d.Expr != c.Expr || d.When != c.When || d.Scope != c.Scope || d.Severity != c.Severity:
			out = append(out, result.CheckChange{Stage: stage, Check: name(c), Change: result.CheckChanged})
		}
	}
	for _, c := range now {
		if c != nil && find(was, name(c)) == nil {
			out = append(out, result.CheckChange{Stage: stage, Check: name(c), Change: result.CheckAdded})
		}
	}
	return out
}

// setSLO gives every level of the stage's records the SLO slo (what the
// goodput of its requests is counted against) and reports whether that
// changed what they were recorded with.
func setSLO(sr *records.StageRun, slo *scenario.SLO) bool {
	var want *result.SLO
	if slo != nil {
		want = &result.SLO{TTFTMs: slo.TTFTMs, TPOTMs: slo.TPOTMs, E2EMs: slo.E2EMs}
	}
	changed := false
	levels := slices.Clone(sr.Levels)
	if sr.Started != nil {
		levels = append(levels, sr.Started)
	}
	for _, l := range levels {
		if !sameSLO(l.Spec.SLO, want) {
			changed = true
		}
		l.Spec.SLO = want
	}
	return changed
}

func sameSLO(a, b *result.SLO) bool {
	if !a.Set() || !b.Set() {
		return a.Set() == b.Set()
	}
	return *a == *b
}
