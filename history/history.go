// Package history follows a plan's metrics over its published runs and
// marks the runs where a metric changed: not a single noisy night, but a
// window of recent runs that differs from the runs before it, judged as
// `runner compare` judges replicated runs, with a family that holds over
// the whole history (docs/statistics.md, "History"). It is a pure function
// of the database's values and samples.
//
// The rule, for each judged series (a server metric with a better
// direction and an interval, of one stage and level) and each run i:
//
//   - the window is the Window runs ending at run i, the base the up to
//     Before runs before the window (at least MinBefore); a level that was
//     interrupted or whose client was the bottleneck is in neither;
//   - the interval of the change is the union of the runs' interval
//     (stats.RunsInterval: Student's t over the runs' values with their
//     spread pooled, on the log scale) and the bootstrap interval over
//     every request of the runs, read with the threshold, the low-sample
//     rule and the verdicts of stats.Compare;
//   - the family is every window judged, of every judged series: each
//     interval is at the Bonferroni confidence over all of them
//     (stats.FamilyConfidence), so an unchanged history, however long, has
//     at most a 1 − Confidence chance of any mark at all;
//   - run i is marked where the verdict turns worse or better (the first
//     window of a stretch with that verdict);
//   - the gate (--fail-on-change) asks only of the newest run, as `runner
//     compare` asks of a run against its baseline: its family is the
//     windows ending at the newest run, one per series, so it sees what a
//     comparison would however long the history is.
//
// One outlying run inside a window widens the replicate interval rather
// than moving the verdict, so a change needs most of the window to agree.
package history

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"runtime"
	"slices"
	"sort"
	"sync"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/comparison"
	"github.com/runnerbench/runner/internal/stats"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/store"
)

// Defaults of Options.
const (
	DefaultWindow = 3
	DefaultBefore = 10
	MinBefore     = 3
)

// Options of Build.
type Options struct {
	// Window is the recent runs judged together (0: DefaultWindow, at
	// least 2); Before the most runs before them they are compared with
	// (0: DefaultBefore, at least MinBefore).
	Window, Before int
	// Confidence is the family's (0: 95%); Threshold the practical
	// threshold, a fraction (comparison's 5% when 0; negative for none).
	Confidence, Threshold float64
	// Resamples is the bootstrap's B before stats raises it (0: default).
	Resamples int
	// Replicate are the label keys that tell runs of one series apart (a
	// commit, a night, a date): runs that differ only by them are one
	// series. Any other label, the endpoint, the model or the load that
	// differs makes another series (comparison.Identity).
	Replicate []string
}

// SamplesFunc returns the per-request samples of a run's point (nil: none).
type SamplesFunc func(run int, stage, label string) (*aggregate.Samples, error)

// History is a plan's metrics over time.
type History struct {
	Runs   []*store.Run
	Series []Series
	// Judged is how many series are judged; Each the confidence of each
	// window's interval.
	Judged int
	// Windows is how many windows the judged series have together: the
	// family over which Confidence holds, each interval at Each.
	Windows    int
	Confidence float64
	Each       float64
	// GateWindows is how many series have a window ending at the newest
	// run: --fail-on-change's family, as `runner compare` gates one run
	// against its baseline, each of those windows judged again at GateEach.
	GateWindows int
	GateEach    float64
	Window      int
	Before      int
	Threshold   float64
	// Notes say where a stage's runs are more than one series: each run at
	// which its identity changed, and what changed.
	Notes []string
}

// Series is one metric of one level over the runs of one identity: the
// same load, endpoint, model and labels (less Options.Replicate), so no
// window joins runs that measured different things.
type Series struct {
	Stage, Label, Metric string
	// Identity is what the series' runs share; Distinct names it against
	// the stage's other series ("" when the stage's runs are one series).
	Identity comparison.Identity
	Distinct string
	// Judged is set for a server metric with a better direction and an
	// interval; Why says why not otherwise.
	Judged bool
	Why    string
	Points []Point
	// Gate is the window ending at the newest run judged in the gate's
	// family (History.GateEach); nil when the series has none.
	Gate *Point
}

// Point is the series' value in one run, and the verdict of the window
// ending at it (empty when the window could not be judged).
type Point struct {
	Run       int
	Value     float64
	Judgeable bool
	Verdict   string
	// Change is set on the first run of a stretch of worse or better.
	Change bool
	// Rel and Interval are the window's change against its base (a
	// fraction, nil when not computed); Low and High the window's value's
	// interval in the metric's unit, for charts.
	Rel       *float64
	Interval  *result.Interval
	Low, High *float64
	// Since is the first run of the window, Base how many runs it was
	// compared with.
	Since, Base int
	Reason      string
}

