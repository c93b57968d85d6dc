// Command untilstudy measures until:'s stopping rule on the built-in
// simulator: how often a level that runs "until its check is decided"
// decides wrongly, against the confidence's promise, and how many requests
// it uses against fixed-count plans that reach the same decisions at the
// same error.
//
// It runs the simulator once, over real loopback HTTP through the load
// engine, for runs × cap requests at one concurrency, and keeps every
// request's TTFT in the order the requests finished. Then, for thresholds
// at known distances from the true value (±2% to ±50%), each run is a
// check "ttft_<stat>_ms < T" (TTFT p95, p50, mean), on runs of three kinds:
//
//   - model: draws from the simulator's timing model (1 ms + 0.004 ms per
//     prompt token, alone in its batch, the prompt's length drawn as the
//     engine draws it): the truth exact, the draws independent;
//   - iid: independent draws, with replacement, from the measured TTFTs:
//     their distribution, the machine's stalls in its tail; the truth the
//     statistic of all of them (under 0.1% from the distribution's with
//     400,000);
//   - chunks: the measured requests in runs of cap, in the order they
//     finished: the closed loop's correlation and the machine's drift.
//
// Each run is judged three ways:
//
//   - sequential: the until: rule as a level runs it (stopping.StatMin
//     requests first, then a look each stopping.NextLook, the interval
//     stats.AnytimeInterval at the confidence), stopping at the first look
//     whose interval lies wholly on one side of T, or undecided at the cap;
//   - fixed: the first n requests and the fixed-sample interval at the same
//     confidence (a quantile's exact order-statistic interval, a mean's
//     Student t), for n on a grid: the smallest n that decides rightly in
//     as many runs as the sequential rule is the fixed-count plan that
//     reaches the same decisions at the same error;
//   - looked: the fixed interval looked at on the sequential rule's
//     schedule, stopping at its first decision: what repeated looks cost
//     without a method that accounts for them.
//
// The mean is measured although until: decides no mean: this study is why
// (on the measured requests its asymptotic sequence broke its promise).
//
// Usage (from the module root; docs/statistics.md has the figures):
//
//	go run ./bench/cmd/untilstudy -runs 200 -cap 2000 -data /tmp/ttft.json
//
// Collecting 400,000 requests took 33 minutes on two shared cores; -data
// keeps them with their concurrency, and a second run with the same -data
// only analyses (seconds). Loopback only.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/runnerbench/runner/internal/stats"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/runner"
	"github.com/runnerbench/runner/scenario"
	"github.com/runnerbench/runner/sim"
	"github.com/runnerbench/runner/stopping"
)

// The simulator: a TTFT of 1 ms + 0.004 ms per prompt token, prompts of
// 512 ± 128 tokens, so about 3 ms with a spread of 0.5 ms before the
// batching, the loopback and the client add theirs; two output tokens, so a
// request is short and the study cheap.
const planYAML = `version: 1
name: untilstudy
endpoints:
  sim:
    simulator: {ttft_ms: 1, prefill_ms_per_token: 0.004, itl_ms: 0.5, max_num_seqs: 64, seed: 7}
prompts:
  p: {synthetic: {input_tokens: {mean: 512, stdev: 128, min: 64, max: 1024}}}
stages:
  - name: collect
    endpoint: sim
    prompts: p
    output_tokens: 2
    concurrency: [%d]
    requests: %d
    seed: 11
`

func main() {
	runs := flag.Int("runs", 200, "runs per threshold")
	capN := flag.Int("cap", 2000, "the sequential rule's max_requests, and each run's requests")
	conc := flag.Int("concurrency", 4, "streams the simulator is loaded with while collecting")
	conf := flag.Float64("confidence", 0.95, "the intervals' two-sided confidence")
	data := flag.String("data", "", "keep the collected TTFTs in this JSON file (read back when it exists)")
	flag.Parse()
	if err := study(os.Stdout, *runs, *capN, *conc, *conf, *data); err != nil {
		fmt.Fprintln(os.Stderr, "untilstudy:", err)
		os.Exit(1)
	}
}

