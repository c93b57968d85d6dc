package scenario

import (
	"fmt"
	"slices"
	"strings"

	"github.com/runnerbench/runner/result"
)

// MinConfidence and MaxConfidence bound a stage's confidence.
const (
	MinConfidence = 0.5
	MaxConfidence = 0.9999
)

// untilFields are the stage's fields that only until: gives a meaning to.
var untilFields = []string{"min_requests", "max_requests", "max_duration", "undecided"}

// stageUntil validates until: and the fields that go with it, and
// stop_at_saturation. The checks it needs are compiled later (untilChecks).
func (v *validator) stageUntil(path string, s *Stage, ps *PromptSet) {
	enum(v, path+".undecided", s.Undecided, Undecideds)
	if v.has(path+".confidence") && !(s.Confidence >= MinConfidence && s.Confidence <= MaxConfidence) {
		v.errf(path+".confidence", "%s: confidence must be between %g and %g, got %g", path, MinConfidence, MaxConfidence, s.Confidence)
	}
	v.stopAtSaturation(path, s, ps)
	if s.Until.IsZero() {
		for _, f := range untilFields {
			if v.has(path + "." + f) {
				v.errf(path+"."+f, "%s: %s applies to levels that run until: give until: decided (or METRIC within P%%), or leave %s out", path, f, f)
			}
		}
		if v.has(path+".confidence") && !s.StopAtSaturation {
			v.errf(path+".confidence", "%s: confidence is the intervals' of until: and stop_at_saturation, and the stage has neither", path)
		}
		return
	}
	if !v.untilShape(path, s, ps) {
		return
	}
	rules := v.untilRules(path, s)
	if len(rules) == 0 {
		return
	}
	if !slices.ContainsFunc(rules, func(r UntilRule) bool { return !r.Fixed() }) {
		v.errf(path+".until", "%s: every level is fixed: leave until out, and give requests or duration", path)
		return
	}
	v.untilCounts(path, s, rules)
}

// untilShape refuses until: where its levels are not the plan's list: a
// search's probes, a replay's one level, a series' one level, users,
// replicates.
func (v *validator) untilShape(path string, s *Stage, ps *PromptSet) bool {
	up := path + ".until"
	switch {
	case s.Search != nil:
		v.errf(up, "%s: until applies to listed levels (concurrency or rate): a search's probes are judged by its targets, and each measures for the stage's requests or duration", path)
	case ps != nil && ps.Trace != nil:
		v.errf(up, "%s: until applies to listed levels (concurrency or rate): a replay sends the trace's requests at the trace's times", path)
	case s.Series != nil:
		v.errf(up, "%s: until applies to listed levels (concurrency or rate): a series is one level as long as its pieces", path)
	case len(s.Users) > 0:
		v.errf(up, "%s: until applies to listed levels (concurrency or rate): a users level counts conversations, not requests, and its users think between them", path)
	case s.Replicates > 1:
		v.errf(up, "%s: until and replicates do not go together: replicates share a level's requests evenly, and an until level does not know its count in advance", path)
	default:
		return true
	}
	return false
}

// untilRules parses the stage's rules, one per level: a list must have
// one for each level, and a metric must have an interval that holds across
// looks.
func (v *validator) untilRules(path string, s *Stage) []UntilRule {
	up := path + ".until"
	levels, load := len(s.Concurrency), "concurrency"
	if len(s.Rate) > 0 {
		levels, load = len(s.Rate), "rate"
	}
	if l := s.Until.List; l != nil && len(l) != levels {
		v.errf(up, "%s: until lists %d rules for the %d levels of %s: give one rule per level, or one for every level", up, len(l), levels, load)
		return nil
	}
	rules := make([]UntilRule, levels)
	for i := range levels {
		at := up
		if s.Until.List != nil {
			at = fmt.Sprintf("%s[%d]", up, i)
		}
		r, err := ParseUntil(s.Until.At(i))
		if err == nil && r.Fixed() && s.Until.List == nil {
			err = fmt.Errorf("fixed applies to one level of a list (until: [fixed, decided]); without until: every level is fixed")
		}
		if err != nil {
			v.errf(at, "%s: %v", at, err)
			return nil
		}
		if r.Metric != "" && !v.untilMetric(at, r.Metric, s.API) {
			return nil
		}
		rules[i] = r
	}
	return rules
}