func (o *Options) defaults() error {
	if o.Window == 0 {
		o.Window = DefaultWindow
	}
	if o.Before == 0 {
		o.Before = DefaultBefore
	}
	if o.Confidence == 0 {
		o.Confidence = stats.DefaultConfidence
	}
	if o.Threshold == 0 {
		o.Threshold = 0.05
	}
	if o.Threshold < 0 {
		o.Threshold = 0
	}
	switch {
	case o.Window < 2:
		return errors.New("the window must hold at least 2 runs")
	case o.Before < MinBefore:
		return fmt.Errorf("the base must hold at least %d runs", MinBefore)
	case !(o.Confidence > 0 && o.Confidence < 1):
		return errors.New("the confidence must be between 0 and 1")
	}
	return nil
}

// group puts the values into series, one per identity of a stage's runs
// (in the order the identities first ran), in catalogue order within each
// level.
func group(s *store.Series, ids *identities) []Series {
	order := map[string]int{}
	ms := result.Metrics()
	for i := range ms {
		order[ms[i].Name] = i
	}
	byKey := map[[4]string]*Series{}
	pos := map[[2]string]int{} // a level's position in its stage, first seen
	var out []*Series
	for _, v := range s.Values {
		if _, ok := pos[[2]string{v.Stage, v.Label}]; !ok {
			pos[[2]string{v.Stage, v.Label}] = v.Position
		}
		id := ids.of(v.Run, v.Stage)
		k := [4]string{id.Key(), v.Stage, v.Label, v.Metric}
		se := byKey[k]
		if se == nil {
			se = &Series{Stage: v.Stage, Label: v.Label, Metric: v.Metric, Identity: id, Distinct: ids.distinct(v.Stage, id)}
			se.Judged, se.Why = judgeable(v.Metric)
			byKey[k] = se
			out = append(out, se)
		}
		se.Points = append(se.Points, Point{Run: v.Run, Value: v.Value, Judgeable: v.Judgeable})
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Stage != b.Stage {
			return a.Stage < b.Stage
		}
		if pa, pb := pos[[2]string{a.Stage, a.Label}], pos[[2]string{b.Stage, b.Label}]; pa != pb || a.Label != b.Label {
			if pa != pb {
				return pa < pb
			}
			return a.Label < b.Label
		}
		if ia, ib := ids.rank(a.Stage, a.Identity), ids.rank(b.Stage, b.Identity); ia != ib {
			return ia < ib
		}
		return order[a.Metric] < order[b.Metric]
	})
	res := make([]Series, len(out))
	for i, se := range out {
		res[i] = *se
	}
	return res
}

// judgeable says whether a metric's history is judged, as compare gates
// it: a server metric with a better direction and an interval.
func judgeable(name string) (bool, string) {
	m := metricNamed(name)
	if m == nil {
		return false, "not in this Runner's catalogue"
	}
	if why := m.NotGateable(); why != "" {
		return false, "it " + why
	}
	return true, ""
}

// Build groups the values into series and judges every window.
func Build(s *store.Series, samples SamplesFunc, o Options) (*History, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	h := &History{Runs: s.Runs, Confidence: o.Confidence, Window: o.Window, Before: o.Before, Threshold: o.Threshold}
	ids := newIdentities(s, o.Replicate)
	h.Series = group(s, ids)
	h.Notes = ids.changes(h.RunName)
	for i := range h.Series {
		if h.Series[i].Judged {
			h.Judged++
			h.Windows += windows(&h.Series[i], o)
		}
	}
	h.Each = stats.FamilyConfidence(o.Confidence, h.Windows)
	for i := range h.Series {
		if se := &h.Series[i]; se.Judged && gateWindow(se, len(h.Runs)-1, o) {
			h.GateWindows++
		}
	}
	h.GateEach = stats.FamilyConfidence(o.Confidence, max(1, h.GateWindows))
	return h, judgeAll(h, samples, o)
}

// gateWindow reports whether the series has a window ending at run last
// (the newest): its newest judgeable point is that run, with MinBefore
// judgeable runs before its window.
func gateWindow(se *Series, last int, o Options) bool {
	n, newest := 0, -1
	for _, p := range se.Points {
		if p.Judgeable {
			n, newest = n+1, p.Run
		}
	}
	return newest == last && n >= o.Window+MinBefore
}