func study(w io.Writer, runs, capN, conc int, conf float64, data string) error {
	c, err := ttfts(runs*capN, conc, data)
	if err != nil {
		return err
	}
	pool := c.TTFTs
	if len(pool) < runs*capN {
		return fmt.Errorf("%d requests collected, want %d", len(pool), runs*capN)
	}
	fmt.Fprintf(w, "%d TTFTs from the simulator at concurrency %d; %d runs of at most %d requests; confidence %g\n\n", len(pool), c.Concurrency, runs, capN, conf)
	for _, st := range []stats.Statistic{stats.Percentile(0.95), stats.Percentile(0.5), stats.Mean()} {
		fmt.Fprintf(w, "### TTFT %s\n\n", st)
		spread := map[string]float64{}
		for _, mode := range []string{"model", "iid", "chunks"} {
			truth := statOf(st, pool)
			if mode == "model" {
				truth = modelTruth(st)
			}
			sets := samplesFor(mode, pool, runs, capN)
			spread[mode] = relSpread(st, sets)
			fmt.Fprintf(w, "%s True value %.3f ms.\n\n", modeTitle(mode), truth)
			table(w, st, truth, sets, capN, conf)
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "The runs' own TTFT %s spread by %.1f%% (standard deviation over runs of %d requests) drawn from the model, %.1f%% drawn from the measured requests, %.1f%% as consecutive requests.\n\n",
			st, 100*spread["model"], capN, 100*spread["iid"], 100*spread["chunks"])
	}
	return nil
}

func modeTitle(mode string) string {
	switch mode {
	case "model":
		return "Runs drawn from the simulator's timing model (1 ms + 0.004 ms per prompt token, alone in its batch; the truth exact):"
	case "iid":
		return "Runs drawn independently from the measured requests (their distribution, the machine's stalls in its tail):"
	}
	return "Runs of consecutive measured requests as they finished (the closed loop's correlation and the machine's drift):"
}

// The model: the plan's prompt lengths, and the simulator's cost of a
// prompt alone in its batch (its prefill step).
var (
	modelLength            = scenario.Length{Mean: 512, Stdev: 128, Min: 64, Max: 1024}
	modelTTFTMs, modelPerT = 1.0, 0.004
)

// modelTTFT is the model's TTFT (ms) of a prompt of l tokens.
func modelTTFT(l int) float64 { return modelTTFTMs + modelPerT*float64(l) }

// modelTruth is the statistic of the model's TTFT, exactly: from the
// probabilities of the lengths Length.Sample draws (a normal rounded to a
// whole token, clipped to its bounds).
func modelTruth(st stats.Statistic) float64 {
	l := modelLength
	phi := func(x float64) float64 { return 0.5 * math.Erfc(-(x-l.Mean)/(l.Stdev*math.Sqrt2)) }
	cdf, sum := 0.0, 0.0
	for k := l.Min; k <= l.Max; k++ {
		hi := phi(float64(k) + 0.5)
		if k == l.Max {
			hi = 1
		}
		pk := hi - cdf
		if k == l.Min {
			pk = hi
		}
		cdf += pk
		sum += pk * modelTTFT(k)
		if st.Kind == stats.KindPercentile && cdf >= st.P {
			return modelTTFT(k)
		}
	}
	return sum
}

// collected is what -data keeps: the requests' TTFTs (ms) in the order
// they finished, and the concurrency they were collected at.
type collected struct {
	Concurrency int       `json:"concurrency"`
	TTFTs       []float64 `json:"ttfts"`
}

