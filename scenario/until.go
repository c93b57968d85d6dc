package scenario

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// The until: vocabulary.
const (
	// UntilDecided runs a level until every check that applies to it is
	// decided.
	UntilDecided = "decided"
	// UntilFixed, in a list, is a level that sends its fixed count or
	// duration.
	UntilFixed = "fixed"
)

// Defaults of until: and stop_at_saturation.
const (
	DefaultConfidence = 0.95
	DefaultUndecided  = UndecidedPoint
)

// Undecided is what a check reads when its until level stops undecided.
type Undecided string

// What an undecided check reads.
const (
	UndecidedPoint  Undecided = "point"     // pass or fail on the point value, as a fixed count would
	UndecidedStatus Undecided = "undecided" // status undecided, which fails nothing
	UndecidedFail   Undecided = "fail"      // fail
)

// Undecideds are the allowed values of undecided.
var Undecideds = []Undecided{UndecidedPoint, UndecidedStatus, UndecidedFail}

// UntilRules is a stage's until: one rule for every level (until: decided)
// or one per level, in the order its levels are listed (until: [fixed,
// decided, decided]). In YAML it is a string or a list of strings.
type UntilRules = PerLevelOf[string]

// allRules is every rule of u as written.
func allRules(u UntilRules) []string {
	if u.List != nil {
		return u.List
	}
	if u.Each != "" {
		return []string{u.Each}
	}
	return nil
}

// UntilRule is one level's until: rule, parsed. The zero value is a fixed
// level.
type UntilRule struct {
	// Decided: until every check that applies to the level is decided.
	Decided bool
	// Metric is known to Within (a fraction: 0.05 for 5%) of its value.
	Metric string
	Within float64
}

// Fixed reports whether the level sends its fixed count or duration.
func (r UntilRule) Fixed() bool { return !r.Decided && r.Metric == "" }

// String writes the rule as a plan gives it.
func (r UntilRule) String() string {
	switch {
	case r.Decided:
		return UntilDecided
	case r.Metric != "":
		return r.Metric + " within " + strconv.FormatFloat(r.Within*100, 'f', -1, 64) + "%"
	}
	return UntilFixed
}

var withinRE = regexp.MustCompile(`^\s*([A-Za-z0-9_.]+)\s+within\s+([0-9]*\.?[0-9]+)\s*%\s*$`)

// ParseUntil parses a rule: decided, fixed, or "METRIC within P%" (P above
// 0 and below 100; the metric is checked by the plan's validation).
func ParseUntil(s string) (UntilRule, error) {
	switch strings.TrimSpace(s) {
	case UntilDecided:
		return UntilRule{Decided: true}, nil
	case UntilFixed:
		return UntilRule{}, nil
	}
	m := withinRE.FindStringSubmatch(s)
	if m == nil {
		return UntilRule{}, fmt.Errorf("%q is not a rule: write decided, METRIC within P%% (ttft_p95_ms within 5%%), or fixed in a list", s)
	}
	p, err := strconv.ParseFloat(m[2], 64)
	if err != nil || !(p > 0 && p < 100) {
		return UntilRule{}, fmt.Errorf("%q: the precision must be above 0%% and below 100%%", s)
	}
	return UntilRule{Metric: m[1], Within: p / 100}, nil
}

// UntilPlan is a stage's until: and stop_at_saturation settings, defaults
// applied: what the looks and the report read, recorded with the stage so
// a report recomputed from the records reads the same.
type UntilPlan struct {
	Rules            UntilRules `json:"until,omitzero"`
	MinRequests      PerLevel   `json:"min_requests,omitzero"`
	MaxRequests      PerLevel   `json:"max_requests,omitzero"`
	MaxDuration      Duration   `json:"max_duration,omitempty"`
	Confidence       float64    `json:"confidence"`
	Undecided        Undecided  `json:"undecided,omitempty"`
	StopAtSaturation bool       `json:"stop_at_saturation,omitempty"`
}

// UntilPlan is the stage's until: settings (defaults applied by
// ApplyDefaults), or nil when it has neither until: nor stop_at_saturation.
func (s *Stage) UntilPlan() *UntilPlan {
	if s.Until.IsZero() && !s.StopAtSaturation {
		return nil
	}
	return &UntilPlan{Rules: s.Until, MinRequests: s.MinRequests, MaxRequests: s.MaxRequests, MaxDuration: s.MaxDuration,
		Confidence: s.Confidence, Undecided: s.Undecided, StopAtSaturation: s.StopAtSaturation}
}

// SetUntil gives the stage the settings u (nil: none), as a run recorded
// them.
func (s *Stage) SetUntil(u *UntilPlan) {
	if u == nil {
		return
	}
	s.Until, s.MinRequests, s.MaxRequests, s.MaxDuration = u.Rules, u.MinRequests, u.MaxRequests, u.MaxDuration
	s.Confidence, s.Undecided, s.StopAtSaturation = u.Confidence, u.Undecided, u.StopAtSaturation
}

// RuleAt is level i's rule (fixed when none, or unparsable: validation
// refused it).
func (u *UntilPlan) RuleAt(i int) UntilRule {
	if u == nil {
		return UntilRule{}
	}
	r, _ := ParseUntil(u.Rules.At(i))
	return r
}

// HasUntil reports whether any level runs until a rule.
func (u *UntilPlan) HasUntil() bool {
	if u == nil {
		return false
	}
	for _, s := range allRules(u.Rules) {
		if r, err := ParseUntil(s); err == nil && !r.Fixed() {
			return true
		}
	}
	return false
}
