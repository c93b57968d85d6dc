package aggregate

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/runnerbench/runner/internal/hist"
	"github.com/runnerbench/runner/internal/stats"
	"github.com/runnerbench/runner/result"
)

// Time slices (result.Slices): a level cut into windows of the stage's
// slices: width, from the measured window's opening (warm-ups are not in
// it) to its end, the last slice as long as what is left. Each request is
// placed by its own times, so the slices are a pure function of the
// records, in any order:
//
//   - its send time places it for Sent and its latencies (the TTFT and E2E
//     of the successes sent in a slice: what a request sent then waited);
//   - its end (send + E2E) for Completed, Failed and RequestTPS;
//   - its [send, end) for the time-weighted in-flight mean and the peak;
//   - a success's output tokens are spread over its decode: the first at
//     send + TTFT, the rest evenly from there to its end (the records hold
//     no other token's time), so the slices' tokens add up to the level's
//     output exactly, and OutputTPS is a slice's share of output_tps_total;
//   - inter-token gaps by their token's arrival, which only the load stage
//     sees: it keeps a histogram of them per slice in the level record
//     (LevelRecord.ITLSlices).
//
// A percentile from fewer samples than hist.MinSamples (a p50 5, a p95 20)
// is null and named in the slice's TooFew, not a number made from two
// requests. Memory: 40 bytes per measured request while a sliced level
// runs (an unsliced level keeps nothing of this).

// MaxSlices bounds the slices of a level, so a report stays readable: a
// level longer than MaxSlices slices gets none, and a note says so.
const MaxSlices = 2000

// Steadiness thresholds (docs/statistics.md, "Steadiness").
const (
	// SteadyThreshold is the practical threshold: a first slice, or a drift
	// across the slices, within ±10% is never flagged, however certain.
	SteadyThreshold = 0.10
	// steadyTests is how many tests share the 95% confidence (Bonferroni):
	// the first slice's TTFT p50 and output, the trends of both.
	steadyTests = 4
	// minJudged is the fewest slices under load throughout a level needs to
	// be judged: a first one and two more to compare it with.
	minJudged = 3
)

// sliceReq is what a sliced level keeps of a measured request.
type sliceReq struct {
	start  int64   // send, Unix ns
	e2e    int64   // ns (0 when unknown)
	ttft   float64 // ms; NaN when none (failures, no token)
	e2eMs  float64 // ms; NaN for failures
	tokens int     // output tokens of a success
	ok     bool
	// cancelled: the client gave up on it; its TTFT counts, its end is
	// neither a completion nor a failure.
	cancelled bool
}

// slicer keeps a sliced level's requests until its slices are computed.
type slicer struct{ reqs []sliceReq }

func (s *slicer) add(r *result.Request) {
	if r.Start.IsZero() {
		return
	}
	q := sliceReq{start: r.Start.UnixNano(), ttft: math.NaN(), e2eMs: math.NaN(), ok: r.OK, cancelled: r.Cancelled}
	if valid(r.E2EMs) && r.E2EMs > 0 {
		q.e2e = int64(math.Round(r.E2EMs * 1e6))
	}
	if (r.OK || r.Cancelled) && r.TTFTMs != nil && valid(*r.TTFTMs) {
		q.ttft = *r.TTFTMs
	}
	if r.OK {
		if valid(r.E2EMs) {
			q.e2eMs = r.E2EMs
		}
		q.tokens = max(0, r.OutputTokens)
	}
	s.reqs = append(s.reqs, q)
}

// sliceAcc is one slice while it is computed.
type sliceAcc struct {
	lo, hi           int64 // Unix ns
	sent, done, fail int
	cancelled        int
	tokens           float64
	area             float64 // Σ overlap of requests in flight, ns
	peak             int
	ttft, e2e        []float64
	itl              *result.ITL
}

