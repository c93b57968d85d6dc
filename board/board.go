// Package board puts many runs side by side: a leaderboard per comparable
// group of runs (the same plan, stage and load shape), ranked by a chosen
// key, with the Pareto frontier between per-user speed and total
// throughput. Like every report it is a pure function of its runs: Build
// takes []Run (read from result directories by Load, or from the results
// database) and returns a Board; the renderers print it.
//
// Run is deliberately plain data (strings, numbers, maps of metric name to
// value), so a database can store and rebuild it without this package's
// help, and the board drawn from the database equals the one drawn from the
// directories.
package board

import (
	"fmt"
	"strings"
	"time"

	"github.com/runnerbench/runner/checks"
	"github.com/runnerbench/runner/comparison"
	"github.com/runnerbench/runner/diagnosis"
	"github.com/runnerbench/runner/result"
)

// Run is one run as the board sees it: what it is (labels, facts), how it
// ended, and per stage its levels' metrics.
type Run struct {
	// Source says where the run was read from: its result directory (for a
	// run merged from shards, the shards' directories joined with ", "), or
	// a database's id for it. It names the run in messages, and tells apart
	// runs that nothing else does.
	Source string `json:"source"`
	// Labels are the run's labels (report.json's labels).
	Labels result.Labels `json:"labels,omitempty"`
	// Facts are what the runner recorded of the run itself.
	Facts result.Facts `json:"facts"`
	// StopReason is completed, interrupted or error; Verdict pass or fail.
	StopReason string `json:"stop_reason"`
	Verdict    string `json:"verdict"`
	// Warnings are the run's own warnings (report.json's), such as why it
	// stopped with an error.
	Warnings []string `json:"warnings,omitempty"`
	Stages   []Stage  `json:"stages"`
}

// Stage is one stage of a run.
type Stage struct {
	Name string `json:"name"`
	// Endpoint is where the stage sent its requests: it tells runs of one
	// load apart, and never groups them.
	Endpoint result.Endpoint `json:"endpoint"`
	// Problems say why the stage's numbers do not rank: its fail-severity
	// checks that failed, and its levels whose every request failed.
	Problems []string `json:"problems,omitempty"`
	// Load, API and Mode are report.json's stage fields: what the levels
	// vary, the API as the plan names it, and its mode ("" for an API
	// without output).
	Load result.LoadKind `json:"load"`
	API  string          `json:"api"`
	Mode string          `json:"mode"`
	// Search is what a capacity search stage varied (concurrency or rate);
	// empty for a stage that lists its levels.
	Search result.LoadKind `json:"search,omitempty"`
	// Error is set when the stage (or one of its levels) could not run.
	Error  string  `json:"error,omitempty"`
	Levels []Level `json:"levels"`
	// Capacities are a search stage's targets, in the plan's order.
	Capacities []Capacity `json:"capacities,omitempty"`
	// Knee, Saturation and Cause are the stage's diagnosis (package
	// diagnosis): the knee's level ("≥ c=32" when the sweep never left
	// it), the saturation level, and what limits the server; empty for a
	// stage of one load.
	Knee       string `json:"knee,omitempty"`
	Saturation string `json:"saturation,omitempty"`
	Cause      string `json:"cause,omitempty"`
}

// Level is one level (or search probe) of a stage.
type Level struct {
	// Label names the level ("c=32", "rate=4", "probe 3 c=24").
	Label string `json:"label"`
	// Interrupted is set when the run was stopped inside the level.
	Interrupted bool `json:"interrupted,omitempty"`
	// Warnings are what makes a number of the level wrong (the client set
	// the pace, ...): the board marks such a level.
	Warnings []string `json:"warnings,omitempty"`
	// Metrics are the level's numeric catalogue metrics by name
	// (result.Metrics; a metric the run could not produce is absent).
	Metrics map[string]float64 `json:"metrics"`
}

// Capacity is one search target's outcome.
type Capacity struct {
	Name string `json:"name"`
	// Status is found, above_max, below_min or unresolved; Capacity the
	// highest load the target held at (null unless found or above_max).
	Status   string   `json:"status"`
	Capacity *float64 `json:"capacity"`
}

// Metric returns the level's value of a metric and whether it has one.
func (l *Level) Metric(name string) (float64, bool) {
	v, ok := l.Metrics[name]
	return v, ok
}

// Point rebuilds the level's result.Point from its metrics (what a check
// expression reads); fields that are not numeric metrics stay zero.
func (l *Level) Point() result.Point {
	var p result.Point
	ms := result.Metrics()
	for i := range ms {
		m := &ms[i]
		if v, ok := l.Metrics[m.Name]; ok {
			m.SetValue(&p, &v)
		}
	}
	return p
}

