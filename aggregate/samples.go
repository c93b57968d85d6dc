package aggregate

import (
	"math"
	"slices"
	"sort"
	"time"

	"github.com/runnerbench/runner/internal/stats"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/sim/simconfig"
)

// Samples are one level's per-request samples (result.Sample), kept for
// comparing the level with another run's (package comparison): the values
// its metrics are computed from, by the same populations (okLatencies,
// streamTPS, the SLO), but kept whole, never folded into a histogram. A
// level of n requests holds about 150·n bytes, so a stage keeps them only
// when asked (Stage.KeepSamples).
//
// What a Sample returns depends only on which requests were added, never on
// the order they came in: paired values are in dispatch order (the key
// aggregate orders failures by), single values sorted. So the intervals of
// a live run and of its records read back are the same, bit for bit.
//
// A level run as several replicates (result.LevelSpec.Replicates) also
// gives each replicate's own sample, over its own window, so a comparison
// can see how much whole replicates differ, not only requests.
type Samples struct {
	spec  result.LevelSpec
	wall  time.Duration
	walls []time.Duration // each replicate's window; nil for one replicate
	rows  []sampleRow
	// reported is set when the server reported input tokens (prefill_tps
	// then reads them, else the requested count).
	reported bool
	// lag is the built-in simulator's lag-ratio histograms over the level
	// (nil for another server), for a comparison's bound on its lateness.
	lag map[string]result.HistogramDelta
}

// sampleRow is what one measured request contributes.
type sampleRow struct {
	key  order
	rep  int // the replicate it belongs to
	ok   bool
	good bool
	// cancelled: the client gave up on it (neither ok nor failed).
	cancelled bool
	lat       [nLat]float64 // successes' latencies; NaN where none
	stream    float64       // tokens / E2E s; NaN where none
	out       float64       // output tokens of a success (0 for a failure)
	in        float64       // reported input tokens
	e2e       float64       // ms, failures too: how long it held its worker
}

func newSamples(spec result.LevelSpec) *Samples { return &Samples{spec: spec} }

// add records one measured request (the caller holds the level's lock).
func (s *Samples) add(r *result.Request) {
	row := sampleRow{key: keyOf(r), rep: r.Replicate, ok: r.OK, cancelled: r.Cancelled, stream: math.NaN()}
	for i := range row.lat {
		row.lat[i] = math.NaN()
	}
	if r.Cancelled {
		row.lat = cancelledLatencies(r)
	}
	if valid(r.E2EMs) && r.E2EMs >= 0 {
		row.e2e = r.E2EMs
	}
	if r.OK {
		row.lat = okLatencies(r)
		if v, ok := streamTPS(r); ok {
			row.stream = v
		}
		row.out, row.in = float64(r.OutputTokens), float64(r.InputTokens)
		row.good = s.spec.SLO.Set() && s.spec.SLO.Met(r)
	}
	s.rows = append(s.rows, row)
}

// done closes the samples with the level's record: its measured wall time
// (and each replicate's), and the rows in dispatch order.
func (s *Samples) done(rec *result.LevelRecord) *Samples {
	s.wall = rec.Wall()
	if len(rec.Windows) > 1 {
		for _, w := range rec.Windows {
			s.walls = append(s.walls, time.Duration(w.WallNs))
		}
	}
	sort.Slice(s.rows, func(i, j int) bool { return s.rows[i].key.less(s.rows[j].key) })
	s.reported = slices.ContainsFunc(s.rows, func(r sampleRow) bool { return r.ok && r.in > 0 })
	if rec.Server != nil {
		s.lag = rec.Server.Histograms
	}
	return s
}

// LateBound is what the built-in simulator said of its lateness over a
// level: at most Requests of its requests were stretched by more than
// Stretch against its model.
type LateBound struct {
	Stretch  float64
	Requests int64
}

// Late is the level's bounds on how the simulator's lateness stretched the
// part of its requests that sample src measures, one per bucket bound of
// its lag-ratio histogram, lowest first; nil when it did not say (another
// server, or a sample with no part of its own).
func (s *Samples) Late(src result.Sample) []LateBound {
	name := simconfig.MetricLagRatio
	switch src {
	case result.SampleTTFT, result.SampleTTFTFromSchedule, result.SampleTTFTOverhead, result.SamplePrefill:
		name = simconfig.MetricTTFTLagRatio
	case result.SampleTPOT:
		name = simconfig.MetricDecodeLagRatio
	case result.SampleE2E, result.SampleE2EFromSchedule:
		name = simconfig.MetricE2ELagRatio
	}
	h, ok := s.lag[name]
	if !ok || h.Count == 0 {
		return nil
	}
	out := make([]LateBound, 0, len(h.Buckets))
	for _, b := range h.Buckets {
		if !math.IsInf(b.LE, 1) {
			out = append(out, LateBound{Stretch: b.LE, Requests: int64(h.Count - b.Count)})
		}
	}
	return out
}