// build computes the level's slices from its requests and record.
func (s *slicer) build(rec *result.LevelRecord, w int64) *result.Slices {
	if w <= 0 || rec.Start.IsZero() || rec.WallNs <= 0 {
		return nil
	}
	out := &result.Slices{WidthS: result.Round(float64(w)/1e9, 3), Start: rec.Start}
	origin, end := rec.Start.UnixNano(), rec.Start.UnixNano()+rec.WallNs
	n := int((rec.WallNs + w - 1) / w)
	if n > MaxSlices {
		out.Steadiness.Why = fmt.Sprintf("the level's %s make %d slices of %s, more than %d: no slices (make them wider)",
			time.Duration(rec.WallNs).Round(time.Millisecond), n, time.Duration(w), MaxSlices)
		out.Notes = append(out.Notes, out.Steadiness.Why)
		out.Windows = []result.Slice{}
		return out
	}
	// One order whatever order the records came in: float sums below then
	// add up the same way in a live run and in a recomputed report.
	reqs := slices.Clone(s.reqs)
	slices.SortFunc(reqs, func(a, b sliceReq) int {
		return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.e2e, b.e2e), cmp.Compare(a.tokens, b.tokens),
			cmp.Compare(a.ttft, b.ttft), cmp.Compare(a.e2eMs, b.e2eMs))
	})
	acc := make([]sliceAcc, n)
	for k := range acc {
		acc[k].lo, acc[k].hi = origin+int64(k)*w, min(end, origin+int64(k+1)*w)
		if k < len(rec.ITLSlices) && rec.ITLSlices[k].Count > 0 {
			acc[k].itl = &rec.ITLSlices[k]
		}
	}
	at := func(t int64) int { return min(n-1, max(0, int((t-origin)/w))) }
	var lastSend int64
	for _, q := range reqs {
		lastSend = max(lastSend, q.start)
		fin := q.start + q.e2e
		a := &acc[at(q.start)]
		a.sent++
		if q.ok {
			if !math.IsNaN(q.ttft) {
				a.ttft = append(a.ttft, q.ttft)
			}
			if !math.IsNaN(q.e2eMs) {
				a.e2e = append(a.e2e, q.e2eMs)
			}
			acc[at(fin)].done++
			spreadTokens(acc, at, q, fin)
		} else if q.cancelled {
			if !math.IsNaN(q.ttft) {
				a.ttft = append(a.ttft, q.ttft)
			}
			acc[at(fin)].cancelled++
		} else {
			acc[at(fin)].fail++
		}
		for k := at(q.start); k <= at(fin); k++ {
			if o := min(fin, acc[k].hi) - max(q.start, acc[k].lo); o > 0 {
				acc[k].area += float64(o)
			}
		}
	}
	peaks(acc, at, reqs)
	out.Windows = make([]result.Slice, n)
	for k := range acc {
		out.Windows[k] = acc[k].slice(origin, w)
	}
	if rec.ITLSlices == nil {
		out.Notes = append(out.Notes, "no inter-token latency per slice: the level record keeps no gaps by slice (records of a run before slices were recorded)")
	}
	judge(out, acc, lastSend, w)
	return out
}

// spreadTokens adds a success's output tokens to the slices: one at its
// first token, the rest evenly over (first token, end].
func spreadTokens(acc []sliceAcc, at func(int64) int, q sliceReq, fin int64) {
	if q.tokens <= 0 {
		return
	}
	first := fin
	if !math.IsNaN(q.ttft) {
		first = min(fin, q.start+int64(math.Round(q.ttft*1e6)))
	}
	acc[at(first)].tokens++
	rest := float64(q.tokens - 1)
	if rest == 0 {
		return
	}
	span := fin - first
	if span <= 0 {
		acc[at(fin)].tokens += rest
		return
	}
	for k := at(first); k <= at(fin); k++ {
		lo, hi := max(first, acc[k].lo), min(fin, acc[k].hi)
		if k == len(acc)-1 {
			hi = fin // past the window's end (rounding): the last slice
		}
		if k == 0 {
			lo = first
		}
		if hi > lo {
			acc[k].tokens += rest * float64(hi-lo) / float64(span)
		}
	}
}

