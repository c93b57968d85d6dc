package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/runnerbench/runner/runner/shape"

	"github.com/rs/zerolog"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/runner"
	"github.com/runnerbench/runner/runner/host"
	"github.com/runnerbench/runner/scenario"
	"github.com/runnerbench/runner/sim"
)

// The send-precision experiment: open-loop levels against a simulator in its
// own process, each request waiting for its due time on Go's timer alone
// (as before precise waiting) and precisely (timer with an alarm, then a
// short spin: runner/clock/wait.go), at the same rates, back to back.

// lagRole is the environment role of the experiment's runner child.
const lagRole = "lag"

// lagJob is one open-loop level for the runner child.
type lagJob struct {
	URL      string
	Rate     float64
	Requests int
	Coarse   bool   // runner.Options.CoarseSends
	API      string // "" (chat, 16 output tokens) or embeddings
}

// lagOutcome is what the child reports: the level's point, every measured
// request's dispatch lag, and its own CPU over the whole stage.
type lagOutcome struct {
	Point result.Point
	Lags  []float64 // ms
	Err   string
}

// lagChild runs a lagJob (from argEnv) and prints its lagOutcome.
func lagChild() int {
	var j lagJob
	if err := json.Unmarshal([]byte(os.Getenv(argEnv)), &j); err != nil {
		fmt.Fprintln(os.Stderr, "lag child:", err)
		return 2
	}
	out, err := runLagJob(j)
	if err != nil {
		out.Err = err.Error()
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		return 1
	}
	return 0
}

func runLagJob(j lagJob) (lagOutcome, error) {
	var out lagOutcome
	stage := "output_tokens: 16"
	if j.API != "" {
		stage = "api: " + j.API
	}
	src := fmt.Sprintf(`version: 1
name: sendlag
endpoints:
  bench: {base_url: %q, model: sim}
prompts:
  p: {synthetic: {input_tokens: 64, sizing: reference}}
stages:
  - {name: sendlag, endpoint: bench, prompts: p, %s, rate: [%g], requests: %d, warmup: 1}
`, j.URL, stage, j.Rate, j.Requests)
	plan, err := scenario.LoadBytes("sendlag.yaml", []byte(src), ".", scenario.Options{})
	if err != nil {
		return out, err
	}
	if err := host.RaiseFileLimit(4096); err != nil {
		return out, err
	}
	e, err := runner.NewEngine(runner.Target{Name: "bench", Endpoint: plan.Endpoints["bench"], BaseURL: j.URL},
		runner.Options{Logger: zerolog.Nop(), CoarseSends: j.Coarse})
	if err != nil {
		return out, err
	}
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var mu sync.Mutex
	sink := benchSink{Stage: aggregate.NewStage(0), onReq: func(r *result.Request) {
		if !r.Warmup {
			mu.Lock()
			out.Lags = append(out.Lags, r.DispatchLagMs)
			mu.Unlock()
		}
	}}
	if err := e.RunStage(ctx, plan.LoadPlan(plan.Stages[0]), sink); err != nil {
		return out, err
	}
	res := sink.Result()
	if len(res.Points) != 1 {
		return out, errors.New("no level point")
	}
	out.Point = res.Points[0]
	out.Point.TTFTHist, out.Point.ITLHist = nil, nil
	return out, nil
}

// runLag runs one job in a runner child (pinned like the others with -pin).
func runLag(j lagJob) (lagOutcome, error) {
	var o lagOutcome
	if err := runChild(lagRole, j, &o); err != nil {
		return o, err
	}
	if o.Err != "" {
		return o, errors.New(o.Err)
	}
	return o, nil
}

