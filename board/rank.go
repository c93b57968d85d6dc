package board

import (
	"fmt"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"

	"github.com/runnerbench/runner/internal/suggest"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
)

// Rank is how a group's runs are ranked: by the best value of a metric over
// the levels that meet a condition ("output_tps_total at ttft_p95_ms <
// 500"), or by a capacity search target's capacity ("capacity:interactive").
// The zero Rank is the default: a search stage's first target's capacity,
// else the best output_tps_total over every level.
type Rank struct {
	// Metric is the metric whose best value ranks (its better direction says
	// which value is best); Where the condition a level must meet (a
	// level-scope check expression; empty: every level).
	Metric string
	Where  string
	// Capacity is a search target's name: rank by its capacity instead.
	Capacity string

	prog  *vm.Program
	reads []string
}

// DefaultRankMetric is what a stage without a search is ranked by when no
// rank is given.
const DefaultRankMetric = "output_tps_total"

// ParseRank parses a --rank value: "METRIC", "METRIC at CONDITION" or
// "capacity:TARGET". The metric must be a numeric metric of the catalogue;
// the condition a level expression like a check's (without baseline or
// worse(), which a board has none of), type-checked here.
func ParseRank(s string) (Rank, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Rank{}, nil
	}
	if name, ok := strings.CutPrefix(s, "capacity:"); ok {
		name = strings.TrimSpace(name)
		if name == "" {
			return Rank{}, fmt.Errorf("rank %q: name the search target: capacity:NAME", s)
		}
		return Rank{Capacity: name}, nil
	}
	metric, where, _ := strings.Cut(s, " at ")
	metric, where = strings.TrimSpace(metric), strings.TrimSpace(where)
	if _, err := numericMetric(metric); err != nil {
		return Rank{}, fmt.Errorf("rank %q: %w", s, err)
	}
	r := Rank{Metric: metric, Where: where}
	if where == "" {
		return r, nil
	}
	if strings.Contains(where, "baseline") || strings.Contains(where, "worse(") {
		return Rank{}, fmt.Errorf("rank %q: a board has no baseline: the condition reads the level's own metrics", s)
	}
	prog, reads, err := scenario.CompileCheck(where, scenario.ScopeLevel)
	if err != nil {
		return Rank{}, fmt.Errorf("rank %q: condition: %s", s, scenario.ExplainExpr(where, scenario.ScopeLevel, err))
	}
	r.prog, r.reads = prog, reads
	return r, nil
}

// String is the rank as --rank takes it.
func (r Rank) String() string {
	switch {
	case r.Capacity != "":
		return "capacity:" + r.Capacity
	case r.Metric == "":
		return ""
	case r.Where != "":
		return r.Metric + " at " + r.Where
	}
	return r.Metric
}

// meets reports whether a level meets the rank's condition: every metric
// it reads is present (a null never meets a bound) and it holds.
func (r *Rank) meets(l *Level) bool {
	if r.prog == nil {
		return true
	}
	p := l.Point()
	for _, name := range r.reads {
		if m, ok := result.MetricNamed(name); ok {
			if _, null := m.Raw(&p); null {
				return false
			}
		}
	}
	out, err := expr.Run(r.prog, result.LevelEnv{Point: p})
	ok, _ := out.(bool)
	return err == nil && ok
}

// numericMetric is the catalogue's numeric metric of that name, or an
// error with the nearest names.
func numericMetric(name string) (*result.Metric, error) {
	m, ok := result.MetricNamed(name)
	if !ok {
		if a, ok := result.MetricForAlias(name); ok {
			return nil, fmt.Errorf("no metric %q (did you mean %q?)", name, a.Name)
		}
		return nil, fmt.Errorf("no metric %q%s", name, suggest.Hint(name, result.MetricNames()))
	}
	if !m.Numeric() {
		return nil, fmt.Errorf("metric %q is not a number", name)
	}
	return m, nil
}
