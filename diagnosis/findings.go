package diagnosis

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/internal/stats"
	"github.com/runnerbench/runner/result"
)

// findings names the causes: failures from the lightest load on, the
// cause at the first level past the knee, another at the highest level,
// then what qualifies the measurement; Cause is the first limit found.
func (g *diag) findings() {
	var limits []result.Finding
	add := func(cause string, l *level) {
		f, text := g.finding(cause, l)
		limits = append(limits, f)
		g.d.Text = append(g.d.Text, text)
	}
	if g.failingThroughout() {
		add(failureCause(g.base), g.base)
	}
	if k := g.d.Knee; k != nil && !k.Beyond {
		i := slices.IndexFunc(g.ls, func(l *level) bool { return l.label == k.Next })
		c := g.causeAt(g.ls[i])
		add(c, g.ls[i])
		if top := len(g.ls) - 1; top > i {
			if c2 := g.causeAt(g.ls[top]); c2 != c && determined(c2) {
				add(c2, g.ls[g.from(c2, i)])
			}
		}
	}
	g.d.Cause = result.CauseNone
	if len(limits) > 0 {
		g.d.Cause = limits[0].Cause
	} else if g.d.Knee == nil {
		g.d.Cause = result.CauseNotDetermined
	}
	g.d.Findings = append(limits, g.caveats(limits)...)
}

// failingThroughout reports whether every level's error rate is at least
// ErrorRise, and all of them together beyond chance (the lower limit of
// their Wilson interval is).
func (g *diag) failingThroughout() bool {
	var failed, sent float64
	for _, l := range g.ls {
		if e, _ := l.get("error_rate"); e < ErrorRise {
			return false
		}
		failed, sent = failed+l.v["failed"], sent+l.v["n_requests"]
	}
	lo, _ := stats.Wilson(failed, sent, 0.95)
	return sent > 0 && lo >= ErrorRise
}

// caveats are the findings about the measurement: levels where the client
// set the pace that no limit finding names, and an undefeated prefix cache.
func (g *diag) caveats(limits []result.Finding) []result.Finding {
	var out []result.Finding
	var flagged []*level
	for _, l := range g.ls {
		named := slices.ContainsFunc(limits, func(f result.Finding) bool {
			return f.From == l.label && f.Cause == result.CauseClientBound
		})
		if l.client && !named {
			flagged = append(flagged, l)
		}
	}
	if len(flagged) > 0 {
		f := result.Finding{Cause: result.CauseClientBound, From: flagged[0].label}
		var said []string
		for _, l := range flagged {
			f.Evidence = evidence(f.Evidence, []*level{l}, l.clientBy...)
			said = append(said, l.label)
		}
		out = append(out, f)
		g.d.Text = append(g.d.Text, fmt.Sprintf("At %s %s.", strings.Join(said, ", "),
			hostText(flagged[0], false, len(flagged) > 1, "the figures there may be partly the measuring host's, not the server's")))
	}
	var hit []*level
	for _, l := range g.ls {
		if v, ok := l.get("prefix_cache_hit_rate"); ok && v > aggregate.PrefixHitWarnRate && !g.expect {
			hit = append(hit, l)
		}
	}
	if len(hit) > 0 {
		most := slices.MaxFunc(hit, func(a, b *level) int {
			va, _ := a.get("prefix_cache_hit_rate")
			vb, _ := b.get("prefix_cache_hit_rate")
			return cmp.Compare(va, vb)
		})
		out = append(out, result.Finding{Cause: result.CausePrefixCache, From: hit[0].label,
			Evidence: evidence(nil, hit, "prefix_cache_hit_rate")})
		v, _ := most.get("prefix_cache_hit_rate")
		g.d.Text = append(g.d.Text, fmt.Sprintf("The prefix cache was not defeated: it served %s of prompt tokens at %s (over %s at %d of %d levels), so TTFT and prefill are flattered there; this is a fault of the measurement, not a limit of the server.",
			percent(v), most.label, percent(aggregate.PrefixHitWarnRate), len(hit), len(g.ls)))
	}
	return out
}

// finding is cause's finding from level l, with its evidence and sentence.
func (g *diag) finding(cause string, l *level) (result.Finding, string) {
	f := result.Finding{Cause: cause, From: l.label}
	top := g.top()
	span := []*level{l}
	if top != l {
		span = append(span, top)
	}
	withBase := append([]*level{g.base}, span...)
	var text string
	switch cause {
	case result.CauseClientBound:
		f.Evidence = evidence(nil, []*level{l}, l.clientBy...)
		text = fmt.Sprintf("At %s %s.", l.label, hostText(l, true, false, "the knee there is the measuring host's, not the server's"))
	case result.CauseKVCacheFull:
		f.Evidence = evidence(nil, withBase, "kv_cache_usage_max", "server_preemptions", "server_waiting_p95", "error_rate")
		text = g.kvText(l)
	case result.CauseRateLimited, result.CauseFailing:
		f.Evidence = evidence(nil, withBase, "error_rate")
		f.Evidence = append(f.Evidence, errorEvidence(l)...)
		text = g.failureText(cause, l)
	case result.CauseBatchFull:
		f.Evidence = evidence(nil, withBase, "server_running_max", "server_waiting_p95", g.lat, g.itl)
		text = g.batchText(l)
	case result.CauseDecodeBound:
		f.Evidence = evidence(nil, withBase, g.itl, "server_running_mean")
		text = g.decodeText(l)
	case result.CausePrefillBound:
		f.Evidence = evidence(nil, withBase, g.lat, g.itl, "server_running_max", "server_waiting_p95", "server_ttft_mean_ms", "server_prefill_mean_ms")
		text = g.prefillText(l)
	default:
		f.Evidence = evidence(nil, withBase, g.lat, g.itl, "server_running_max", "server_waiting_p95", "kv_cache_usage_max")
		text = g.undeterminedText(cause, l)
	}
	return f, text
}

// errorEvidence is l's failures by kind, most first (at most three).
func errorEvidence(l *level) []result.Evidence {
	var out []result.Evidence
	for _, k := range topKinds(l, 3) {
		out = append(out, result.Evidence{Metric: "errors_by_kind", Key: k, Level: l.label, Value: float64(l.errs[k])})
	}
	return out
}

// topKinds are l's failure kinds, most first, ties by name.
func topKinds(l *level, n int) []string {
	ks := slices.Sorted(maps.Keys(l.errs))
	slices.SortStableFunc(ks, func(a, b string) int { return l.errs[b] - l.errs[a] })
	return ks[:min(n, len(ks))]
}
