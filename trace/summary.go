package trace

import (
	"slices"
	"strconv"
	"time"

	"github.com/runnerbench/runner/internal/hist"
	"github.com/runnerbench/runner/result"
)

// ImpliedHitRate is the share of the requests' prompt tokens that an
// unbounded prefix cache would serve, going by their hash ids in arrival
// order: a request's leading blocks that an earlier request already had hit,
// up to its first new block (a prefix cache keys each block on everything
// before it, so nothing after a miss can hit); every block of the request is
// then cached. A block is blockTokens tokens, the last block of a prompt the
// rest of it. ok is false when no request has hash ids: the trace then says
// nothing about sharing.
func ImpliedHitRate(reqs []Request, blockTokens int) (rate float64, ok bool) {
	if !HasBlocks(reqs) || blockTokens <= 0 {
		return 0, false
	}
	seen := map[int64]struct{}{}
	var hit, total int64
	for _, r := range reqs {
		total += int64(r.Input)
		k := 0
		for k < len(r.Blocks) {
			if _, ok := seen[r.Blocks[k]]; !ok {
				break
			}
			k++
		}
		hit += int64(min(k*blockTokens, r.Input))
		for _, b := range r.Blocks[k:] {
			seen[b] = struct{}{}
		}
	}
	if total == 0 {
		return 0, false
	}
	return float64(hit) / float64(total), true
}

// Summarize describes the requests a replay sends (a window of a trace, as
// Window returns it), on the replay's clock (speedup applied): their count,
// span, mean and peak rates, length distributions and implied prefix-cache
// hit rate. The caller fills in what names the trace (file, format, window,
// the whole trace's size).
func Summarize(reqs []Request, blockTokens int, speedup float64) result.TraceSummary {
	offs := Offsets(reqs, speedup)
	s := result.TraceSummary{Speedup: speedup, Requests: len(reqs), PeakRate1s: peakPerSecond(offs)}
	if HasBlocks(reqs) {
		s.BlockTokens = blockTokens
	}
	if n := len(offs); n >= 2 {
		span := offs[n-1] - offs[0]
		s.SpanS = result.Round(span.Seconds(), 3)
		if span > 0 {
			s.MeanRate = significant(float64(n-1)/span.Seconds(), 4)
		}
	}
	in := make([]int, len(reqs))
	out := make([]int, len(reqs))
	for i, r := range reqs {
		in[i], out[i] = r.Input, r.Output
	}
	s.InputTokens, s.OutputTokens = lengthStats(in), lengthStats(out)
	if rate, ok := ImpliedHitRate(reqs, blockTokens); ok {
		s.ImpliedPrefixHitRate = result.Ptr(result.Round(rate, 4))
	}
	return s
}

// significant rounds x to digits significant digits: a rate is a level's
// label, so it should read as one whichever its scale (33.61, 0.002417).
func significant(x float64, digits int) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', digits, 64), 64)
	return v
}

// peakPerSecond is the most offsets (sorted) within any one second.
func peakPerSecond(offs []time.Duration) int {
	best, lo := 0, 0
	for hi := range offs {
		for offs[hi]-offs[lo] >= time.Second {
			lo++
		}
		best = max(best, hi-lo+1)
	}
	return best
}

// lengthStats is the distribution of vs: percentiles by the reference's rule
// (hist.Index), the exact mean rounded to 2 dp.
func lengthStats(vs []int) result.LengthStats {
	if len(vs) == 0 {
		return result.LengthStats{}
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	at := func(p float64) int { return s[hist.Index(p, len(s))] }
	// The sum is an exact integer (below 2^53), so the mean is rounded once,
	// as the report's other means are.
	var sum int64
	for _, v := range s {
		sum += int64(v)
	}
	mean := float64(sum) / float64(len(s))
	return result.LengthStats{Min: s[0], P50: at(0.50), P90: at(0.90), P99: at(0.99), Max: s[len(s)-1], Mean: result.Round(mean, 2)}
}