// windows is how many windows of a series are judged: one ending at each
// judgeable run from the one that has MinBefore judgeable runs before its
// window on.
func windows(se *Series, o Options) int {
	n := 0
	for _, p := range se.Points {
		if p.Judgeable {
			n++
		}
	}
	return max(0, n-(o.Window+MinBefore)+1)
}

// judgeAll judges every judged series in three passes per level (a
// stage's level, whose series share its runs' samples): every window from
// the runs' values alone; the windows that singles out, in the order of
// their newest run, so that each run's requests are read and decoded once
// for all the level's metrics while it is in the cache; then the marks. The
// levels go to every core: each window's bootstrap is seeded by its own
// name, so the answer does not depend on the schedule.
func judgeAll(h *History, samples SamplesFunc, o Options) error {
	var levels [][]int
	at := map[[2]string]int{}
	for i := range h.Series {
		se := &h.Series[i]
		if !se.Judged {
			continue
		}
		k := [2]string{se.Stage, se.Label}
		j, ok := at[k]
		if !ok {
			j, at[k] = len(levels), len(levels)
			levels = append(levels, nil)
		}
		levels[j] = append(levels[j], i)
	}
	var mu sync.Mutex // samples reads the database: one at a time
	locked := func(run int, stage, label string) (*aggregate.Samples, error) {
		mu.Lock()
		defer mu.Unlock()
		return samples(run, stage, label)
	}
	errs := make([]error, len(levels))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(len(levels), runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			for j := range next {
				errs[j] = judgeLevel(h, levels[j], locked, o)
			}
		})
	}
	for j := range levels {
		next <- j
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}

// candidate is a window the runs' values call worse or better: it is
// compared again with every request.
type candidate struct {
	se        *Series
	m         *result.Metric
	p         *Point
	win, base []int
	order     int // the series' place in the level
	// abs and rel are the runs' interval (screenWindow's).
	abs, rel stats.Interval
}

// judgeLevel judges the series of one level (indexes into h.Series).
func judgeLevel(h *History, level []int, samples SamplesFunc, o Options) error {
	var cands []candidate
	for k, i := range level {
		cands = append(cands, screenSeries(&h.Series[i], k, o, h.Each)...)
	}
	sort.SliceStable(cands, func(a, b int) bool {
		ra, rb := cands[a].p.Run, cands[b].p.Run
		if ra != rb {
			return ra < rb
		}
		return cands[a].order < cands[b].order
	})
	c := newRunCache(samples, 2*(o.Window+o.Before))
	for _, cd := range cands {
		if err := full(cd, c, o, h.Each); err != nil {
			return err
		}
	}
	for _, i := range level {
		markChanges(&h.Series[i])
	}
	// The gate asks of the newest run what `runner compare` asks of a run
	// and its baseline: its family is the newest windows alone, so a long
	// history does not make the gate blind to the change it is for.
	for k, i := range level {
		se := &h.Series[i]
		if !gateWindow(se, len(h.Runs)-1, o) {
			continue
		}
		var idx []int
		for j := range se.Points {
			if se.Points[j].Judgeable {
				idx = append(idx, j)
			}
		}
		g := se.Points[idx[len(idx)-1]]
		g.Verdict, g.Reason, g.Change, g.Rel, g.Interval, g.Low, g.High = "", "", false, nil, nil, nil, nil
		win := idx[len(idx)-o.Window:]
		base := idx[max(0, len(idx)-o.Window-o.Before) : len(idx)-o.Window]
		m := metricNamed(se.Metric)
		if abs, rel, again := screenWindow(se, m, &g, win, base, o, h.GateEach); again {
			if err := full(candidate{se: se, m: m, p: &g, win: win, base: base, order: k, abs: abs, rel: rel}, c, o, h.GateEach); err != nil {
				return err
			}
		}
		se.Gate = &g
	}
	return nil
}

// screenSeries judges every window of a series from the runs' values and
// returns the windows to compare again with every request.
func screenSeries(se *Series, order int, o Options, each float64) []candidate {
	m := metricNamed(se.Metric)
	var idx []int // the judgeable points, in order
	var out []candidate
	for i := range se.Points {
		p := &se.Points[i]
		if !p.Judgeable {
			p.Reason = "interrupted, or the client was the bottleneck: shown, never compared"
			continue
		}
		idx = append(idx, i)
		if len(idx) < o.Window+MinBefore {
			p.Reason = fmt.Sprintf("fewer than %d runs before the window of %d", MinBefore, o.Window)
			continue
		}
		win := idx[len(idx)-o.Window:]
		base := idx[max(0, len(idx)-o.Window-o.Before) : len(idx)-o.Window]
		if abs, rel, again := screenWindow(se, m, p, win, base, o, each); again {
			out = append(out, candidate{se: se, m: m, p: p, win: win, base: base, order: order, abs: abs, rel: rel})
		}
	}
	return out
}