// stageDiagnosis is a stage's knee, saturation and cause: its report's
// diagnosis, or (a run read back from the results database, which keeps
// the points and not the diagnosis) the one its points give.
func stageDiagnosis(st *result.Stage) (knee, saturation, cause string) {
	d := st.Diagnosis
	if d == nil {
		d = diagnosis.Diagnose(st, false)
	}
	if d == nil {
		return "", "", ""
	}
	if k := d.Knee; k != nil {
		knee = k.Level
		if k.Beyond {
			knee = "≥ " + k.Level
		}
	}
	if s := d.Saturation; s != nil {
		saturation = s.Level
	}
	return knee, saturation, d.Cause
}

// FromReport is the run a report.json describes, read from source.
func FromReport(rep *result.Report, source string) Run {
	run := Run{
		Source: source, Labels: rep.Labels, Facts: rep.Facts(),
		StopReason: rep.StopReason, Verdict: rep.Verdict, Warnings: rep.Warnings,
		Stages: make([]Stage, 0, len(rep.Stages)),
	}
	ms := result.Metrics()
	for _, st := range rep.Stages {
		s := Stage{Name: st.Name, Endpoint: st.Endpoint, Load: st.Load, API: st.API, Mode: st.Mode, Error: st.Error,
			Levels: make([]Level, 0, len(st.Points)), Problems: stageProblems(&st)}
		if sr := st.Search; sr != nil {
			s.Search = sr.Over
			for _, t := range sr.Targets {
				s.Capacities = append(s.Capacities, Capacity{Name: t.Name, Status: t.Status, Capacity: t.Capacity})
			}
		}
		s.Knee, s.Saturation, s.Cause = stageDiagnosis(&st)
		for i := range st.Points {
			p := &st.Points[i]
			l := Level{Label: p.Label(), Interrupted: p.Interrupted, Warnings: p.Warnings, Metrics: make(map[string]float64, len(ms))}
			for j := range ms {
				if ms[j].Numeric() {
					if v, ok := ms[j].Value(p); ok {
						l.Metrics[ms[j].Name] = v
					}
				}
			}
			s.Levels = append(s.Levels, l)
		}
		run.Stages = append(run.Stages, s)
	}
	return run
}

// stageProblems are what keeps a report's stage out of a ranking: its
// failed fail-severity checks ("check at c=8") and its levels the run could
// not carry out (every request failed; a search's probe past capacity is
// its answer, not a problem: checks.Unserved).
func stageProblems(st *result.Stage) []string {
	var out []string
	for _, c := range checks.FailedChecks(&result.Report{Stages: []result.Stage{*st}}) {
		out = append(out, "failed its check "+strings.TrimPrefix(c, st.Name+" / "))
	}
	for i := range st.Points {
		if p := &st.Points[i]; checks.Unserved(st, p) {
			msg := fmt.Sprintf("every request of %s failed", p.Label())
			if p.Error != nil {
				msg += " (first: " + *p.Error + ")"
			}
			out = append(out, msg)
		}
	}
	return out
}

// LoadOf is the stage's load (comparison.Load): what runs must share to be
// ranked against each other.
func (s *Stage) LoadOf() comparison.Load {
	kind, search := s.Load, s.Search != ""
	if search {
		kind = s.Search
	}
	l := comparison.NewLoad(kind, search, s.API, s.Mode)
	if len(s.Levels) > 0 {
		in, _ := s.Levels[0].Metric("input_tokens")
		out, _ := s.Levels[0].Metric("output_tokens")
		l = l.WithLengths(int(in), int(out))
	}
	return l
}

// Shape describes the stage's load, which runs must share to be compared:
// how the load was applied (closed loop, open loop, a trace, a search), the
// API, the mode, and the requested lengths. Two runs of a stage of the same
// name whose shapes differ measured different things; the endpoint, the
// model and the labels are what the ranking compares.
func (s *Stage) Shape() string { return s.LoadOf().String() }

// Board is many runs side by side: what board.json holds.
type Board struct {
	// Rank says how rows are ranked, Metrics the columns (catalogue names).
	Rank    string   `json:"rank"`
	Metrics []string `json:"metrics"`
	// Runs is how many runs the board was built from.
	Runs   int     `json:"runs"`
	Groups []Group `json:"groups"`
	// Apart are the runs (or a run's stage) that cannot be compared with
	// any other, each with the reason; never in a group.
	Apart []Apart `json:"apart,omitempty"`
	// Skipped are inputs that could not be read as a run (filled in by the
	// caller from Load's skips).
	Skipped []Skip `json:"skipped,omitempty"`
	// Notes say what a reader must know of the board as a whole, such as
	// which axes are not measured yet.
	Notes []string `json:"notes,omitempty"`
}

