package stats

import "math"

// makespanReplicator bootstraps a closed loop's rate Σv/Wall with the wall
// moving with the requests: a resample's requests are dealt in their drawn
// order to Workers workers, each taking the next request when it is free
// (list scheduling, which is what a closed loop does), and the resample's
// wall is Wall·w/w̄, w its makespan and w̄ the mean makespan over the
// resamples. The measured Wall keeps the location (ramp and dispatch
// overheads included); the resamples give the spread. One worker makes w the
// sum of the costs (Little's law); a single wave makes it their maximum.
//
// Past limit requests, m = limit are drawn on max(1, round(Workers·m/n))
// workers, which keeps the number of waves, and deviations are scaled by
// resampleScale as for a mean: right when the makespan is a sum over many
// waves, too narrow for a few waves of more than limit requests, whose
// makespan is a maximum (docs/statistics.md, Limits). Workers 0 counts as 1.
func makespanReplicator(s Sample, limit int) replicator {
	vals, costs := s.Values, s.Costs
	n := len(vals)
	m := min(n, limit)
	workers := max(1, int(math.Round(float64(max(1, s.Workers))*float64(m)/float64(n))))
	point := sum(vals) / s.Wall
	shrink := resampleScale(m, n)
	return replicator{
		point: point,
		draw: func(r *rng, out []float64) {
			sv := make([]float64, len(out))
			free := make([]float64, min(workers, m))
			wbar := 0.0
			for i := range out {
				sv[i], out[i] = resampleMakespan(r.pcg.Uint64(), vals, costs, m, free)
				wbar += out[i] / float64(len(out))
			}
			for i, w := range out {
				if w == 0 { // a resample of only cost-free requests says nothing
					out[i] = point
					continue
				}
				rep := sv[i] * float64(n) / float64(m) / (s.Wall * w / wbar)
				out[i] = point + (rep-point)*shrink
			}
		},
	}
}

// resampleMakespan draws m requests with replacement, sums their values and
// returns the makespan of their costs on len(free) workers. free is the
// workers' next free time, kept as a min-heap.
func resampleMakespan(seed uint64, vals, costs []float64, m int, free []float64) (sv, makespan float64) {
	st, n := seed, uint64(len(vals))
	if len(free) == 1 {
		var sc float64
		for range m {
			j := wyIndex(&st, n)
			sv += vals[j]
			sc += costs[j]
		}
		return sv, sc
	}
	clear(free)
	for range m {
		j := wyIndex(&st, n)
		sv += vals[j]
		deal(free, costs[j])
	}
	return sv, maxOf(free)
}

// deal gives a request of the given cost to the worker free first: free is
// the workers' next free times as a min-heap; the root grows and sinks.
func deal(free []float64, cost float64) {
	free[0] += cost
	siftDown(free)
}

// siftDown restores the min-heap property after the root grew.
func siftDown(h []float64) {
	i, n := 0, len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		if r := l + 1; r < n && h[r] < h[l] {
			l = r
		}
		if h[i] <= h[l] {
			return
		}
		h[i], h[l] = h[l], h[i]
		i = l
	}
}

func maxOf(v []float64) float64 {
	x := v[0]
	for _, y := range v[1:] {
		x = max(x, y)
	}
	return x
}
