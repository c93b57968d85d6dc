package comparison

import (
	"math"
	"strings"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/internal/stats"
	"github.com/runnerbench/runner/result"
)

// levelRows compares one level metric by metric, in catalogue order: a row
// for every number either run has, a verdict for each metric of the gate's
// family, and a job for each such row with an interval to compute.
func levelRows(p pair, base, cur Run, fam *Family) ([]result.Comparison, []*job) {
	bs, cs := samplesOf(base, p), samplesOf(cur, p)
	caveat := levelCaveat(p)
	var rows []result.Comparison
	var jobs []*job
	ms := result.Metrics()
	sameTTFAT := ttfatIsTTFT(p.base) && ttfatIsTTFT(p.cur)
	for i := range ms {
		m := &ms[i]
		if m.Kind == result.KindLoad || !m.Numeric() {
			continue
		}
		if sameTTFAT && strings.HasPrefix(m.Name, "ttfat_") {
			continue // the TTFT's rows, again: nothing reasoned before it answered
		}
		b, okB := m.Value(p.base)
		c, okC := m.Value(p.cur)
		if !okB && !okC {
			continue
		}
		row := pointRow(m, b, okB, c, okC)
		if m.Judged() {
			if !fam.Judges(p.stage, m.Name) {
				row.Reason = NotGated
				if !m.Comparable() {
					row.Reason = "no interval: " + m.Compare.Why
				}
				rows = append(rows, row)
				continue
			}
			row.Gated, row.Verdict = true, string(stats.Inconclusive)
			switch why := noInterval(m, p, okB, okC, bs, cs); {
			case caveat == "" && equalCounts(m, p, b, c, okB, okC):
				row.Verdict = string(stats.Same)
			case why != "":
				row.Reason = why
			default:
				j := newJob(m, p, bs, cs, caveat, row)
				j.row = len(rows)
				jobs = append(jobs, j)
			}
		}
		rows = append(rows, row)
	}
	return rows, jobs
}

// newJob is the interval to compute of metric m at pair p, whose row is
// row so far.
func newJob(m *result.Metric, p pair, bs, cs *aggregate.Samples, caveat string, row result.Comparison) *job {
	j := &job{metric: m, seed: seedOf(p.stage, p.label, m.Name), caveat: caveat, out: row,
		base: bs.Sample(m.Compare.Sample), cur: cs.Sample(m.Compare.Sample),
		stretchBase: simStretch(p.base, m.Compare.Sample), stretchNew: simStretch(p.cur, m.Compare.Sample),
		lateBase: bs.Late(m.Compare.Sample), lateNew: cs.Late(m.Compare.Sample)}
	j.intervals = caveat == "" && stats.EnoughSamples(j.base, j.cur, m.Compare.Statistic)
	return j
}

// Between compares metric m of two levels, which need not be of one
// stage's same level (a board compares two runs' best levels), as a
// comparison of runs does: the same samples, intervals, rules for what has
// none, and verdict (the new run cur against base), at o's confidence and
// threshold. A metric a gate cannot judge is compared all the same; the
// caller asks only of what it ranks by.
func Between(m *result.Metric, base, cur *result.Point, bs, cs *aggregate.Samples, o stats.Options) result.Comparison {
	p := pair{stage: "board", label: base.Label() + " " + cur.Label(), base: base, cur: cur}
	b, okB := m.Value(base)
	c, okC := m.Value(cur)
	row := pointRow(m, b, okB, c, okC)
	row.Gated, row.Verdict = true, string(stats.Inconclusive)
	if why := noInterval(m, p, okB, okC, bs, cs); why != "" {
		row.Reason = why
		return row
	}
	j := newJob(m, p, bs, cs, levelCaveat(p), row)
	j.compute(o)
	return j.out
}

// NotGated is the reason of a server metric outside the gate's family: it is
// shown with its change, and no verdict.
const NotGated = "not gated: not a metric the gate judges"

// equalCounts reports whether a count (failed requests) is the same in both
// runs, of as many requests or zero: nothing that was counted changed, so
// the verdict is "same" whatever an interval of so few events would span.
func equalCounts(m *result.Metric, p pair, b, c float64, okB, okC bool) bool {
	return m.Unit == "requests" && okB && okC && b == c && (b == 0 || p.base.NRequests == p.cur.NRequests)
}

