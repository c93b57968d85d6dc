package aggregate

import (
	"math"
	"slices"
	"sort"
	"time"

	"github.com/runnerbench/runner/internal/stats"
	"github.com/runnerbench/runner/result"
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
type Samples struct {
	spec result.LevelSpec
	wall time.Duration
	rows []sampleRow
}

// sampleRow is what one measured request contributes.
type sampleRow struct {
	key    order
	ok     bool
	good   bool
	lat    [nLat]float64 // successes' latencies; NaN where none
	stream float64       // tokens / E2E s; NaN where none
	out    float64       // output tokens of a success (0 for a failure)
	in     float64       // reported input tokens
	e2e    float64       // ms, failures too: how long it held its worker
}

func newSamples(spec result.LevelSpec) *Samples { return &Samples{spec: spec} }

// add records one measured request (the caller holds the level's lock).
func (s *Samples) add(r *result.Request) {
	row := sampleRow{key: keyOf(r), ok: r.OK, stream: math.NaN()}
	for i := range row.lat {
		row.lat[i] = math.NaN()
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

// done closes the samples with the level's record: its measured wall time,
// and the rows in dispatch order.
func (s *Samples) done(rec *result.LevelRecord) *Samples {
	s.wall = rec.Wall()
	sort.Slice(s.rows, func(i, j int) bool { return s.rows[i].key.less(s.rows[j].key) })
	return s
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
func (s *Samples) Sample(src result.Sample) stats.Sample {
	if i, ok := sampleLat[src]; ok {
		return stats.Sample{Values: s.sorted(func(r *sampleRow) float64 { return r.lat[i] })}
	}
	switch src {
	case result.SampleStreamTPS:
		return stats.Sample{Values: s.sorted(func(r *sampleRow) float64 { return r.stream })}
	case result.SampleOutputTokens:
		return s.rate(func(r *sampleRow) float64 { return r.out })
	case result.SampleCompleted:
		return s.rate(func(r *sampleRow) float64 { return b2f(r.ok) })
	case result.SamplePrefill:
		return s.prefill()
	case result.SampleGood:
		return s.share(func(r *sampleRow) bool { return r.good })
	case result.SampleFailed:
		return s.share(func(r *sampleRow) bool { return !r.ok })
	}
	return stats.Sample{}
}

// sorted is the non-NaN values of f, sorted (percentiles need no other sort).
func (s *Samples) sorted(f func(*sampleRow) float64) []float64 {
	var out []float64
	for i := range s.rows {
		if v := f(&s.rows[i]); !math.IsNaN(v) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

// rate is Σ f / wall (s) over every measured request.
func (s *Samples) rate(f func(*sampleRow) float64) stats.Sample {
	out := stats.Sample{Wall: s.wall.Seconds()}
	closed := s.spec.Rate == nil && s.spec.Concurrency > 0
	sum := 0.0
	for i := range s.rows {
		out.Values = append(out.Values, f(&s.rows[i]))
		if closed {
			out.Costs = append(out.Costs, s.rows[i].e2e/1000)
			sum += s.rows[i].e2e
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
func (s *Samples) prefill() stats.Sample {
	reported := slices.ContainsFunc(s.rows, func(r sampleRow) bool { return r.ok && r.in > 0 })
	var out stats.Sample
	for i := range s.rows {
		r := &s.rows[i]
		ttft := r.lat[latTTFT]
		if !r.ok || !(ttft > 0) || (reported && r.in <= 0) {
			continue
		}
		in := r.in
		if !reported {
			in = float64(s.spec.InputTokens)
		}
		out.Values = append(out.Values, in)
		out.Costs = append(out.Costs, ttft/1000)
	}
	return out
}

// share counts the measured requests for which hit holds.
func (s *Samples) share(hit func(*sampleRow) bool) stats.Sample {
	out := stats.Sample{Trials: len(s.rows)}
	for i := range s.rows {
		if hit(&s.rows[i]) {
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
