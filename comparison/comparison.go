// Package comparison compares a run's levels with a baseline run's, metric by
// metric: the change, its confidence interval computed from the two runs'
// request-level samples (internal/stats), and a verdict: better, worse, same
// or inconclusive. `runner compare`, a run's --baseline (each point's
// baseline_comparison) and worse() in checks all read its answer, so they
// ask one question the same way.
//
// What is compared, and how, is the metric catalogue's (result.Metric.Compare);
// the samples are aggregate's (the populations the points are computed
// over). The rules this package adds:
//
//   - The gate judges one family of metrics (family.go): the plan's
//     worse() metrics, --metrics, or every server metric with an interval.
//     Only they get a verdict. Each interval is at the Bonferroni confidence
//     over those that can be worse (stats.FamilyConfidence), so the chance
//     that any unchanged metric the gate judges is called worse is at most
//     (1 − confidence)/2.
//   - Equal counts (failed 0 → 0) are "same": nothing that was counted
//     changed.
//   - The client's own diagnostics and metrics without a better direction
//     are shown with their change and no verdict: they describe the
//     measurement, not the server.
//   - A level that either run cannot be judged in (NotJudgeable: the client
//     was the bottleneck, the level was interrupted) is inconclusive
//     throughout: its numbers include the runner's own delays, or cover part
//     of the level.
//   - Where the built-in simulator fell behind its model (sim_behind), each
//     interval is widened by how much its lateness may have stretched what
//     the metric measures (simlag.go): a change the lateness could have made
//     is inconclusive, the busy machine's; a larger one is still judged.
//   - Throughput is judged in a closed loop only: an open loop's follows its
//     arrival schedule, and a turn's is over its whole level's window.
//   - Without a run's request records (an old report.json alone) there are
//     no intervals: every verdict is inconclusive and the point changes are
//     shown.
//
// It is pure: reports and samples in, comparisons out.
package comparison

import (
	"errors"
	"hash/fnv"
	"math"
	"runtime"
	"strings"
	"sync"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/diagnosis"
	"github.com/runnerbench/runner/internal/stats"
	"github.com/runnerbench/runner/result"
)

// DefaultThreshold is the practical threshold (a fraction) when no smaller
// gate asks for less: a change whose whole interval lies within ±5% is
// "same". It keeps the verdicts of tight intervals from flagging shifts too
// small to matter, such as a busy machine's few percent.
const DefaultThreshold = 0.05

// Run is one side of a comparison.
type Run struct {
	Report *result.Report
	// Samples returns the per-request samples of a point, by stage name and
	// point label (nil: none). Nil when the run's request records are not at
	// hand (a report.json alone): its comparisons then have no interval.
	Samples func(stage, label string) *aggregate.Samples
}

// Options of a comparison; the zero value is 95%, no threshold, the
// bootstrap's default resamples.
type Options struct {
	// Confidence is the family's two-sided confidence (0: 95%).
	Confidence float64
	// Threshold is the practical threshold, a fraction (0.05 = 5%).
	Threshold float64
	// Resamples is the bootstrap's B before stats raises it for the
	// family's confidence (0: its default).
	Resamples int
	// Family is which metrics the gate judges (nil: DefaultFamily).
	Family *Family
	// FailInconclusive is --fail-inconclusive, recorded in the summary.
	FailInconclusive bool
}

// Level is one level (or per-turn point) present in both runs.
type Level struct {
	Stage, Label string
	Rows         []result.Comparison
}

// Result is a whole comparison.
type Result struct {
	Summary result.ComparisonSummary
	Levels  []Level
	// Missing names the stages and levels only one run has.
	Missing []string
	// Notes say what limits the comparison as a whole.
	Notes []string
	// Limits say, per stage of both runs, how what limits the server
	// changed ("stage s: The KV cache is no longer the limit: ..."; package
	// diagnosis); none where it did not.
	Limits []string
}