// markChanges marks the first window of every stretch of worse or better.
func markChanges(se *Series) {
	prev := ""
	for i := range se.Points {
		p := &se.Points[i]
		if p.Verdict == "" {
			continue
		}
		p.Change = (p.Verdict == string(stats.Worse) || p.Verdict == string(stats.Better)) && p.Verdict != prev
		prev = p.Verdict
	}
}

// screenWindow judges the window win against base (indexes into se.Points)
// from the runs' values alone (stats.RunsInterval, which the full
// comparison's interval holds), and says whether it needs the full
// comparison: when that interval calls it worse or better.
func screenWindow(se *Series, m *result.Metric, p *Point, win, base []int, o Options, each float64) (abs, rel stats.Interval, again bool) {
	p.Since, p.Base = se.Points[win[0]].Run, len(base)
	bv, wv := values(se, base), values(se, win)
	abs, rel, ok := stats.RunsInterval(bv, wv, each)
	if !ok {
		p.Verdict, p.Reason = string(stats.Inconclusive), "too few runs"
		return abs, rel, false
	}
	setInterval(p, mean(bv), abs, rel)
	v := screen(rel, abs, m, o.Threshold)
	p.Verdict = string(v)
	if v == stats.Inconclusive {
		p.Reason = "the interval includes no change"
	}
	return abs, rel, v == stats.Worse || v == stats.Better
}

// full compares a candidate window again with every request of its runs:
// the interval is the union of the runs' interval (screenWindow's) and the
// bootstrap interval over the runs' pooled requests, read by the same rule,
// with stats.Compare's low-sample rule.
func full(cd candidate, c *runCache, o Options, each float64) error {
	se, m, p := cd.se, cd.m, cd.p
	bs, err := pooled(se, cd.base, c, m)
	if err != nil {
		return err
	}
	ws, err := pooled(se, cd.win, c, m)
	if err != nil {
		return err
	}
	if bs == nil || ws == nil {
		p.Verdict, p.Reason = string(stats.Inconclusive), "a run's requests are not in the database"
		return nil
	}
	dir := stats.LowerIsBetter
	if m.Better == result.HigherIsBetter {
		dir = stats.HigherIsBetter
	}
	d, err := stats.Compare(*bs, *ws, m.Compare.Statistic, dir,
		stats.Options{Confidence: each, Threshold: o.Threshold, Resamples: o.Resamples, Seed: seedOf(se, p.Run)})
	if err != nil {
		return fmt.Errorf("%s %s %s: %w", se.Stage, se.Label, se.Metric, err)
	}
	abs, rel := union(cd.abs, d.AbsCI), union(cd.rel, d.RelCI)
	v := screen(rel, abs, m, o.Threshold)
	p.Verdict, p.Reason = string(v), ""
	switch {
	case d.NBase == 0 || d.NNew == 0:
		p.Verdict, p.Reason = string(stats.Inconclusive), d.Reason
	case (v == stats.Worse || v == stats.Better) && d.LowSamples:
		p.Verdict, p.Reason = string(stats.Inconclusive), d.Reason
	case v == stats.Inconclusive:
		p.Reason = "the interval includes no change"
	}
	p.Low, p.High, p.Interval = nil, nil, nil
	setInterval(p, d.Base, abs, rel)
	if !math.IsNaN(d.Rel) {
		p.Rel = result.Ptr(result.Round(d.Rel, 6))
	}
	return nil
}

// union is the smallest interval holding both; a NaN one (none) adds
// nothing.
func union(a, b stats.Interval) stats.Interval {
	switch {
	case math.IsNaN(a.Lo):
		return b
	case math.IsNaN(b.Lo):
		return a
	}
	return stats.Interval{Lo: min(a.Lo, b.Lo), Hi: max(a.Hi, b.Hi)}
}

// screen is stats.Compare's verdict rule read on the runs' interval alone.
func screen(rel, abs stats.Interval, m *result.Metric, threshold float64) stats.Verdict {
	lo, hi, band := rel.Lo, rel.Hi, threshold
	if math.IsNaN(lo) {
		lo, hi, band = abs.Lo, abs.Hi, 0
	}
	if m.Better == result.HigherIsBetter {
		lo, hi = -hi, -lo
	}
	switch {
	case lo >= -band && hi <= band:
		return stats.Same
	case lo > 0:
		return stats.Worse
	case hi < 0:
		return stats.Better
	}
	return stats.Inconclusive
}