// peaks sets each slice's most requests in flight at once: half-open spans,
// an end at the instant of a start not overlapping it (as peakInFlight).
func peaks(acc []sliceAcc, at func(int64) int, reqs []sliceReq) {
	type event struct {
		t     int64
		delta int
	}
	ev := make([]event, 0, 2*len(reqs))
	for _, q := range reqs {
		if q.e2e > 0 {
			ev = append(ev, event{q.start, +1}, event{q.start + q.e2e, -1})
		}
	}
	slices.SortFunc(ev, func(a, b event) int { return cmp.Or(cmp.Compare(a.t, b.t), cmp.Compare(a.delta, b.delta)) })
	cur, k := 0, 0
	for _, e := range ev {
		for j := at(e.t); k < j; {
			k++
			acc[k].peak = max(acc[k].peak, cur) // carried in from before the slice
		}
		cur += e.delta
		acc[k].peak = max(acc[k].peak, cur)
	}
}

// slice turns an accumulated slice into its figures.
func (a *sliceAcc) slice(origin, w int64) result.Slice {
	secs := float64(a.hi-a.lo) / 1e9
	s := result.Slice{
		StartS: result.Round(float64(a.lo-origin)/1e9, 3), EndS: result.Round(float64(a.hi-origin)/1e9, 3),
		Sent: a.sent, Completed: a.done, Failed: a.fail, Cancelled: a.cancelled, InFlightMax: a.peak, Partial: a.hi-a.lo < w,
	}
	if secs > 0 {
		s.RequestTPS = result.Round(float64(a.done)/secs, 3)
		s.OutputTPS = result.Round(a.tokens/secs, 2)
		s.InFlightMean = result.Round(a.area/float64(a.hi-a.lo), 2)
	}
	slices.Sort(a.ttft)
	slices.Sort(a.e2e)
	s.TTFTP50Ms = exactQuant(&s, "ttft_p50_ms", a.ttft, 0.50)
	s.TTFTP95Ms = exactQuant(&s, "ttft_p95_ms", a.ttft, 0.95)
	s.E2EP50Ms = exactQuant(&s, "e2e_p50_ms", a.e2e, 0.50)
	s.E2EP95Ms = exactQuant(&s, "e2e_p95_ms", a.e2e, 0.95)
	if a.itl != nil && a.itl.Hist != nil {
		s.ITLP50Ms = histQuant(&s, "itl_p50_ms", a.itl, 0.50)
		s.ITLP95Ms = histQuant(&s, "itl_p95_ms", a.itl, 0.95)
	}
	return s
}

// exactQuant is the q-quantile of sorted by the percentile rule, or nil
// (named in the slice's TooFew) below the samples it needs.
func exactQuant(s *result.Slice, name string, sorted []float64, q float64) *float64 {
	if len(sorted) < hist.MinSamples(q) {
		s.TooFew = append(s.TooFew, name)
		return nil
	}
	v, _ := pct(sorted, q)
	return result.Ptr(v)
}

// histQuant is the q-quantile of a slice's inter-token gaps (their
// histogram, as the level's ITL is), or nil below the samples it needs.
func histQuant(s *result.Slice, name string, t *result.ITL, q float64) *float64 {
	if t.Count < int64(hist.MinSamples(q)) {
		s.TooFew = append(s.TooFew, name)
		return nil
	}
	v, ok := t.Hist.Quantile(q)
	if !ok {
		return nil
	}
	return result.Ptr(result.Round(v, 2))
}