// Compare compares every level of cur with the level of base with the same
// stage name and label. The error reports invalid options only.
func Compare(base, cur Run, o Options) (*Result, error) {
	conf := o.Confidence
	if conf == 0 {
		conf = stats.DefaultConfidence
	}
	if !(conf > 0 && conf < 1) {
		return nil, errors.New("the confidence must be between 0 and 1 (e.g. 0.95)")
	}
	if !(o.Threshold >= 0 && o.Threshold < 1) {
		return nil, errors.New("the threshold must be a fraction in [0, 1)")
	}
	fam := o.Family
	if fam == nil {
		fam = DefaultFamily()
	}
	res := &Result{Summary: result.ComparisonSummary{Confidence: conf, Threshold: o.Threshold, Records: base.Samples != nil && cur.Samples != nil,
		Family: fam.Record(), FailInconclusive: o.FailInconclusive}}
	if !res.Summary.Records {
		res.Notes = append(res.Notes, noRecordsNote(base, cur))
	}
	var jobs []*job
	pairs := match(base.Report, cur.Report, &res.Missing, &res.Summary.Unmatched)
	if n := replicatesNote(pairs); n != "" {
		res.Notes = append(res.Notes, n)
	}
	for _, pair := range pairs {
		lvl := Level{Stage: pair.stage, Label: pair.label}
		var lj []*job
		lvl.Rows, lj = levelRows(pair, base, cur, fam)
		for _, j := range lj {
			j.level = len(res.Levels)
		}
		jobs = append(jobs, lj...)
		res.Levels = append(res.Levels, lvl)
	}
	res.Summary.Levels = len(pairs)
	for _, j := range jobs {
		if j.intervals {
			res.Summary.Intervals++
		}
	}
	res.Summary.Each = stats.FamilyConfidence(conf, res.Summary.Intervals)
	run(jobs, stats.Options{Confidence: res.Summary.Each, Threshold: o.Threshold, Resamples: o.Resamples})
	for _, j := range jobs {
		res.Levels[j.level].Rows[j.row] = j.out
	}
	res.count()
	res.Summary.NothingGated = nothingGated(base.Report, cur.Report, res, fam)
	res.Limits = limitChanges(base.Report, cur.Report)
	return res, nil
}

// limitChanges says, for each stage both reports have, how its limit
// changed; a report from before diagnoses gets the one its points give.
func limitChanges(base, cur *result.Report) []string {
	if base == nil || cur == nil {
		return nil
	}
	var out []string
	for i := range cur.Stages {
		c := &cur.Stages[i]
		b := base.StageNamed(c.Name)
		if b == nil {
			continue
		}
		if s := diagnosis.Change(diagnosisOf(b), diagnosisOf(c)); s != "" {
			out = append(out, "stage "+c.Name+": "+s)
		}
	}
	return out
}

func diagnosisOf(st *result.Stage) *result.Diagnosis {
	if st.Diagnosis != nil {
		return st.Diagnosis
	}
	return diagnosis.Diagnose(st, false)
}

func noRecordsNote(base, cur Run) string {
	which := "either run"
	switch {
	case base.Samples != nil:
		which = "the new run"
	case cur.Samples != nil:
		which = "the baseline"
	}
	return "no request records of " + which + " (requests.jsonl and run.jsonl beside report.json): changes are point values without intervals, and no verdict can be better or worse"
}

// replicatesNote names the levels only one run ran as replicates: their
// intervals cannot hold how much whole replicates differ ("" when none).
func replicatesNote(pairs []pair) string {
	var one []string
	for _, p := range pairs {
		if (p.base.Replicates > 1) != (p.cur.Replicates > 1) {
			one = append(one, p.stage+" "+p.label)
		}
	}
	if len(one) == 0 {
		return ""
	}
	return "only one run ran " + strings.Join(one, ", ") + " as replicates: there the intervals hold request-to-request noise only, not how much whole runs differ"
}

// pair is one level both runs have.
type pair struct {
	stage, label string
	base, cur    *result.Point
}