// Group is one leaderboard: the runs of one plan's stage with one load shape.
type Group struct {
	Plan  string `json:"plan"`
	Stage string `json:"stage"`
	Shape string `json:"shape"`
	// Common are the labels every run of the group shares (so the rows'
	// names need not repeat them).
	Common result.Labels `json:"common_labels,omitempty"`
	// Rank says how this group's rows are ranked (a search group without
	// --rank is ranked by its first target's capacity).
	Rank string `json:"rank"`
	Rows []Row  `json:"rows"`
	// Views are the Pareto views of the group's levels.
	Views []View `json:"views"`
	// Notes say what a reader must know of the group.
	Notes []string `json:"notes,omitempty"`
	// Confidence is the ranking's, for the group's decisions together;
	// Each is each decision's (Bonferroni); Threshold what tied means.
	Confidence float64 `json:"confidence,omitempty"`
	Each       float64 `json:"each,omitempty"`
	Threshold  float64 `json:"threshold,omitempty"`
}

// Row is one run in a group, ranked.
type Row struct {
	// Place is the 1-based rank; 0 for a run the key could not rank (no
	// level meets the condition), listed last with Note saying why.
	Place int `json:"place"`
	// Name tells the run apart from the group's others: the labels whose
	// values differ within the group, and its start time where they do not.
	Name      string        `json:"name"`
	Source    string        `json:"source"`
	Labels    result.Labels `json:"labels,omitempty"`
	StartedAt time.Time     `json:"started_at"`
	Verdict   string        `json:"verdict"`
	// Level is the level the row's values are from: the one that gave the
	// best key.
	Level string `json:"level,omitempty"`
	// Key is the ranking value (null when unranked).
	Key *float64 `json:"key"`
	// Values are the row's metrics, one per Board.Metrics (null: the level
	// has none).
	Values []*float64 `json:"values"`
	// Frontier is set when a level of the run is on the group's first
	// Pareto frontier (total against per-user throughput).
	Frontier bool `json:"frontier"`
	// Warned is set when the row's level carries a validity warning.
	Warned bool   `json:"warned,omitempty"`
	Note   string `json:"note,omitempty"`
	// Knee, Saturation and Cause are the run's stage's diagnosis (Stage's).
	Knee       string `json:"knee,omitempty"`
	Saturation string `json:"saturation,omitempty"`
	Cause      string `json:"cause,omitempty"`
	// Apart says why a run with a key is not ranked (Place 0, listed after
	// the ranked rows): it failed its checks, or every request of a level
	// failed.
	Apart string `json:"apart,omitempty"`
	// Replicates are the runs combined into the row (Options.Replicate),
	// each with its own key at the row's level; nil for a row of one run,
	// whose Values are its own (a combined row's are its replicates' mean).
	Replicates []Replicate `json:"replicates,omitempty"`
	// VsAbove is the row's key against the ranked row above it: whether the
	// order is decided at the group's confidence (nil for the first ranked
	// row and the rows not ranked).
	VsAbove *Decision `json:"vs_above,omitempty"`
}

// Replicate is one run combined into a row.
type Replicate struct {
	Source    string        `json:"source"`
	Labels    result.Labels `json:"labels,omitempty"` // its replicate labels (night=3)
	StartedAt time.Time     `json:"started_at"`
	Key       *float64      `json:"key"`
}

// Decision is a ranked row's key against the row above's.
type Decision struct {
	// Verdict is decided (this row's key is worse than the row above's at
	// the group's confidence), tied (the two are within ±Threshold of each
	// other with that confidence), or undecided.
	Verdict string `json:"verdict"`
	// Rel is the change from the row above's key to this row's, a
	// fraction, with its Interval (nil when not computed).
	Rel      *float64         `json:"rel,omitempty"`
	Interval *result.Interval `json:"interval,omitempty"`
	// By says what decided: replicates (each row's runs' keys, Student's
	// t) or requests (each run's requests, as runner compare).
	By     string `json:"by,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Decisions' verdicts.
const (
	Decided   = "decided"
	Tied      = "tied"
	Undecided = "undecided"
)

// Apart is a run's stage that cannot be compared, and why.
type Apart struct {
	Source string        `json:"source"`
	Plan   string        `json:"plan"`
	Stage  string        `json:"stage,omitempty"`
	Labels result.Labels `json:"labels,omitempty"`
	Reason string        `json:"reason"`
}

// Skip is an input that could not be read as a run.
type Skip struct {
	// Path names the file (or directory) at fault.
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

func (s Skip) String() string { return s.Path + ": " + s.Reason }