// ttfts is n requests' TTFTs (ms) in the order they finished and the
// concurrency they were collected at: read from data when it holds
// enough, else collected from the simulator (and kept in data when named).
func ttfts(n, conc int, data string) (collected, error) {
	if data != "" {
		if b, err := os.ReadFile(data); err == nil {
			var c collected
			if err := json.Unmarshal(b, &c); err != nil {
				return c, fmt.Errorf("%s: %w", data, err)
			}
			if len(c.TTFTs) >= n {
				return c, nil
			}
		}
	}
	start := time.Now()
	xs, err := collect(n, conc)
	if err != nil {
		return collected{}, err
	}
	fmt.Fprintf(os.Stderr, "untilstudy: %d requests collected in %s\n", len(xs), time.Since(start).Round(time.Second))
	c := collected{Concurrency: conc, TTFTs: xs}
	if data != "" {
		b, _ := json.Marshal(c)
		if err := os.WriteFile(data, b, 0o644); err != nil {
			return c, err
		}
	}
	return c, nil
}

// sink keeps each measured success's TTFT as the requests finish.
type sink struct {
	mu sync.Mutex
	xs []float64
}

func (s *sink) StageStarted(*result.StageRecord)           {}
func (s *sink) LevelStarted(*result.LevelRecord)           {}
func (s *sink) LevelDone(*result.LevelRecord) result.Point { return result.Point{} }
func (s *sink) Request(r *result.Request) {
	if r.Warmup || !r.OK || r.TTFTMs == nil {
		return
	}
	s.mu.Lock()
	s.xs = append(s.xs, *r.TTFTMs)
	s.mu.Unlock()
}

// collect runs the plan's one level of n requests against the simulator.
func collect(n, conc int) ([]float64, error) {
	src := fmt.Sprintf(planYAML, conc, n)
	p, err := scenario.LoadBytes("untilstudy.yaml", []byte(src), os.TempDir(), scenario.Options{})
	if err != nil {
		return nil, err
	}
	st := p.Stages[0]
	ep := p.Endpoints[st.Endpoint]
	srv, err := sim.Start(context.Background(), *ep.Simulator)
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	e, err := runner.NewEngine(runner.Target{Name: st.Endpoint, Endpoint: ep, BaseURL: srv.URL()}, runner.Options{Logger: zerolog.Nop()})
	if err != nil {
		return nil, err
	}
	defer e.Close()
	ctx := context.Background()
	if err := e.WaitReady(ctx, 10*time.Second); err != nil {
		return nil, err
	}
	s := &sink{}
	if err := e.RunStage(ctx, p.LoadPlan(st), s); err != nil {
		return nil, err
	}
	if len(s.xs) < n {
		return nil, errors.New("some requests failed: the study needs every one")
	}
	return s.xs, nil
}

// samplesFor is the runs' requests: seeded draws from the model, seeded
// draws from the pool with replacement, or consecutive chunks of the pool.
func samplesFor(mode string, pool []float64, runs, capN int) [][]float64 {
	out := make([][]float64, runs)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range out {
		if mode == "chunks" {
			out[i] = pool[i*capN : (i+1)*capN]
			continue
		}
		out[i] = make([]float64, capN)
		for j := range out[i] {
			if mode == "model" {
				out[i][j] = modelTTFT(modelLength.Sample(r))
			} else {
				out[i][j] = pool[r.IntN(len(pool))]
			}
		}
	}
	return out
}