// sendLag measures dispatch lag and client CPU at 200, 1,000 and 2,000
// requests/s, waiting on the timer alone and precisely.
func sendLag(md *strings.Builder, o options) error {
	secs := 5.0
	if o.quick {
		secs = 2
	}
	cfg := sim.FastConfig()
	cfg.ITLMs = 1
	cfg.MaxNumSeqs = 1024
	s, err := startSim(cfg, false)
	if err != nil {
		return err
	}
	defer s.kill()
	fmt.Fprintf(md, "\n### Open-loop send precision\n\n")
	fmt.Fprintf(md, "Poisson arrivals for %.0f s at each rate (64 input and 16 output tokens) against the simulator in its own process (5 ms prefill step, 1 ms decode steps). *timer*: the dispatcher waits for each due time on Go's timer alone, as before; *precise*: the request is handed to a sender 5 ms early, which waits on a Go timer (with a timerfd alarm so an idle runtime wakes on time) until a margin before its due time, then spins on the monotonic clock (`runner/clock/wait.go`; the margin is the wake-ups' p99 lateness plus 50 µs, at most a quarter of the mean gap between requests and 2 ms). Lag is each measured request's send time minus its due time; client CPU is the runner process's CPU over the level's window, as a share of one core (the cost of precise waiting is the difference between the two rows of a rate).\n\n", secs)
	fmt.Fprintf(md, "| rate (req/s) | waiting | requests | lag p50 µs | lag p90 µs | lag p99 µs | lag max µs | client CPU | achieved / scheduled rate | client_bottleneck |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, rate := range []float64{200, 1000, 2000} {
		for _, coarse := range []bool{true, false} {
			r, err := runLag(lagJob{URL: s.url, Rate: rate, Requests: int(rate * secs), Coarse: coarse})
			if err != nil {
				return fmt.Errorf("rate %g: %w", rate, err)
			}
			p := r.Point
			if p.Failed > 0 || len(r.Lags) == 0 {
				return fmt.Errorf("rate %g: %d failed, %d lags: %v", rate, p.Failed, len(r.Lags), p.ErrorsByKind)
			}
			mode := "precise"
			if coarse {
				mode = "timer"
			}
			// Against the seeded schedule's own rate: a Poisson sample is a
			// few percent off the nominal one.
			sched := shape.Schedule(1, rate, scenario.ArrivalPoisson, 0, int(rate*secs), 0)
			schedRate := float64(len(sched)-1) / sched[len(sched)-1].Seconds()
			achieved := "–"
			if p.AchievedRate != nil {
				achieved = fmt.Sprintf("%.3f", *p.AchievedRate/schedRate)
			}
			fmt.Fprintf(md, "| %.0f | %s | %d | %.0f | %.0f | %.0f | %.0f | %s%% | %s | %v |\n", rate, mode, len(r.Lags),
				1000*quantile(r.Lags, 0.50), 1000*quantile(r.Lags, 0.90), 1000*quantile(r.Lags, 0.99), 1000*quantile(r.Lags, 1),
				f2(p.ClientCPUPercent), achieved, p.ClientBottleneck)
		}
	}
	return nil
}

// embedLag measures whether a level of embeddings requests at 2,000
// requests/s keeps its schedule against the built-in simulator in its own
// process: each request one 64-token input, answered whole after its
// prefill (5 ms step), with precise waiting.
func embedLag(md *strings.Builder, o options) error {
	secs := 5.0
	if o.quick {
		secs = 2
	}
	cfg := sim.FastConfig()
	cfg.MaxNumSeqs = 1024
	s, err := startSim(cfg, false)
	if err != nil {
		return err
	}
	defer s.kill()
	fmt.Fprintf(md, "\n### Embeddings at 2,000 requests/s\n\n")
	fmt.Fprintf(md, "Poisson arrivals of `api: embeddings` requests (one 64-token input each, answered whole when its 5 ms prefill step ends) for %.0f s against the simulator in its own process, precise waiting. Lag is each measured request's send time minus its due time.\n\n", secs)
	fmt.Fprintf(md, "| rate (req/s) | requests | failed | lag p50 µs | lag p90 µs | lag p99 µs | lag max µs | sent > 1 ms late | E2E p50 ms | E2E p99 ms | client CPU | client sched p90 ms | achieved / scheduled rate | client_bottleneck (by) |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	const rate = 2000
	r, err := runLag(lagJob{URL: s.url, Rate: rate, Requests: int(rate * secs), API: "embeddings"})
	if err != nil {
		return err
	}
	p := r.Point
	if len(r.Lags) == 0 {
		return fmt.Errorf("no lags: %v", p.ErrorsByKind)
	}
	sched := shape.Schedule(1, rate, scenario.ArrivalPoisson, 0, int(rate*secs), 0)
	schedRate := float64(len(sched)-1) / sched[len(sched)-1].Seconds()
	achieved := "–"
	if p.AchievedRate != nil {
		achieved = fmt.Sprintf("%.3f", *p.AchievedRate/schedRate)
	}
	by := ""
	if len(p.ClientBottleneckBy) > 0 {
		by = " (" + strings.Join(p.ClientBottleneckBy, ", ") + ")"
	}
	late := 0
	for _, l := range r.Lags {
		if l > 1 {
			late++
		}
	}
	fmt.Fprintf(md, "| %d | %d | %d | %.0f | %.0f | %.0f | %.0f | %.1f%% | %s | %s | %s%% | %s | %s | %v%s |\n", rate, len(r.Lags), p.Failed,
		1000*quantile(r.Lags, 0.50), 1000*quantile(r.Lags, 0.90), 1000*quantile(r.Lags, 0.99), 1000*quantile(r.Lags, 1),
		100*float64(late)/float64(len(r.Lags)), f2(p.E2EP50Ms), f2(p.E2EP99Ms), f2(p.ClientCPUPercent), f2(p.ClientSchedP90Ms), achieved, p.ClientBottleneck, by)
	return nil
}
