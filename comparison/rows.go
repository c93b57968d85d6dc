package comparison

import (
	"math"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/internal/stats"
	"github.com/runnerbench/runner/result"
)

// levelRows compares one level metric by metric, in catalogue order: a row
// for every number either run has, and a job for each row with an interval
// to compute.
func levelRows(p pair, base, cur Run) ([]result.Comparison, []*job) {
	bs, cs := samplesOf(base, p), samplesOf(cur, p)
	caveat := levelCaveat(p)
	var rows []result.Comparison
	var jobs []*job
	ms := result.Metrics()
	for i := range ms {
		m := &ms[i]
		if m.Kind == result.KindLoad || !m.Numeric() {
			continue
		}
		b, okB := m.Value(p.base)
		c, okC := m.Value(p.cur)
		if !okB && !okC {
			continue
		}
		row := pointRow(m, b, okB, c, okC)
		if m.Kind == result.KindServer && m.Better != result.Neutral {
			row.Verdict = string(stats.Inconclusive)
			if why := noInterval(m, p, okB, okC, bs, cs); why != "" {
				row.Reason = why
			} else {
				j := &job{row: len(rows), metric: m, seed: seedOf(p.stage, p.label, m.Name), caveat: caveat, out: row,
					base: bs.Sample(m.Compare.Sample), cur: cs.Sample(m.Compare.Sample),
					stretchBase: simStretch(p.base, m.Compare.Sample), stretchNew: simStretch(p.cur, m.Compare.Sample)}
				j.gated = caveat == "" && stats.EnoughSamples(j.base, j.cur, m.Compare.Statistic)
				jobs = append(jobs, j)
			}
		}
		rows = append(rows, row)
	}
	return rows, jobs
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
	case rate && p.cur.Turn > 0:
		return "no interval: a turn's throughput is over its whole level's window"
	case rate && (p.cur.Rate != nil || p.base.Rate != nil):
		return "no interval: an open loop's throughput follows its arrival schedule, not the server (compare its latencies)"
	}
	return ""
}

// levelCaveat says why no metric of the level can be judged although it
// has an interval: the client set the pace, or the level was cut short.
// (Where the built-in simulator fell behind its model, only changes its
// lateness could explain are not judged: job.stretched.)
func levelCaveat(p pair) string {
	switch {
	case p.base.Interrupted || p.cur.Interrupted:
		return "the level was interrupted in " + which(p.base.Interrupted, p.cur.Interrupted) + ": its numbers cover part of it"
	case p.base.ClientBottleneck || p.cur.ClientBottleneck:
		return "the client was the bottleneck in " + which(p.base.ClientBottleneck, p.cur.ClientBottleneck) +
			" (client_bottleneck): the latencies include the runner's own delays"
	}
	return ""
}

func which(base, cur bool) string {
	switch {
	case base && cur:
		return "both runs"
	case base:
		return "the baseline"
	}
	return "the new run"
}