func setInterval(p *Point, base float64, abs, rel stats.Interval) {
	if !math.IsNaN(rel.Lo) && !math.IsInf(rel.Lo, 0) && !math.IsInf(rel.Hi, 0) {
		p.Interval = &result.Interval{Lo: result.Round(rel.Lo, 6), Hi: result.Round(rel.Hi, 6)}
	}
	if !math.IsNaN(abs.Lo) && !math.IsInf(abs.Lo, 0) && !math.IsInf(abs.Hi, 0) {
		p.Low, p.High = result.Ptr(base+abs.Lo), result.Ptr(base+abs.Hi)
	}
}

func values(se *Series, at []int) []float64 {
	out := make([]float64, len(at))
	for i, j := range at {
		out[i] = se.Points[j].Value
	}
	return out
}

func mean(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// pooled is the runs' samples of the metric as one run: every request of
// them (the runs' spread is in RunsInterval already). Nil when a run has
// none.
func pooled(se *Series, at []int, c *runCache, m *result.Metric) (*stats.Sample, error) {
	var parts []stats.Sample
	for _, j := range at {
		s, ok, err := c.sample(se.Points[j].Run, se.Stage, se.Label, m.Compare.Sample)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, nil
		}
		parts = append(parts, s)
	}
	var out stats.Sample
	for _, s := range parts {
		out.Values = append(out.Values, s.Values...)
		out.Costs = append(out.Costs, s.Costs...)
		out.Wall += s.Wall
		out.Trials += s.Trials
		out.Hits += s.Hits
		out.Workers = max(out.Workers, s.Workers)
	}
	if out.Costs == nil && out.Wall == 0 {
		slices.Sort(out.Values)
	}
	return &out, nil
}

// runCache keeps the samples of the last n runs' levels read, and each
// one's statistics' samples as they are asked for: neighbouring windows
// share all but one of their runs, and a level's metrics share its runs,
// so each run's requests are read and decoded once while its windows are
// judged.
type runCache struct {
	f     SamplesFunc
	n     int
	m     map[runKey]*cached
	order []runKey
}

type runKey struct {
	run          int
	stage, label string
}

type cached struct {
	s  *aggregate.Samples // nil: the run has no samples
	by map[result.Sample]stats.Sample
}

func newRunCache(f SamplesFunc, n int) *runCache {
	return &runCache{f: f, n: n, m: map[runKey]*cached{}}
}

// sample is a run's level's sample of src; ok is false when the run's
// requests are not there.
func (c *runCache) sample(run int, stage, label string, src result.Sample) (stats.Sample, bool, error) {
	k := runKey{run, stage, label}
	e := c.m[k]
	if e == nil {
		s, err := c.f(run, stage, label)
		if err != nil {
			return stats.Sample{}, false, err
		}
		if len(c.order) >= c.n {
			delete(c.m, c.order[0])
			c.order = c.order[1:]
		}
		e = &cached{s: s, by: map[result.Sample]stats.Sample{}}
		c.m[k], c.order = e, append(c.order, k)
	}
	if e.s == nil {
		return stats.Sample{}, false, nil
	}
	v, ok := e.by[src]
	if !ok {
		v = e.s.Sample(src)
		e.by[src] = v
	}
	return v, true, nil
}

// seedOf names a window's random stream.
func seedOf(se *Series, run int) uint64 {
	h := fnv.New64a()
	for _, s := range []string{se.Stage, se.Label, se.Metric, fmt.Sprint(run)} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return h.Sum64()
}

// Failures are the series whose window ending at the newest run is worse
// by more than failAbove (a fraction), judged in the gate's family (the
// newest windows of every series, at GateEach): what --fail-on-change
// fails on.
func (h *History) Failures(failAbove float64) []Failure {
	var out []Failure
	for i := range h.Series {
		se := &h.Series[i]
		p := se.Gate
		if p == nil || p.Verdict != string(stats.Worse) || p.Rel == nil {
			continue
		}
		worseBy := *p.Rel
		if m := metricNamed(se.Metric); m != nil && m.Better == result.HigherIsBetter {
			worseBy = -worseBy
		}
		if worseBy > failAbove {
			out = append(out, Failure{Series: se, Point: *p})
		}
	}
	return out
}

// Failure is a series the gate fails on.
type Failure struct {
	Series *Series
	Point  Point
}

func metricNamed(name string) *result.Metric {
	m, _ := result.MetricNamed(name)
	return m
}
