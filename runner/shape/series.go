package shape

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/runner/clock"
)

// seriesSweep is a series stage's one level (series:): a rate (the open
// loop, its arrivals following the series: arrival_series.go) or a
// concurrency (closedSeries) that changes over the level's window, as long
// as the series. Its slices show the load asked for beside the latencies,
// so a ramp to saturation reads as a sweep without restarts.
type seriesSweep struct {
	st   Stage
	done bool
}

// MaxConns is the series' peak: its most streams, or about a second's
// arrivals at its peak rate.
func (s *seriesSweep) MaxConns() int {
	sr := s.st.Plan.Series
	if sr.Over == result.LoadRate {
		return rateConns(sr.Peak(), s.st.Plan.MaxConcurrency)
	}
	return peakStreams(sr)
}

// Next returns the series' level once.
func (s *seriesSweep) Next(*result.Point) (Level, bool) {
	if s.done {
		return Level{}, false
	}
	s.done = true
	st := s.st.Plan
	sr := st.Series
	d := sr.Duration()
	if sr.Over == result.LoadRate {
		mean := sr.Integral(d) / d.Seconds()
		spec := s.st.Spec(sr.Label(), st.MaxConcurrency, &mean)
		spec.Series = sr
		return Level{Spec: spec, Concurrency: st.MaxConcurrency, Duration: d,
			Load: OpenSeries(sr, mean, st.Arrival, st.Burstiness, st.Seed, st.MaxConcurrency)}, true
	}
	peak := peakStreams(sr)
	spec := s.st.Spec(sr.Label(), peak, nil)
	spec.Series = sr
	return Level{Spec: spec, Concurrency: peak, Duration: d, Load: closedSeries{sr: sr, peak: peak}}, true
}

// peakStreams is a concurrency series' most streams.
func peakStreams(sr *result.Series) int { return int(math.Round(sr.Peak())) }

// closedSeries is a closed loop whose streams follow a series: stream j
// (from 0) sends while the series asks for more than j streams (its value,
// rounded, above j), one request after another as the closed loop does;
// when the series falls below it the stream stops after its request in
// flight (a closed loop cuts nothing), and waits for the series to want it
// again. A shard runs the streams j ≡ i (mod N), so the shards' streams
// together follow the series.
type closedSeries struct {
	sr   *result.Series
	peak int
	part result.Shard // Count ≤ 1: the whole level
}

func (c closedSeries) Conns() int { return ShareOf(c.peak, c.part.Index, max(1, c.part.Count)) }

// Split gives shard i of N the streams i, i+N, i+2N, ... of the series.
func (c closedSeries) Split(sh result.Shard, _ time.Duration) (Share, error) {
	c.part = sh
	n := ShareOf(c.peak, sh.Index, sh.Count)
	return Share{Load: c, Concurrency: n, Empty: n == 0}, nil
}

// stream is the global number of the shard's k-th stream.
func (c closedSeries) stream(k int) int {
	if c.part.Count <= 1 {
		return k
	}
	return k*c.part.Count + c.part.Index
}

func (c closedSeries) Dispatch(ctx context.Context, r Run) {
	var wg, ready sync.WaitGroup
	open := make(chan struct{})
	n := c.Conns()
	ready.Add(n)
	for k := range n {
		wg.Go(func() {
			w := r.NewWorker()
			ready.Done()
			<-open
			c.work(ctx, r, w, float64(c.stream(k))+0.5)
		})
	}
	ready.Wait()
	r.Begin()
	close(open)
	wg.Wait()
}

// work is a stream's loop: it sends while the series asks for at least
// `at` streams (its number + ½: the series' value rounded above it), and
// waits for the series to come back up to it otherwise; the level's end
// (its duration, the series' length) ends it.
func (c closedSeries) work(ctx context.Context, r Run, w Worker, at float64) {
	for ctx.Err() == nil {
		now := time.Now()
		t := now.Sub(r.Start())
		if c.sr.At(t) < at {
			next, ok := c.sr.First(at, t)
			if !ok || next >= c.sr.Duration() || !clock.SleepUntil(ctx, r.Start().Add(next)) {
				return // the series never wants this stream again
			}
			continue
		}
		seq, ok := r.Claim()
		if !ok {
			return
		}
		Exec(ctx, r, w, seq, now)
	}
}
