// Command shardbench measures sharded runs on one machine: for 1, 2 and 4
// shard processes of one plan against one simulator process (scheduled
// with --start-at, merged with runner merge), the total load reached and
// the merged percentiles, beside a single process at the same total load.
//
// The simulator's time model is flat (no per-sequence decode slowdown, a
// batch limit far above the load), so it is not the bottleneck: what
// changes between rows is only how many client processes share the load.
// Everything runs as child processes of the runner binary built from this
// checkout, on 127.0.0.1, bounded in time.
//
// Usage: go run ./bench/cmd/shardbench [-duration 5s] [-conc 64] [-rate 100]
// (bench/shards.sh runs it and prints the Markdown table).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/runnerbench/runner/pipeline"
	"github.com/runnerbench/runner/result"
)

type config struct {
	runner   string
	dir      string
	duration time.Duration
	conc     int
	rate     float64
	output   int
	itlMs    float64
	shards   []int
	repeat   int
}

func main() {
	c := config{}
	flag.DurationVar(&c.duration, "duration", 5*time.Second, "each level's duration")
	flag.IntVar(&c.conc, "conc", 64, "closed-loop streams in total")
	flag.Float64Var(&c.rate, "rate", 100, "open-loop arrivals per second in total")
	flag.IntVar(&c.output, "output", 64, "output tokens per request")
	flag.Float64Var(&c.itlMs, "itl-ms", 10, "the simulator's decode step, ms")
	shards := flag.String("shards", "1,2,4", "shard counts to run")
	flag.IntVar(&c.repeat, "repeat", 3, "rounds of every setup (interleaved); the table shows each figure's median")
	flag.Parse()
	for _, s := range strings.Split(*shards, ",") {
		var n int
		if _, err := fmt.Sscan(s, &n); err != nil || n < 1 {
			fatal(fmt.Errorf("-shards %q", *shards))
		}
		c.shards = append(c.shards, n)
	}
	if err := run(&c); err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "shardbench:", err)
	os.Exit(1)
}

// run builds the runner, starts the simulator, and measures each setup.
func run(c *config) error {
	dir, err := os.MkdirTemp("", "shardbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	c.dir, c.runner = dir, filepath.Join(dir, "runner")
	build := exec.Command("go", "build", "-o", c.runner, "./cmd/runner")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("go build ./cmd/runner (run from the repository root): %w", err)
	}
	url, stop, err := c.startSim()
	if err != nil {
		return err
	}
	defer stop()
	plan := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(plan, []byte(c.plan(url)), 0o644); err != nil {
		return err
	}
	var rounds [][]row
	for r := range c.repeat {
		var rows []row
		single, err := c.single(plan, r)
		if err != nil {
			return err
		}
		rows = append(rows, rowsOf("1 process", single)...)
		for _, n := range c.shards {
			rep, err := c.sharded(plan, n, r)
			if err != nil {
				return err
			}
			rows = append(rows, rowsOf(fmt.Sprintf("%d shard%s, merged", n, plural(n)), rep)...)
		}
		rounds = append(rounds, rows)
	}
	c.print(rounds)
	return nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// startSim starts `runner sim` with a flat time model on a free port.
func (c *config) startSim() (string, func(), error) {
	cmd := exec.Command(c.runner, "sim", "--listen", "127.0.0.1:0", "--ttft-ms", "1", "--prefill-ms-per-token", "0.001",
		"--itl-ms", fmt.Sprint(c.itlMs), "--itl-ms-per-seq", "0", "--max-num-seqs", "100000")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	line, err := bufio.NewReader(out).ReadString('\n')
	m := regexp.MustCompile(`at (http://127\.0\.0\.1:\d+/v1)`).FindStringSubmatch(line)
	if err != nil || m == nil {
		stop()
		return "", nil, fmt.Errorf("runner sim: %q, %v", line, err)
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	return m[1], stop, nil
}

// plan is a closed-loop and an open-loop stage of one level each.
func (c *config) plan(url string) string {
	return fmt.Sprintf(`version: 1
name: shardbench
endpoints:
  sim: {base_url: %q}
prompts:
  syn: {synthetic: {input_tokens: 128}}
stages:
  - {name: closed, endpoint: sim, prompts: syn, output_tokens: %d, concurrency: [%d], duration: %s}
  - {name: open, endpoint: sim, prompts: syn, output_tokens: %d, rate: [%g], duration: %s}
`, url, c.output, c.conc, c.duration, c.output, c.rate, c.duration)
}

// single runs the plan in one process, as anyone would.
func (c *config) single(plan string, round int) (*result.Report, error) {
	out := filepath.Join(c.dir, fmt.Sprint("single-", round))
	if err := c.runnerCmd(plan, "--out", out).Run(); err != nil {
		return nil, fmt.Errorf("single run: %w", err)
	}
	return readReport(out)
}

// sharded runs n shard processes at a shared start instant and merges them.
func (c *config) sharded(plan string, n, round int) (*result.Report, error) {
	at := time.Now().Add(2 * time.Second).UTC().Format(time.RFC3339Nano)
	var dirs []string
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		dir := filepath.Join(c.dir, fmt.Sprintf("r%d-n%d-shard%d", round, n, i))
		dirs = append(dirs, dir)
		cmd := c.runnerCmd(plan, "--out", dir, "--shard", fmt.Sprintf("%d/%d", i, n), "--start-at", at, "--slot-warmup", "1s", "--slot-drain", "2s")
		wg.Go(func() { errs[i] = cmd.Run() })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("shard %d/%d: %w", i, n, err)
		}
	}
	out := filepath.Join(c.dir, fmt.Sprintf("r%d-n%d-merged", round, n))
	merge := exec.Command(c.runner, append(append([]string{"merge"}, dirs...), "--out", out, "--quiet", "--report", "json")...)
	merge.Stderr = os.Stderr
	if err := merge.Run(); err != nil {
		return nil, fmt.Errorf("merge of %d shards: %w", n, err)
	}
	return readReport(out)
}

