package result

// A capacity search's outcome, per target. It is computed from the search's
// probes (the stage's points) by the same function that chose them while the
// search ran (package search), so a recomputed report has the same outcome.

// What a search concluded for a target.
const (
	// SearchFound: the highest passing and lowest failing loads are within
	// the search's precision; the capacity is the passing one.
	SearchFound = "found"
	// SearchAboveMax: the target held at the search's max; the capacity is
	// max, a lower bound.
	SearchAboveMax = "above_max"
	// SearchBelowMin: the target failed at the search's min; no capacity.
	SearchBelowMin = "below_min"
	// SearchUnresolved: the search stopped (its budget ran out, or the run
	// was interrupted) before it could say; no capacity, only the bracket.
	SearchUnresolved = "unresolved"
)

// Why a search stopped.
const (
	SearchStopDone        = "done"         // every target resolved
	SearchStopProbeBudget = "probe_budget" // budget.probes probes ran
	SearchStopTimeBudget  = "time_budget"  // the probes' measured time reached budget.time
	SearchStopInterrupted = "interrupted"  // the run stopped inside or between probes
)

// How an estimate's interval was drawn (SearchEstimate.Interval).
const (
	IntervalWilson        = "wilson"         // goodput: Wilson score interval over the load's requests
	IntervalNoise         = "noise"          // mean of the probes ± Student t × the run-to-run noise
	IntervalExact         = "exact"          // not subject to noise (a load setting, a flag, a null)
	IntervalLowConfidence = "low_confidence" // one probe, drawn from too few samples: no interval
)

// SearchResult is a capacity search's outcome.
type SearchResult struct {
	// Over is what the search varied: concurrency or rate.
	Over LoadKind `json:"over"`
	// Min, Max and Step are the search's bounds and precision (Step is
	// relative for a rate search).
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
	Step float64 `json:"step"`
	// Probes is how many probes ran, ProbeTimeS their measured time added up.
	Probes     int     `json:"probes"`
	ProbeTimeS float64 `json:"probe_time_s"`
	// BudgetProbes and BudgetTimeS are the budget (0: no time bound).
	BudgetProbes int     `json:"budget_probes"`
	BudgetTimeS  float64 `json:"budget_time_s,omitempty"`
	// Stop says why the search stopped: done, probe_budget, time_budget or interrupted.
	Stop string `json:"stop"`
	// Targets are the outcomes, in the plan's order.
	Targets []SearchTarget `json:"targets"`
}

// SearchTarget is one target's outcome.
type SearchTarget struct {
	// Name is the target's name in the plan (the key of capacity["name"]).
	Name string `json:"name"`
	// Expr is the target's level expression.
	Expr string `json:"expr"`
	// Status is found, above_max, below_min or unresolved.
	Status string `json:"status"`
	// Capacity is the highest load at which the target held (found), or max
	// (above_max); null otherwise: a search that ran out of budget reports
	// its bracket, never a guess.
	Capacity *float64 `json:"capacity"`
	// Confident is set when every decision the outcome rests on (Pass and
	// Fail) was statistically clear and confirmed by a second probe (unless
	// the plan allows no repeats); unset when one was decided by its
	// estimate after its repeats ran out, was probed only once, or the
	// search is unresolved.
	Confident bool `json:"confident"`
	// Pass is the highest load that passed below Fail; Fail the lowest load
	// that failed. Null where none did (yet).
	Pass *SearchLoad `json:"pass"`
	Fail *SearchLoad `json:"fail"`
	// AtCapacity is what was measured at the capacity: throughput,
	// latencies and the target's own metrics, each the mean over the probes
	// there (nulls left out).
	AtCapacity map[string]float64 `json:"at_capacity,omitempty"`
	// Notes say what a reader must know: a load decided by its estimate, a
	// target that passed above a load where it failed.
	Notes []string `json:"notes,omitempty"`
}

// SearchLoad is one load a target was decided at.
type SearchLoad struct {
	// Load is the concurrency or rate, Label its name ("c=24").
	Load  float64 `json:"load"`
	Label string  `json:"label"`
	// Probes are the numbers of the probes measured at this load.
	Probes []int `json:"probes"`
	// Passed is the target's outcome at this load; Confident whether the
	// outcome was statistically clear.
	Passed    bool `json:"passed"`
	Confident bool `json:"confident"`
	// Estimates are the metrics the target reads, as the decision saw them.
	Estimates []SearchEstimate `json:"estimates"`
}

// SearchEstimate is a metric's estimate at a load with its 95% interval.
type SearchEstimate struct {
	// Metric is the metric's name.
	Metric string `json:"metric"`
	// Value is the estimate (mean over the load's probes; goodput pooled over
	// their requests); null when a probe could not produce the metric.
	Value *float64 `json:"value"`
	// Low and High bound the interval; absent for an exact value.
	Low  *float64 `json:"low,omitempty"`
	High *float64 `json:"high,omitempty"`
	// Interval is how the interval was drawn: wilson, noise, exact or low_confidence.
	Interval string `json:"interval"`
}

// Capacities returns each target's capacity by name (null where the search
// decided none), as stage-scope checks see them; nil for a nil result.
func (r *SearchResult) Capacities() map[string]*float64 {
	if r == nil {
		return nil
	}
	out := make(map[string]*float64, len(r.Targets))
	for _, t := range r.Targets {
		out[t.Name] = t.Capacity
	}
	return out
}