// match pairs cur's levels with base's by stage name and label, in cur's
// order, names what only one run has, and counts cur's levels without a
// match.
func match(base, cur *result.Report, missing *[]string, unmatched *int) []pair {
	var out []pair
	seen := map[string]bool{}
	for i := range cur.Stages {
		st := &cur.Stages[i]
		seen[st.Name] = true
		bst := base.StageNamed(st.Name)
		if bst == nil {
			*missing = append(*missing, "stage "+st.Name+" is not in the baseline")
			*unmatched += len(st.Points)
			continue
		}
		labels := map[string]bool{}
		for j := range st.Points {
			p := &st.Points[j]
			labels[p.Label()] = true
			if bp := pointLabelled(bst, p.Label()); bp != nil {
				out = append(out, pair{stage: st.Name, label: p.Label(), base: bp, cur: p})
			} else {
				*missing = append(*missing, st.Name+" "+p.Label()+" is not in the baseline")
				*unmatched++
			}
		}
		for j := range bst.Points {
			if l := bst.Points[j].Label(); !labels[l] {
				*missing = append(*missing, st.Name+" "+l+" is only in the baseline")
			}
		}
	}
	for _, bst := range base.Stages {
		if !seen[bst.Name] {
			*missing = append(*missing, "stage "+bst.Name+" is only in the baseline")
		}
	}
	return out
}

func pointLabelled(st *result.Stage, label string) *result.Point {
	for i := range st.Points {
		if st.Points[i].Label() == label {
			return &st.Points[i]
		}
	}
	return nil
}

// job is one comparison with an interval to compute.
type job struct {
	level, row int
	metric     *result.Metric
	base, cur  stats.Sample
	seed       uint64
	intervals  bool   // in the Bonferroni family: it can be worse
	caveat     string // forces an inconclusive verdict, and says why
	// stretchBase and stretchNew bound how much the built-in simulator's
	// lateness stretched each run's requests (0: it kept its model).
	stretchBase, stretchNew float64
	// lateBase and lateNew: how many of each run's requests the simulator
	// stretched by how much (nil: unknown).
	lateBase, lateNew []aggregate.LateBound
	out               result.Comparison
}

// run computes the jobs' intervals, on every core: each is independent and
// seeded by its own name, so the answer does not depend on the schedule.
func run(jobs []*job, o stats.Options) {
	next := make(chan *job)
	var wg sync.WaitGroup
	for range min(len(jobs), runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			for j := range next {
				j.compute(o)
			}
		})
	}
	for _, j := range jobs {
		next <- j
	}
	close(next)
	wg.Wait()
}

// compute fills the job's row from its samples.
func (j *job) compute(o stats.Options) {
	o.Seed = j.seed
	d, err := stats.Compare(j.base, j.cur, j.metric.Compare.Statistic, j.metric.Better.Direction(), o)
	r := &j.out
	if err != nil {
		// The samples come from aggregate's checks; an error here is a bug
		// upstream, shown rather than crashing a report.
		r.Verdict, r.Reason = string(stats.Inconclusive), "not compared: "+err.Error()
		return
	}
	r.Statistic = d.Statistic.String()
	r.Rel, r.Interval = num(d.Rel), interval(d.RelCI)
	r.Abs, r.AbsInterval = num(d.Abs), interval(d.AbsCI)
	r.NBase, r.NNew = d.NBase, d.NNew
	if d.KBase > 1 && d.KNew > 1 {
		r.ReplicatesBase, r.ReplicatesNew = d.KBase, d.KNew
	}
	r.Verdict, r.Reason = string(d.Verdict), d.Reason
	j.stretched(r, d, o)
	if j.caveat != "" {
		r.Verdict, r.Reason = string(stats.Inconclusive), j.caveat
	}
}

// seedOf names a comparison's random stream.
func seedOf(stage, label, metric string) uint64 {
	h := fnv.New64a()
	for _, s := range []string{stage, label, metric} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return h.Sum64()
}

// digits is the rounding of changes and intervals in reports: a
// millionth of the base (0.0001%), far below any interval's width.
const digits = 6

func num(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return result.Ptr(result.Round(x, digits))
}

func interval(ci stats.Interval) *result.Interval {
	if math.IsNaN(ci.Lo) || math.IsNaN(ci.Hi) || math.IsInf(ci.Lo, 0) || math.IsInf(ci.Hi, 0) {
		return nil
	}
	return &result.Interval{Lo: result.Round(ci.Lo, digits), Hi: result.Round(ci.Hi, digits)}
}
