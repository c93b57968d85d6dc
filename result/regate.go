package result

import (
	"fmt"
	"strings"
)

// Regate says which plan's checks judged a report's records, when they are
// not the ones the run recorded, and how they differ from those.
type Regate struct {
	// Plan is the plan whose checks and SLOs judged the records.
	Plan Plan `json:"plan"`
	// Checks are the checks that differ from the run's, stage by stage in
	// plan order (empty: the same checks).
	Checks []CheckChange `json:"checks"`
	// SLOChanged names the stages whose SLO (and so goodput) differs.
	SLOChanged []string `json:"slo_changed,omitempty"`
}

// How a check of the new plan differs from the run's.
const (
	CheckAdded   = "added"   // the new plan has it, the run did not
	CheckRemoved = "removed" // the run had it, the new plan does not
	CheckChanged = "changed" // both, with another expression, when, scope or severity
)

// CheckChange is one check that differs, named as its outcome is.
type CheckChange struct {
	Stage  string `json:"stage"`
	Check  string `json:"check"`
	Change string `json:"change"`
}

// Summary is the regate in one line, as the report's warning says it.
func (r *Regate) Summary() string {
	var parts []string
	for _, c := range r.Checks {
		parts = append(parts, fmt.Sprintf("%s / %s %s", c.Stage, c.Check, c.Change))
	}
	for _, s := range r.SLOChanged {
		parts = append(parts, fmt.Sprintf("%s slo changed", s))
	}
	what := "the same checks"
	if len(parts) > 0 {
		what = strings.Join(parts, "; ")
	}
	return fmt.Sprintf("judged with the checks and SLOs of %s (sha256 %.12s…), not the ones the run recorded: %s", r.Plan.Path, r.Plan.Hash, what)
}