func (c *config) runnerCmd(plan string, args ...string) *exec.Cmd {
	cmd := exec.Command(c.runner, append([]string{plan, "--quiet", "--report", "json", "--log-level", "warn"}, args...)...)
	cmd.Stderr = os.Stderr
	return cmd
}

// readReport is the report of the run in dir (pipeline.Open).
func readReport(dir string) (*result.Report, error) {
	op, err := pipeline.Open(dir, pipeline.OpenOptions{})
	if err != nil {
		return nil, err
	}
	return op.Report, nil
}

// row is one setup's level.
type row struct {
	setup string
	p     result.Point
}

func rowsOf(setup string, rep *result.Report) []row {
	var out []row
	for _, st := range rep.Stages {
		for _, p := range st.Points {
			out = append(out, row{setup: setup, p: p})
		}
	}
	return out
}

// print writes the Markdown table: the load each setup reached and its
// merged percentiles, each figure the median of the rounds.
func (c *config) print(rounds [][]row) {
	fmt.Printf("Simulator: decode step %g ms flat (no per-sequence slowdown, batch limit 100,000), prefill 1 ms + 0.001 ms/token; %d output tokens, 128 input; each level %s; medians of %d interleaved rounds.\n\n",
		c.itlMs, c.output, c.duration, len(rounds))
	fmt.Println("| load | setup | requests | req/s reached (sent) | output tok/s | TTFT p50 / p95 / p99 (ms) | ITL p50 / p99 (ms) | E2E p95 (ms) | client CPU % (busiest) | client sched p90 (ms, worst) | client-bound (rounds) |")
	fmt.Println("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
	for i, r := range rounds[0] {
		m := func(get func(p *result.Point) *float64) string { return median(rounds, i, get, 2) }
		whole := func(get func(p *result.Point) *float64) string { return median(rounds, i, get, 0) }
		val := func(f func(p *result.Point) float64) func(p *result.Point) *float64 {
			return func(p *result.Point) *float64 { v := f(p); return &v }
		}
		bound := 0
		for _, round := range rounds {
			if round[i].p.ClientBottleneck {
				bound++
			}
		}
		reached := median(rounds, i, val(func(p *result.Point) float64 { return p.RequestTPS }), 1)
		if r.p.AchievedRate != nil {
			reached += " (" + median(rounds, i, func(p *result.Point) *float64 { return p.AchievedRate }, 1) + ")"
		}
		fmt.Printf("| %s | %s | %s | %s | %s | %s / %s / %s | %s / %s | %s | %s | %s | %d of %d |\n",
			r.p.Label(), r.setup, whole(val(func(p *result.Point) float64 { return float64(p.NRequests) })), reached,
			whole(val(func(p *result.Point) float64 { return p.OutputTPSTotal })),
			m(func(p *result.Point) *float64 { return p.TTFTP50Ms }), m(func(p *result.Point) *float64 { return p.TTFTP95Ms }),
			m(func(p *result.Point) *float64 { return p.TTFTP99Ms }), m(func(p *result.Point) *float64 { return p.ITLP50Ms }),
			m(func(p *result.Point) *float64 { return p.ITLP99Ms }), m(func(p *result.Point) *float64 { return p.E2EP95Ms }),
			m(func(p *result.Point) *float64 { return p.ClientCPUPercent }), m(func(p *result.Point) *float64 { return p.ClientSchedP90Ms }),
			bound, len(rounds))
	}
}

// median is the median over the rounds of row i's figure, with prec
// decimals ("–" when no round has it).
func median(rounds [][]row, i int, get func(p *result.Point) *float64, prec int) string {
	var vals []float64
	for _, round := range rounds {
		if x := get(&round[i].p); x != nil {
			vals = append(vals, *x)
		}
	}
	if len(vals) == 0 {
		return "–"
	}
	slices.Sort(vals)
	return fmt.Sprintf("%.*f", prec, vals[len(vals)/2])
}