// untilMetric checks a rule's metric: known, with an interval that holds
// across looks, and produced by the stage's API.
func (v *validator) untilMetric(at, name string, api API) bool {
	m, ok := result.MetricNamed(name)
	if !ok {
		v.errf(at, "%s: unknown metric %q%s", at, name, metricHint(name, metrics()))
		return false
	}
	if kind, _ := m.UntilSpec(); kind != result.UntilSequence {
		why := m.UntilWhyNot()
		if kind == result.UntilAsSent {
			why = "a count or setting of what the level sent, with no precision to reach"
		}
		v.errf(at, "%s: %s is %s; a precision needs a percentile or share of requests (ttft_p95_ms, tpot_p50_ms, goodput, error_rate)", at, name, why)
		return false
	}
	if outputMetric(name) && !streams(api) {
		v.outputRead(at, "", "until", []string{name}, api)
		return false
	}
	return true
}

// untilCounts checks the counts and caps of a stage whose levels run until:
// a cap on each such level, requests and duration only where a level is
// fixed, and min_requests and max_requests in range, in order, and at
// least a closed-loop level's concurrency.
func (v *validator) untilCounts(path string, s *Stage, rules []UntilRule) {
	fixed := slices.ContainsFunc(rules, UntilRule.Fixed)
	for _, f := range []struct{ key, cap string }{{"requests", "max_requests"}, {"duration", "max_duration"}} {
		if v.has(path+"."+f.key) && !fixed {
			v.errf(path+"."+f.key, "%s: %s is a fixed level's, and every level runs until: an until level sends until its rule is met, at most %s", path, f.key, f.cap)
		}
	}
	if fixed && len(s.Rate) > 0 && s.Requests.IsZero() && s.Duration == 0 {
		v.errf(path+".until", "%s: a fixed rate level needs requests or duration, to know when it ends", path)
	}
	if s.MaxRequests.IsZero() && s.MaxDuration == 0 {
		v.errf(path+".until", "%s: until needs a cap: give max_requests or max_duration (a level that reaches it undecided says so)", path)
	}
	v.nonNegDur(path+".max_duration", s.MaxDuration)
	for _, key := range []string{"min_requests", "max_requests"} {
		c := s.MinRequests
		if key == "max_requests" {
			c = s.MaxRequests
		}
		v.perLevelCount(path+"."+key, key, c, len(rules))
	}
	for i, r := range rules {
		if r.Fixed() {
			continue
		}
		lo, hi := s.MinRequests.At(i), s.MaxRequests.At(i)
		label, conc := untilLevelLabel(s, i)
		switch {
		case lo > 0 && hi > 0 && lo > hi:
			v.errf(path+".min_requests", "%s: min_requests (%d) is above max_requests (%d) at %s", path, lo, hi, label)
		case conc > 0 && hi > 0 && hi < conc:
			v.errf(path+".max_requests", "%s: max_requests (%d) cannot keep %d in flight at %s: that level would be labelled with a load it never ran", path, hi, conc, label)
		case conc > 0 && lo > 0 && lo < conc:
			v.errf(path+".min_requests", "%s: min_requests (%d) is below %s's concurrency: the level could stop before it had %d in flight", path, lo, label, conc)
		default:
			continue
		}
		return // the first level a count does not fit: the fix is the same for the others
	}
}