// judge sets the slices' steadiness (docs/statistics.md, "Steadiness"):
// over the slices under load throughout (full ones that ended by the last
// send, so not the drain), the first slice against the rest (its TTFT p50
// by the comparison's bootstrap interval, its output by the rest's
// prediction interval) and a trend across the rest (output tok/s and TTFT
// p50 by the least-squares slope's interval). A test flags when its
// interval excludes no change and the change is beyond SteadyThreshold.
func judge(out *result.Slices, acc []sliceAcc, lastSend, w int64) {
	st := &out.Steadiness
	st.Confidence = stats.FamilyConfidence(stats.DefaultConfidence, steadyTests)
	var judged []int
	for k := range acc {
		if acc[k].hi-acc[k].lo == w && acc[k].hi <= lastSend {
			judged = append(judged, k)
		}
	}
	if len(judged) < minJudged {
		st.Why = fmt.Sprintf("not judged: %d slice(s) of %s were under load throughout (full, before the last send), and judging needs %d (a longer level, or narrower slices)",
			len(judged), time.Duration(w), minJudged)
		return
	}
	origin := acc[0].lo
	secs := func(t int64) float64 { return float64(t-origin) / 1e9 }
	st.Judged = true
	st.FromS = result.Round(secs(acc[judged[0]].lo), 3)
	st.ToS = result.Round(secs(acc[judged[len(judged)-1]].hi), 3)
	st.SteadyFromS = st.FromS
	rest := judged[1:]

	// The first slice's TTFT p50 against the rest's: the comparison's own
	// interval (a bootstrap of the median), first as "new", rest as "base".
	var base, first []float64
	first = slices.Clone(acc[judged[0]].ttft)
	for _, k := range rest {
		base = append(base, acc[k].ttft...)
	}
	slices.Sort(base)
	slices.Sort(first)
	if d, err := stats.Compare(stats.Sample{Values: base}, stats.Sample{Values: first}, stats.Percentile(0.5), stats.LowerIsBetter,
		stats.Options{Confidence: st.Confidence, Threshold: SteadyThreshold, Seed: 1}); err == nil && !math.IsNaN(d.Rel) {
		t := result.SteadyTest{Test: "first", Metric: "ttft_p50_ms", From: result.Round(d.Base, 2), To: result.Round(d.New, 2),
			Rel: result.Round(d.Rel, 4), RelLo: result.Round(d.RelCI.Lo, 4), RelHi: result.Round(d.RelCI.Hi, 4)}
		t.Flagged = (d.Verdict == stats.Worse || d.Verdict == stats.Better) && math.Abs(d.Rel) > SteadyThreshold
		t.Text = fmt.Sprintf("first slice TTFT p50 %s against %s over the rest (%s, interval %s to %s)",
			result.FormatMs(d.New), result.FormatMs(d.Base), signedPct(d.Rel), signedPct(d.RelCI.Lo), signedPct(d.RelCI.Hi))
		if d.LowSamples {
			t.Text += ": too few requests to judge"
		}
		st.Tests = append(st.Tests, t)
	}

	// The first slice's output against where one more slice of the rest
	// would fall by chance (their prediction interval).
	var tps []float64
	for _, k := range rest {
		tps = append(tps, tokensPerS(&acc[k]))
	}
	if pi, ok := stats.PredictionInterval(tps, st.Confidence); ok {
		m, v := meanOf(tps), tokensPerS(&acc[judged[0]])
		if m > 0 {
			t := result.SteadyTest{Test: "first", Metric: "output_tps", From: result.Round(m, 2), To: result.Round(v, 2),
				Rel: result.Round(v/m-1, 4), RelLo: result.Round(pi.Lo/m-1, 4), RelHi: result.Round(pi.Hi/m-1, 4)}
			t.Flagged = (v < pi.Lo || v > pi.Hi) && math.Abs(v/m-1) > SteadyThreshold
			t.Text = fmt.Sprintf("first slice output %.4g tok/s against %.4g over the rest (%s; by chance within %s to %s)",
				v, m, signedPct(v/m-1), signedPct(pi.Lo/m-1), signedPct(pi.Hi/m-1))
			st.Tests = append(st.Tests, t)
		}
	}

	// Trends across the rest of the slices.
	trend := func(metric, unit string, val func(k int) (float64, bool)) {
		var x, y []float64
		for _, k := range rest {
			if v, ok := val(k); ok {
				x = append(x, secs(acc[k].lo)+float64(w)/2e9)
				y = append(y, v)
			}
		}
		tr, ok := stats.FitTrend(x, y, st.Confidence)
		if !ok {
			return
		}
		from, to := tr.At(x[0]), tr.At(x[len(x)-1])
		if from <= 0 {
			return
		}
		span := x[len(x)-1] - x[0]
		t := result.SteadyTest{Test: "trend", Metric: metric, From: result.Round(from, 2), To: result.Round(to, 2),
			Rel: result.Round(to/from-1, 4), RelLo: result.Round(tr.SlopeCI.Lo*span/from, 4), RelHi: result.Round(tr.SlopeCI.Hi*span/from, 4),
			SlopePerS: result.Ptr(result.Round(tr.Slope, 4))}
		t.Flagged = (tr.SlopeCI.Lo > 0 || tr.SlopeCI.Hi < 0) && math.Abs(to/from-1) > SteadyThreshold
		t.Text = fmt.Sprintf("%s went from %s to %s over %.4g–%.4g s (%s, interval %s to %s)", metric,
			unitText(from, unit), unitText(to, unit), x[0], x[len(x)-1], signedPct(to/from-1),
			signedPct(tr.SlopeCI.Lo*span/from), signedPct(tr.SlopeCI.Hi*span/from))
		st.Tests = append(st.Tests, t)
	}
	trend("output_tps", "tok/s", func(k int) (float64, bool) { return tokensPerS(&acc[k]), true })
	trend("ttft_p50_ms", "ms", func(k int) (float64, bool) {
		a := &acc[k]
		if len(a.ttft) < hist.MinSamples(0.5) {
			return 0, false
		}
		s := slices.Clone(a.ttft)
		slices.Sort(s)
		return pct(s, 0.5)
	})

	steady := true
	for _, t := range st.Tests {
		if t.Flagged {
			steady = false
			if t.Test == "first" {
				st.SteadyFromS = result.Round(secs(acc[judged[1]].lo), 3)
			}
		}
	}
	st.Steady = &steady
}