// statOf is the statistic of xs by the project's rules.
func statOf(st stats.Statistic, xs []float64) float64 {
	if st.Kind == stats.KindMean {
		sum := 0.0
		for _, x := range xs {
			sum += x
		}
		return sum / float64(len(xs))
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[stats.PercentileIndex(st.P, len(s))]
}

// relSpread is the standard deviation of the runs' own statistic, over
// its mean.
func relSpread(st stats.Statistic, sets [][]float64) float64 {
	vals := make([]float64, len(sets))
	for i, xs := range sets {
		vals[i] = statOf(st, xs)
	}
	m := mean(vals)
	ss := 0.0
	for _, v := range vals {
		ss += (v - m) * (v - m)
	}
	return math.Sqrt(ss/float64(len(vals)-1)) / m
}

// distances are the thresholds' distances from the true value.
var distances = []float64{-0.50, -0.20, -0.10, -0.05, -0.02, 0.02, 0.05, 0.10, 0.20, 0.50}

// fixedGrid are the fixed-count plans compared.
var fixedGrid = []int{20, 30, 50, 75, 100, 150, 200, 300, 400, 500, 750, 1000, 1500, 2000, 3000, 4000}

// outcome is a run's decision on "stat < T": +1 pass, −1 fail, 0 none.
type outcome struct {
	n        int // requests used
	decision int
}

// table prints one statistic's rows, a distance each.
func table(w io.Writer, st stats.Statistic, truth float64, sets [][]float64, capN int, conf float64) {
	fmt.Fprintln(w, "| threshold | sequential: wrong | right | undecided at the cap | requests used, mean (median, p90) | fixed count deciding as often | its wrong | point value at that count: wrong | fixed interval looked at as often: wrong |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |")
	ts := make([]float64, len(distances))
	for i, d := range distances {
		ts[i] = truth * (1 + d)
	}
	seq := make([][]outcome, len(distances)) // by distance, then run
	looked := make([][]outcome, len(distances))
	for _, xs := range sets {
		s, l := sequential(st, xs, ts, capN, conf)
		for i := range distances {
			seq[i], looked[i] = append(seq[i], s[i]), append(looked[i], l[i])
		}
	}
	for i, d := range distances {
		want := 1 // the check passes when the truth is below T
		if d < 0 {
			want = -1
		}
		right, wrong := count(seq[i], want)
		_, lookedWrong := count(looked[i], want)
		n, fixedWrong, pointWrong := matchFixed(st, sets, ts[i], want, right, conf)
		used := make([]float64, len(seq[i]))
		for j, o := range seq[i] {
			used[j] = float64(o.n)
		}
		slices.Sort(used)
		fixed := "more than the runs hold"
		switch {
		case n > 0:
			fixed = fmt.Sprint(n)
		case 2*right < len(sets):
			fixed = "– (decided in under half)"
		}
		fmt.Fprintf(w, "| %+.0f%% | %s | %s | %s | %.0f (%.0f, %.0f) | %s | %s | %s | %s |\n", 100*d,
			share(wrong, len(sets)), share(right, len(sets)), share(len(sets)-right-wrong, len(sets)),
			mean(used), used[len(used)/2], used[int(0.9*float64(len(used)-1))], fixed,
			shareOr(fixedWrong, len(sets), n), shareOr(pointWrong, len(sets), n), share(lookedWrong, len(sets)))
	}
}

func share(k, n int) string { return fmt.Sprintf("%.1f%%", 100*float64(k)/float64(n)) }

func shareOr(k, n, fixed int) string {
	if fixed == 0 {
		return "–"
	}
	return share(k, n)
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func count(os []outcome, want int) (right, wrong int) {
	for _, o := range os {
		switch o.decision {
		case want:
			right++
		case -want:
			wrong++
		}
	}
	return right, wrong
}

// decide reads an interval against T: pass when it lies below T, fail when
// it lies at or above it.
func decide(iv stats.Interval, T float64) int {
	switch {
	case iv.Hi < T:
		return 1
	case iv.Lo >= T:
		return -1
	}
	return 0
}

// sequential runs the until: rule over xs for each threshold of ts at
// once (the intervals do not depend on the threshold), and on the same
// schedule the fixed interval looked at as often: each threshold's outcome
// and the looked one's.
func sequential(st stats.Statistic, xs, ts []float64, capN int, conf float64) (seq, looked []outcome) {
	seq, looked = make([]outcome, len(ts)), make([]outcome, len(ts))
	for i := range ts {
		seq[i].n, looked[i].n = capN, capN
	}
	open := 2 * len(ts) // outcomes not yet decided
	var sorted, vals []float64
	next := stopping.StatMin(st)
	for n := 1; n <= capN && n <= len(xs) && open > 0; n++ {
		x := xs[n-1]
		i, _ := slices.BinarySearch(sorted, x)
		sorted = slices.Insert(sorted, i, x)
		vals = append(vals, x)
		if n < next {
			continue
		}
		next = stopping.NextLook(n)
		s := stats.Sample{Values: sorted}
		if st.Kind == stats.KindMean {
			s.Values = vals
		}
		iv, ok := stats.AnytimeInterval(st, s, conf)
		fixed := fixedInterval(st, sorted, conf)
		for k, T := range ts {
			if seq[k].decision == 0 && ok {
				if seq[k].decision = decide(iv, T); seq[k].decision != 0 {
					seq[k].n = n
					open--
				}
			}
			if looked[k].decision == 0 {
				if looked[k].decision = decide(fixed, T); looked[k].decision != 0 {
					looked[k].n = n
					open--
				}
			}
		}
	}
	return seq, looked
}

// matchFixed finds the smallest fixed count of the grid whose interval
// decides rightly in at least as many runs as right, and at that count the
// wrong decisions of its interval and of the point value alone (a plan
// without an interval); 0 when no count the runs hold does, or when the
// sequential rule decided rightly in fewer than half the runs (a count
// that lucky runs decide as rarely says nothing).
func matchFixed(st stats.Statistic, sets [][]float64, T float64, want, right int, conf float64) (n, wrong, pointWrong int) {
	if 2*right < len(sets) {
		return 0, 0, 0
	}
	for _, n := range fixedGrid {
		if n > len(sets[0]) {
			break
		}
		r, wr, pw := 0, 0, 0
		for _, xs := range sets {
			s := slices.Clone(xs[:n])
			sort.Float64s(s)
			switch decide(fixedInterval(st, s, conf), T) {
			case want:
				r++
			case -want:
				wr++
			}
			p := 1
			if statOf(st, xs[:n]) >= T {
				p = -1
			}
			if p == -want {
				pw++
			}
		}
		if r >= right {
			return n, wr, pw
		}
	}
	return 0, 0, 0
}

// fixedInterval is the fixed-sample interval of st from sorted at conf: a
// quantile's exact distribution-free order-statistic interval, a mean's
// Student t.
func fixedInterval(st stats.Statistic, sorted []float64, conf float64) stats.Interval {
	n := len(sorted)
	alpha := 1 - conf
	if st.Kind == stats.KindMean {
		if n < 2 {
			return stats.Interval{Lo: math.Inf(-1), Hi: math.Inf(1)}
		}
		m, ss := 0.0, 0.0
		for i, x := range sorted {
			d := x - m
			m += d / float64(i+1)
			ss += d * (x - m)
		}
		half := stats.StudentQuantile(1-alpha/2, float64(n-1)) * math.Sqrt(ss/float64(n-1)/float64(n))
		return stats.Interval{Lo: m - half, Hi: m + half}
	}
	// The k-th order statistic lies below the quantile with probability
	// P(Bin(n, p) ≥ k): the lower limit is the largest k with
	// P(Bin ≤ k−1) ≤ α/2, the upper the smallest u with P(Bin ≥ u) ≤ α/2.
	cdf := binomialCDF(n, st.P)
	out := stats.Interval{Lo: math.Inf(-1), Hi: math.Inf(1)}
	for k := n; k >= 1; k-- {
		if cdf[k-1] <= alpha/2 {
			out.Lo = sorted[k-1]
			break
		}
	}
	for u := 1; u <= n; u++ {
		if 1-cdf[u-1] <= alpha/2 {
			out.Hi = sorted[u-1]
			break
		}
	}
	return out
}

// binomialCDF is P(Bin(n, p) ≤ k) for k = 0..n.
func binomialCDF(n int, p float64) []float64 {
	key := [2]float64{float64(n), p}
	cdfMu.Lock()
	defer cdfMu.Unlock()
	if c, ok := cdfCache[key]; ok {
		return c
	}
	out := make([]float64, n+1)
	lg := func(x int) float64 { v, _ := math.Lgamma(float64(x + 1)); return v }
	acc := 0.0
	for k := 0; k <= n; k++ {
		acc += math.Exp(lg(n) - lg(k) - lg(n-k) + float64(k)*math.Log(p) + float64(n-k)*math.Log1p(-p))
		out[k] = min(1, acc)
	}
	cdfCache[key] = out
	return out
}

var (
	cdfMu    sync.Mutex
	cdfCache = map[[2]float64][]float64{}
)