// sampleLat maps a latency sample to its population.
var sampleLat = map[result.Sample]int{
	result.SampleTTFT: latTTFT, result.SampleTPOT: latTPOT, result.SampleE2E: latE2E,
	result.SampleTTFAT: latTTFAT, result.SampleTTFTFromSchedule: latTTFTSched,
	result.SampleE2EFromSchedule: latE2ESched, result.SampleTTFTOverhead: latOverhead,
}

// Sample is the level's sample src as stats.Compare reads it. A closed
// loop's rates carry each request's E2E and the concurrency, so the wall of
// a resample moves with its requests; an open loop's hold the wall fixed
// (stats.Sample says when each is right).
// With replicates, Replicates holds each one's sample of src.
func (s *Samples) Sample(src result.Sample) stats.Sample {
	out := s.sampleOf(src, s.rows, s.wall)
	if parts := s.byReplicate(); parts != nil {
		for j, rows := range parts {
			out.Replicates = append(out.Replicates, s.sampleOf(src, rows, s.walls[j]))
		}
	}
	return out
}

// byReplicate splits the rows by replicate, without copying: a replicate's
// sequence numbers follow the last one's, so in dispatch order its rows are
// one run. Nil for a level of one replicate, or for rows that do not fall
// into runs of the replicates the record has windows for.
func (s *Samples) byReplicate() [][]sampleRow {
	if len(s.walls) < 2 {
		return nil
	}
	parts := make([][]sampleRow, len(s.walls))
	from := 0
	for i := 1; i <= len(s.rows); i++ {
		if i < len(s.rows) && s.rows[i].rep == s.rows[from].rep {
			continue
		}
		j := s.rows[from].rep
		if j < 0 || j >= len(parts) || parts[j] != nil {
			return nil
		}
		parts[j], from = s.rows[from:i:i], i
	}
	return parts
}

// sampleOf is the sample src over rows, measured over wall.
func (s *Samples) sampleOf(src result.Sample, rows []sampleRow, wall time.Duration) stats.Sample {
	if i, ok := sampleLat[src]; ok {
		return stats.Sample{Values: sorted(rows, func(r *sampleRow) float64 { return r.lat[i] })}
	}
	switch src {
	case result.SampleStreamTPS:
		return stats.Sample{Values: sorted(rows, func(r *sampleRow) float64 { return r.stream })}
	case result.SampleOutputTokens:
		return s.rate(rows, wall, func(r *sampleRow) float64 { return r.out })
	case result.SampleCompleted:
		return s.rate(rows, wall, func(r *sampleRow) float64 { return b2f(r.ok) })
	case result.SamplePrefill:
		return s.prefill(rows)
	case result.SampleGood:
		return share(rows, func(r *sampleRow) bool { return r.good })
	case result.SampleFailed:
		return share(rows, func(r *sampleRow) bool { return !r.ok && !r.cancelled })
	}
	return stats.Sample{}
}

// sorted is the non-NaN values of f, sorted (percentiles need no other sort).
func sorted(rows []sampleRow, f func(*sampleRow) float64) []float64 {
	var out []float64
	for i := range rows {
		if v := f(&rows[i]); !math.IsNaN(v) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

// rate is Σ f / wall (s) over every measured request of rows.
func (s *Samples) rate(rows []sampleRow, wall time.Duration, f func(*sampleRow) float64) stats.Sample {
	out := stats.Sample{Wall: wall.Seconds()}
	closed := s.spec.Rate == nil && s.spec.Concurrency > 0
	sum := 0.0
	for i := range rows {
		out.Values = append(out.Values, f(&rows[i]))
		if closed {
			out.Costs = append(out.Costs, rows[i].e2e/1000)
			sum += rows[i].e2e
		}
	}
	if closed && sum > 0 {
		out.Workers = s.spec.Concurrency
	} else {
		out.Costs = nil
	}
	return out
}

// prefill pairs each success's input tokens with its TTFT (s), as
// prefill_tps divides their means: the reported tokens, or the requested
// count when the server reports none.
func (s *Samples) prefill(rows []sampleRow) stats.Sample {
	var out stats.Sample
	for i := range rows {
		r := &rows[i]
		ttft := r.lat[latTTFT]
		if !r.ok || !(ttft > 0) || (s.reported && r.in <= 0) {
			continue
		}
		in := r.in
		if !s.reported {
			in = float64(s.spec.InputTokens)
		}
		out.Values = append(out.Values, in)
		out.Costs = append(out.Costs, ttft/1000)
	}
	return out
}

// share counts the measured requests of rows for which hit holds.
func share(rows []sampleRow, hit func(*sampleRow) bool) stats.Sample {
	out := stats.Sample{Trials: len(rows)}
	for i := range rows {
		if hit(&rows[i]) {
			out.Hits++
		}
	}
	return out
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