func samplesOf(r Run, p pair) *aggregate.Samples {
	if r.Samples == nil {
		return nil
	}
	return r.Samples(p.stage, p.label)
}

// pointRow is a metric's two values and their change, before any interval.
func pointRow(m *result.Metric, b float64, okB bool, c float64, okC bool) result.Comparison {
	row := result.Comparison{Metric: m.Name}
	if okB {
		row.Base = result.Ptr(b)
	}
	if okC {
		row.New = result.Ptr(c)
	}
	if okB && okC {
		row.Abs = num(c - b)
		if b != 0 {
			row.Rel = num((c - b) / math.Abs(b))
		}
	}
	return row
}

// noInterval says why a judged metric of this level gets no interval ("":
// it gets one).
func noInterval(m *result.Metric, p pair, okB, okC bool, bs, cs *aggregate.Samples) string {
	rate := m.Compare.Statistic.Kind == stats.KindRate
	switch {
	case !okB:
		return "the baseline has no value"
	case !okC:
		return "the new run has no value"
	case !m.Comparable():
		return "no interval: " + m.Compare.Why
	case bs == nil && cs == nil:
		return "no request records of either run: no interval"
	case bs == nil:
		return "no request records of the baseline: no interval"
	case cs == nil:
		return "no request records of the new run: no interval"
	case rate && p.cur.Part():
		return "no interval: a part's throughput (a turn's, a model's, the probe requests') is over its whole level's window"
	case rate && (p.cur.Rate != nil || p.base.Rate != nil):
		return "no interval: an open loop's throughput follows its arrival schedule, not the server (compare its latencies)"
	}
	return ""
}

// NotJudgeable is why a run's level cannot be judged ("": it can): its
// numbers hold something other than the server's behaviour. It is the
// gate's level-level input: every comparison of such a level is
// inconclusive with the reason, and none is in the Bonferroni family. A new
// mark on the point is one more case here. (Where the built-in simulator
// fell behind its model, sim_behind, the level is judged, with intervals
// widened by its stretch: job.stretched.)
func NotJudgeable(p *result.Point) (what, why string) {
	switch {
	case p.Interrupted:
		return "the level was interrupted", "its numbers cover part of it"
	case p.ClientBottleneck:
		return "the client was the bottleneck", "(client_bottleneck): the latencies include the runner's own delays"
	}
	return "", ""
}

// levelCaveat says why no metric of the level can be judged although it
// has an interval ("": it can), naming the run or runs.
func levelCaveat(p pair) string {
	bw, bwhy := NotJudgeable(p.base)
	cw, cwhy := NotJudgeable(p.cur)
	switch {
	case bw != "" && bw == cw:
		return caveatText(bw, "both runs", bwhy)
	case bw != "" && cw != "" && bw != cw:
		return caveatText(bw, "the baseline", bwhy) + "; " + caveatText(cw, "the new run", cwhy)
	case bw != "":
		return caveatText(bw, "the baseline", bwhy)
	case cw != "":
		return caveatText(cw, "the new run", cwhy)
	}
	return ""
}

func caveatText(what, in, why string) string {
	sep := ": "
	if strings.HasPrefix(why, "(") {
		sep = " "
	}
	return what + " in " + in + sep + why
}

// ttfatIsTTFT reports whether a level's time to the first answer token is
// its time to the first token in every statistic: no request reasoned
// before it answered (a TTFAT is its request's TTFT then), so ttfat_* rows
// would repeat the ttft_* rows, and a gate judging both would count one
// change twice.
func ttfatIsTTFT(p *result.Point) bool {
	for _, pair := range [][2]*float64{
		{p.TTFATP50Ms, p.TTFTP50Ms}, {p.TTFATP90Ms, p.TTFTP90Ms}, {p.TTFATP95Ms, p.TTFTP95Ms},
		{p.TTFATP99Ms, p.TTFTP99Ms}, {p.TTFATMeanMs, p.TTFTMeanMs}, {p.TTFATMaxMs, p.TTFTMaxMs},
	} {
		if (pair[0] == nil) != (pair[1] == nil) || pair[0] != nil && *pair[0] != *pair[1] {
			return false
		}
	}
	return true
}