// tokensPerS is a slice's output tokens per second, unrounded.
func tokensPerS(a *sliceAcc) float64 { return a.tokens / (float64(a.hi-a.lo) / 1e9) }

func meanOf(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// signedPct prints a relative change as a signed percentage ("+12%", "−3.4%").
func signedPct(r float64) string {
	f := "%+.3g%%"
	if math.Abs(r) >= 1 {
		f = "%+.0f%%"
	}
	return strings.Replace(fmt.Sprintf(f, r*100), "-", "−", 1)
}

func unitText(v float64, unit string) string {
	if unit == "ms" {
		return result.FormatMs(v)
	}
	return fmt.Sprintf("%.4g %s", v, unit)
}

// slicesOf sets the point's slices and steadiness from the level's kept
// requests, and warns when the level was not steady.
func (b *builder) slicesOf() {
	if b.sl == nil {
		return
	}
	s := b.sl.build(b.rec, b.spec.SliceNs)
	if s == nil {
		return
	}
	b.p.Slices = s
	b.sliceTelemetry(s)
	if sr := b.spec.Series; sr != nil {
		seriesLoads(s, sr)
		return
	}
	st := &s.Steadiness
	if st.Steady == nil {
		return
	}
	b.p.Steady = result.Ptr(*st.Steady)
	if *st.Steady {
		return
	}
	var why []string
	for _, t := range st.Tests {
		if t.Flagged {
			why = append(why, t.Text)
		}
	}
	b.p.Warnings = append(b.p.Warnings, fmt.Sprintf("not steady across its %s slices (%.4g–%.4g s): %s; its metrics average a changing load (steady from %.4g s)",
		time.Duration(b.spec.SliceNs).String(), st.FromS, st.ToS, strings.Join(why, "; "), st.SteadyFromS))
}

// seriesLoads gives each slice of a series level the load its series asked
// for over it (its mean over the slice), and does not judge the level's
// steadiness: its load changes on purpose, so its slices read as a sweep.
func seriesLoads(s *result.Slices, sr *result.Series) {
	at := func(secs float64) time.Duration { return time.Duration(math.Round(secs * float64(time.Second))) }
	for k := range s.Windows {
		w := &s.Windows[k]
		w.Load = result.Ptr(result.Round(sr.Mean(at(w.StartS), at(w.EndS)), 4))
	}
	s.Steadiness = result.Steadiness{Why: "a series level's load changes as its series asks: its steadiness is not judged"}
}

// sliceTelemetry adds to each slice the means of the telemetry read in it:
// the engine's requests waiting and running and its KV-cache usage (from
// its own /metrics), and the GPUs' power summed over the GPUs the targets
// report (a DCGM blank value is no reading). Each is named for what it is,
// with its unit, as the HTML titles its chart.
func (b *builder) sliceTelemetry(s *result.Slices) {
	if len(b.reads) == 0 {
		return
	}
	reads := slices.Clone(b.reads)
	SortReads(reads)
	reads = firstShard(reads)
	var endpoint, targets []*result.TelemetryScrape
	for _, r := range reads {
		if r.Endpoint {
			endpoint = append(endpoint, r)
		} else {
			targets = append(targets, r)
		}
	}
	add := func(name string, pts []TimeValue) {
		if len(pts) == 0 {
			return
		}
		times, values := make([]time.Time, len(pts)), make([]float64, len(pts))
		for i, p := range pts {
			times[i], values[i] = p.T, p.V
		}
		SliceMeans(s, name, times, values)
	}
	add(SeriesRunning, Series(endpoint, result.RunningGauges, CombineSum))
	add(SeriesWaiting, Series(endpoint, result.WaitingGauges, CombineSum))
	add(SeriesKVCache, Series(endpoint, result.KVCacheGauges, CombineMean))
	// Each target's reads are its own series (a read holds one target's
	// GPUs): the slice's power is the sum of the targets' means in it.
	power := map[string][]TimeValue{}
	var order []string
	for _, r := range targets {
		if sum, ok := readPower(r); ok {
			if _, ok := power[r.Target]; !ok {
				order = append(order, r.Target)
			}
			power[r.Target] = append(power[r.Target], TimeValue{T: r.Time, V: sum})
		}
	}
	const gpuPower = SeriesGPUPower
	for _, t := range order {
		add(gpuPower+"\x00"+t, power[t])
	}
	for i := range s.Windows {
		w := &s.Windows[i]
		sum, n := 0.0, 0
		for _, t := range order {
			k := gpuPower + "\x00" + t
			if v, ok := w.Series[k]; ok {
				sum, n = sum+v, n+1
				delete(w.Series, k)
			}
		}
		// A slice where some target had no read has no honest sum.
		if n == len(order) && n > 0 {
			w.Series[gpuPower] = sum
		}
		if len(w.Series) == 0 {
			w.Series = nil
		}
	}
}

// readPower is the GPUs' power in one read, summed over the GPUs it
// reports (the first power name of a vendor present wins, as for the
// level's figures; a DCGM blank value is no reading), and whether it holds
// any.
func readPower(r *result.TelemetryScrape) (float64, bool) {
	sum, n := 0.0, 0
	for _, v := range gpuVendors {
		for _, name := range v.power {
			k := 0
			for _, smp := range r.Samples {
				if smp.Metric == name && !blank(smp.Value, false) && (v.primary == nil || v.primary(smp.Labels)) {
					sum, k = sum+smp.Value, k+1
				}
			}
			if k > 0 {
				n += k
				break
			}
		}
	}
	return sum, n > 0
}

// SliceMeans is the hook for time series sampled during a level (telemetry:
// a server gauge, a GPU's power): it sets each slice's Series[name] to the
// mean of the samples taken in it (times on the wall clock; a sample at a
// slice's end belongs to the next), leaving a slice without samples
// without the series. A level without slices is left alone.
func SliceMeans(s *result.Slices, name string, times []time.Time, values []float64) {
	if s == nil || len(s.Windows) == 0 || s.WidthS <= 0 {
		return
	}
	origin := s.Start.UnixNano()
	sum := make([]float64, len(s.Windows))
	cnt := make([]int, len(s.Windows))
	for i, t := range times {
		if i >= len(values) || math.IsNaN(values[i]) || math.IsInf(values[i], 0) {
			continue
		}
		off := float64(t.UnixNano()-origin) / 1e9
		if off < 0 || off >= s.Windows[len(s.Windows)-1].EndS {
			continue
		}
		k := min(len(s.Windows)-1, int(off/s.WidthS))
		sum[k] += values[i]
		cnt[k]++
	}
	for k := range s.Windows {
		if cnt[k] == 0 {
			continue
		}
		if s.Windows[k].Series == nil {
			s.Windows[k].Series = map[string]float64{}
		}
		s.Windows[k].Series[name] = result.Round(sum[k]/float64(cnt[k]), 4)
	}
}