// perLevelCount checks a count given once or per level.
func (v *validator) perLevelCount(path, key string, c PerLevel, levels int) {
	switch {
	case c.List != nil && len(c.List) != levels:
		v.errf(path, "%s: %s lists %d counts for %d levels: give one count per level, or one number for every level", path, key, len(c.List), levels)
	case c.List != nil:
		for i, n := range c.List {
			if n < 1 || n > MaxRequests {
				v.errf(fmt.Sprintf("%s[%d]", path, i), "%s[%d]: %s must be between 1 and %d, got %d", path, i, key, MaxRequests, n)
			}
		}
	case v.has(path) && (c.Each < 1 || c.Each > MaxRequests):
		v.errf(path, "%s: %s must be between 1 and %d, got %d", path, key, MaxRequests, c.Each)
	}
}

// untilLevelLabel is level i's label and its concurrency (0 in open loop).
func untilLevelLabel(s *Stage, i int) (string, int) {
	if i < len(s.Concurrency) {
		return fmt.Sprintf("c=%d", s.Concurrency[i]), s.Concurrency[i]
	}
	if i < len(s.Rate) {
		return fmt.Sprintf("rate=%g", s.Rate[i]), 0
	}
	return fmt.Sprintf("level %d", i), 0
}

// stopAtSaturation checks that the stage is a sweep a saturation can stop:
// a list of two or more concurrencies or rates.
func (v *validator) stopAtSaturation(path string, s *Stage, ps *PromptSet) {
	if !s.StopAtSaturation {
		return
	}
	at := path + ".stop_at_saturation"
	switch {
	case s.Search != nil:
		v.errf(at, "%s: stop_at_saturation applies to a list of concurrencies or rates: a search finds its own bounds", path)
	case ps != nil && ps.Trace != nil:
		v.errf(at, "%s: stop_at_saturation applies to a list of concurrencies or rates: a replay has one level", path)
	case len(s.Concurrency) < 2 && len(s.Rate) < 2:
		v.errf(at, "%s: stop_at_saturation needs a sweep of at least two levels to compare", path)
	}
}

// untilChecks checks, once the stage's checks are compiled, that a stage
// whose levels run until decided has a check an interval can decide: one
// that reads a percentile or share of requests. Without one, every
// level would stop at its minimum with nothing decided.
func (v *validator) untilChecks(i int, s *Stage) {
	if !slices.Contains(allRules(s.Until), UntilDecided) {
		return
	}
	var level []string
	for _, c := range s.Checks {
		if c == nil || c.Program == nil || c.Scope == ScopeStage {
			continue
		}
		if Decidable(c) {
			return
		}
		level = append(level, c.Name+" ("+c.Expr+")")
	}
	at := fmt.Sprintf("stages[%d].until", i)
	if len(level) == 0 {
		v.errf(at, "%s: until decided waits for the level's checks, and the stage has no level-scope check: add one (ttft_p95_ms < 500), or use METRIC within P%%", at)
		return
	}
	v.errf(at, "%s: until decided waits for checks an interval can decide, and none of the stage's does: %s read only counts of what was sent or metrics without an interval across looks; add a check on a percentile or share (ttft_p95_ms < 500, goodput >= 0.95), or use METRIC within P%%",
		at, strings.Join(level, ", "))
}

// Decidable reports whether an until level waits for check c: its expression
// reads a percentile or share of requests (an interval decides it)
// and otherwise only settings and counts of what was sent, and its when:
// only those settings and counts. A check that reads a metric with no
// interval across looks (a rate, a server counter), the baseline or
// worse() cannot be decided early: it is judged on its value when the
// level ends, and holds nothing.
func Decidable(c *Check) bool {
	if len(c.Gates) > 0 {
		return false
	}
	seq := false
	for _, name := range c.Metrics {
		switch untilKind(name) {
		case result.UntilNone:
			return false
		case result.UntilSequence:
			seq = true
		}
	}
	for _, name := range c.WhenMetrics {
		if untilKind(name) != result.UntilAsSent {
			return false
		}
	}
	return seq
}

// untilKind is how a metric a check reads is known while a level runs (a
// baseline's metric, or an unknown name, as one without an interval).
func untilKind(name string) result.Until {
	m, ok := result.MetricNamed(name)
	if !ok {
		return result.UntilNone
	}
	kind, _ := m.UntilSpec()
	return kind
}
