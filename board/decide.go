package board

import (
	"fmt"
	"math"
	"strconv"

	"github.com/runnerbench/runner/comparison"
	"github.com/runnerbench/runner/internal/stats"
	"github.com/runnerbench/runner/result"
)

// decide judges each ranked row of g against the ranked row above it (us
// are the rows' runs, in row order): is its key worse at the group's
// confidence (decided), within ±DefaultThreshold of it (tied), or neither
// (undecided)? Rows of replicates are judged by their runs' keys
// (stats.RunsInterval, as a history judges windows of runs); two single
// runs by their requests at their key levels (comparison.Between, as
// runner compare judges them). The family is the group's adjacent pairs:
// each at the Bonferroni confidence, so the chance that any of the group's
// orders is called decided where the keys do not differ is at most
// (1 − confidence)/2. It returns the group's note on what was decided.
func decide(g *Group, us [][]member, rank *Rank, o Options) []string {
	var idx []int
	for i := range g.Rows {
		if ranked(&g.Rows[i]) {
			idx = append(idx, i)
		}
	}
	if len(idx) < 2 {
		return nil
	}
	g.Confidence, g.Threshold = o.Confidence, comparison.DefaultThreshold
	g.Each = stats.FamilyConfidence(o.Confidence, len(idx)-1)
	m, _ := result.MetricNamed(rank.Metric)
	n := map[string]int{}
	for k := 1; k < len(idx); k++ {
		up, lo := idx[k-1], idx[k]
		d := decidePair(g, &g.Rows[up], &g.Rows[lo], us[up], us[lo], m, o)
		g.Rows[lo].VsAbove = d
		n[d.Verdict]++
	}
	return []string{fmt.Sprintf("vs above: each ranked run's key against the run above it, at %s confidence for the group's %d comparisons together (%s each): decided %d, tied (within ±%g%%) %d, undecided %d",
		pctText(g.Confidence), len(idx)-1, pctText(g.Each), n[Decided], g.Threshold*100, n[Tied], n[Undecided])}
}

// decidePair judges row lo against row up, the ranked row above it.
func decidePair(g *Group, up, lo *Row, uu, lu []member, m *result.Metric, o Options) *Decision {
	switch {
	case m == nil:
		return &Decision{Verdict: Undecided, Reason: "a capacity has no interval"}
	case len(up.Replicates) >= 2 && len(lo.Replicates) >= 2:
		return byReplicates(g, up, lo, m)
	case len(up.Replicates) > 0 || len(lo.Replicates) > 0:
		return &Decision{Verdict: Undecided, Reason: "replicates on one side only: nothing measures how much whole runs of the other differ"}
	case o.Samples == nil:
		return &Decision{Verdict: Undecided, Reason: "one run each, without their requests: nothing tells a difference from noise"}
	}
	bs := o.Samples(up.Source, g.Stage, up.Level)
	cs := o.Samples(lo.Source, g.Stage, lo.Level)
	if bs == nil || cs == nil {
		return &Decision{Verdict: Undecided, Reason: "one run each, and a run's requests are not at hand: nothing tells a difference from noise"}
	}
	bp, cp := levelLabelled(uu[0].stage, up.Level).Point(), levelLabelled(lu[0].stage, lo.Level).Point()
	c := comparison.Between(m, &bp, &cp, bs, cs, stats.Options{Confidence: g.Each, Threshold: g.Threshold})
	d := &Decision{By: "requests", Rel: c.Rel, Interval: c.Interval, Reason: c.Reason}
	switch stats.Verdict(c.Verdict) {
	case stats.Worse:
		d.Verdict, d.Reason = Decided, ""
	case stats.Same:
		d.Verdict, d.Reason = Tied, ""
	case stats.Better: // lower in the ranking, better by the statistic: the key's level differs from the statistic's sample
		d.Verdict = Undecided
		d.Reason = "the requests say the order is the other way"
	default:
		d.Verdict = Undecided
	}
	return d
}

// byReplicates judges two rows of replicates by their runs' keys: Student's
// interval of the change of the mean, the runs' spread pooled
// (stats.RunsInterval), read by stats.Compare's rule.
func byReplicates(g *Group, up, lo *Row, m *result.Metric) *Decision {
	keys := func(r *Row) []float64 {
		var out []float64
		for _, rep := range r.Replicates {
			if rep.Key != nil {
				out = append(out, *rep.Key)
			}
		}
		return out
	}
	_, rel, ok := stats.RunsInterval(keys(up), keys(lo), g.Each)
	if !ok || math.IsNaN(rel.Lo) {
		return &Decision{Verdict: Undecided, By: "replicates", Reason: "fewer than two replicates with a key on a side"}
	}
	d := &Decision{By: "replicates", Interval: &result.Interval{Lo: result.Round(rel.Lo, 6), Hi: result.Round(rel.Hi, 6)}}
	if up.Key != nil && lo.Key != nil && *up.Key != 0 {
		d.Rel = result.Ptr(result.Round(*lo.Key / *up.Key - 1, 6))
	}
	lw, hw := rel.Lo, rel.Hi // positive: lo is worse
	if m.Better == result.HigherIsBetter {
		lw, hw = -rel.Hi, -rel.Lo
	}
	switch {
	case lw >= -g.Threshold && hw <= g.Threshold:
		d.Verdict = Tied
	case lw > 0:
		d.Verdict = Decided
	default:
		d.Verdict, d.Reason = Undecided, "the interval includes no change"
	}
	return d
}

// pctText is a confidence as a percentage: 95%, 97.5%.
func pctText(f float64) string { return strconv.FormatFloat(f*100, 'g', 4, 64) + "%" }
