// Command runnerbench measures the runner against the simulator over
// loopback and writes the figures as Markdown: chunks per second of client
// CPU, memory per stream at 10,000 concurrent streams, heap over a run of a
// million requests, and timing accuracy by concurrency against the
// simulator's own record of when it wrote each token.
//
// Every experiment runs the simulator and the runner in two separate child
// processes of this one, so the runner's CPU time (getrusage) and peak RSS
// (VmHWM) are its own and the two do not share a Go scheduler. Traffic stays
// on 127.0.0.1 and every experiment is bounded in requests and time.
//
// Usage: go run ./bench/cmd/runnerbench [-quick] [-out docs/performance.md]
// (bench/run.sh adds the SSE micro-benchmarks and instruction counts).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/runner"
	"github.com/runnerbench/runner/runner/host"
	"github.com/runnerbench/runner/scenario"
	"github.com/runnerbench/runner/sim"
)

const (
	roleEnv = "RUNNERBENCH_ROLE" // "sim" or "runner" in the children
	argEnv  = "RUNNERBENCH_ARG"  // the child's JSON argument
)

func main() {
	switch os.Getenv(roleEnv) {
	case "sim":
		os.Exit(simChild())
	case "runner":
		os.Exit(runnerChild())
	case lagRole:
		os.Exit(lagChild())
	case probeRole:
		os.Exit(probeChild())
	case spinRole:
		os.Exit(spinChild())
	case miniRole:
		os.Exit(miniChild())
	case rawRole:
		os.Exit(rawChild())
	}
	os.Exit(orchestrate())
}

// ---- the simulator child ----

// simChild serves a simulator, prints its URL, serves until stdin closes,
// then prints its ground truth (when asked) as JSON.
func simChild() int {
	var a struct {
		Cfg   sim.Config
		Truth bool
	}
	if err := json.Unmarshal([]byte(os.Getenv(argEnv)), &a); err != nil {
		fmt.Fprintln(os.Stderr, "sim child:", err)
		return 2
	}
	if err := host.RaiseFileLimit(a.Cfg.MaxNumSeqs + 64); err != nil {
		fmt.Fprintln(os.Stderr, "sim child:", err)
		return 2
	}
	s, err := sim.Start(context.Background(), a.Cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sim child:", err)
		return 2
	}
	fmt.Println(s.URL())
	_, _ = io.Copy(io.Discard, os.Stdin)
	if a.Truth {
		if err := json.NewEncoder(os.Stdout).Encode(s.Truth()); err != nil {
			return 1
		}
	}
	_ = s.Close()
	return 0
}

// simProc is a running simulator child.
type simProc struct {
	url   string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

func startSim(cfg sim.Config, truth bool) (*simProc, error) {
	arg, _ := json.Marshal(struct {
		Cfg   sim.Config
		Truth bool
	}{cfg, truth})
	cmd := childCmd(0)
	cmd.Env = append(cmd.Env, roleEnv+"=sim", argEnv+"="+string(arg))
	return startChild(cmd)
}

// stop closes the child's stdin and returns its truth (nil unless asked for).
func (p *simProc) stop(truth bool) ([]sim.RequestTruth, error) {
	_ = p.stdin.Close()
	var ts []sim.RequestTruth
	var err error
	if truth {
		err = json.NewDecoder(p.out).Decode(&ts)
	}
	_, _ = io.Copy(io.Discard, p.out)
	_ = p.cmd.Wait()
	return ts, err
}

func (p *simProc) kill() {
	_ = p.stdin.Close()
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
}

// ---- the runner child ----

// job is what the runner child is asked to run.
type job struct {
	URL        string
	Model      string // the endpoint's model ("": sim)
	Conc       int
	Requests   int
	Output     int
	Input      int
	HeapEvery  int    // sample HeapInuse every this many finished requests (0 = never)
	KeepSample bool   // record per-request nonces and timings for the accuracy check
	Prof       string // write a CPU profile of the level here ("": none)
	UserTimes  bool   // time chunks by the runner's clock (runner.Options.UserTimes: the figures before kernel times)
}

// reqSample is one request's measured timing, for the accuracy check.
type reqSample struct {
	Nonce   string
	StartNs int64 // wall clock, Unix ns
	TTFTMs  float64
	E2EMs   float64
	Tokens  int
}

// outcome is what the runner child reports.
type outcome struct {
	Point      result.Point
	WallS      float64
	CPUS       float64 // user+system over the level, this process only
	SysS       float64 // the system part of CPUS
	MinFlt     int64   // page faults over the level (fresh memory touched)
	Mallocs    uint64  // heap allocations over the level
	VmHWMKiB   int64
	BaseRSSKiB int64       // RSS before the level
	Heap       []heapPoint // HeapInuse samples by finished requests
	Samples    []reqSample
	Err        string
}

type heapPoint struct {
	Requests int64
	HeapMiB  float64
}

// childMain runs a child's job: read from argEnv, its outcome written to
// stdout as JSON (exit code 2: a bad job; 1: the outcome not written).
func childMain[J, O any](name string, run func(J) O) int {
	var j J
	if err := json.Unmarshal([]byte(os.Getenv(argEnv)), &j); err != nil {
		fmt.Fprintln(os.Stderr, name+" child:", err)
		return 2
	}
	if err := json.NewEncoder(os.Stdout).Encode(run(j)); err != nil {
		return 1
	}
	return 0
}

func runnerChild() int { return childMain("runner", runJob) }

func runJob(j job) (out outcome) {
	if err := host.RaiseFileLimit(j.Conc); err != nil {
		out.Err = err.Error()
		return out
	}
	var done atomic.Int64
	heap := make(chan heapPoint, 64)
	samples := make(chan reqSample, 1024)
	var collected []reqSample
	collectDone := make(chan struct{})
	go func() {
		for s := range samples {
			collected = append(collected, s)
		}
		close(collectDone)
	}()
	onReq := func(r *result.Request) {
		if r.Warmup {
			return
		}
		n := done.Add(1)
		if j.HeapEvery > 0 && n%int64(j.HeapEvery) == 0 {
			// Collect first: the live heap is what must stay flat; garbage
			// not yet collected only says when the GC last ran.
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			select {
			case heap <- heapPoint{n, float64(ms.HeapInuse) / (1 << 20)}:
			default:
			}
		}
		if j.KeepSample && r.OK && r.TTFTMs != nil {
			samples <- reqSample{r.Nonce, r.Start.UnixNano(), *r.TTFTMs, r.E2EMs, r.OutputTokens}
		}
	}
	plan, err := benchPlan(j)
	if err != nil {
		out.Err = err.Error()
		return out
	}
	e, err := runner.NewEngine(runner.Target{Name: "bench", Endpoint: plan.Endpoints["bench"], BaseURL: j.URL},
		runner.Options{Logger: benchLogger(), UserTimes: j.UserTimes})
	if err != nil {
		out.Err = err.Error()
		return out
	}
	defer e.Close()
	st := plan.Stages[0]
	runtime.GC()
	debug.FreeOSMemory()
	out.BaseRSSKiB = procStatus("VmRSS")
	var ru0, ru1 syscall.Rusage
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	stopProf := profile(j.Prof)
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	sink := benchSink{Stage: aggregate.NewStage(0), onReq: onReq}
	err = e.RunStage(ctx, plan.LoadPlan(st), sink)
	res := sink.Result()
	out.WallS = time.Since(t0).Seconds()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	stopProf()
	runtime.ReadMemStats(&ms1)
	out.Mallocs = ms1.Mallocs - ms0.Mallocs
	out.CPUS = float64(ru1.Utime.Nano()+ru1.Stime.Nano()-ru0.Utime.Nano()-ru0.Stime.Nano()) / 1e9
	out.SysS, out.MinFlt = float64(ru1.Stime.Nano()-ru0.Stime.Nano())/1e9, ru1.Minflt-ru0.Minflt
	out.VmHWMKiB = procStatus("VmHWM")
	close(samples)
	<-collectDone
	out.Samples = collected
	close(heap)
	for h := range heap {
		out.Heap = append(out.Heap, h)
	}
	if err != nil {
		out.Err = err.Error()
		return out
	}
	if len(res.Points) > 0 {
		out.Point = res.Points[0]
		out.Point.TTFTHist, out.Point.ITLHist = nil, nil
	}
	return out
}

// benchPlan is the job's plan: one closed-loop level against the job's URL,
// with the loader's defaults applied, as the engine expects.
func benchPlan(j job) (*scenario.Plan, error) {
	model := j.Model
	if model == "" {
		model = "sim"
	}
	src := fmt.Sprintf(`version: 1
name: bench
endpoints:
  bench: {base_url: %q, model: %q}
prompts:
  p: {synthetic: {input_tokens: %d, sizing: reference}}
stages:
  - {name: bench, endpoint: bench, prompts: p, output_tokens: %d, concurrency: [%d], requests: %d, warmup: 1}
`, j.URL, model, j.Input, j.Output, j.Conc, j.Requests)
	return scenario.LoadBytes("bench.yaml", []byte(src), ".", scenario.Options{})
}

// benchSink computes the points as a run does, and shows every request to
// the benchmark's own probes first.
type benchSink struct {
	*aggregate.Stage
	onReq func(*result.Request)
}

func (s benchSink) Request(r *result.Request) {
	s.onReq(r)
	s.Stage.Request(r)
}

// procStatus reads a kB field of /proc/self/status.
func procStatus(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				v, _ := strconv.ParseInt(f[0], 10, 64)
				return v
			}
		}
	}
	return 0
}

// runRunner runs one job in a runner child.
func runRunner(j job) (outcome, error) {
	var o outcome
	if err := runChild("runner", j, &o); err != nil {
		return o, err
	}
	if o.Err != "" {
		return o, errors.New(o.Err)
	}
	return o, nil
}

// runChild runs this program again in role (on CPU 1 with -pin) with arg as
// its JSON argument, and decodes what it prints into out.
func runChild(role string, arg, out any) error {
	b, _ := json.Marshal(arg)
	cmd := childCmd(1)
	cmd.Env = append(cmd.Env, roleEnv+"="+role, argEnv+"="+string(b))
	cmd.Stderr = os.Stderr
	b, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("%s child: %w", role, err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s child output: %w", role, err)
	}
	return nil
}

// ---- the orchestrator ----

// pinCores runs the simulator child on CPU 0 and the runner child on CPU 1
// (taskset, one Go P each), so neither takes the other's core: on a two-core
// machine that is the closest to "the simulator on another machine".
var pinCores bool

// childCmd starts this program again as a child, pinned to cpu with -pin.
func childCmd(cpu int) *exec.Cmd {
	cmd := exec.Command(os.Args[0])
	cmd.Env = os.Environ()
	if pinCores {
		cmd = exec.Command("taskset", "-c", strconv.Itoa(cpu), os.Args[0])
		cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	}
	return cmd
}

type options struct {
	quick         bool
	out           string
	scaleStreams  int
	flatRequests  int
	accuracyConcs []int
	busy          int      // spinning processes beside the wire experiments' second run (0: quiet only)
	wireStreams   int      // streams of the wire-at-scale experiment
	reps          int      // turns each reader takes in the chunk-cost and wire-at-scale experiments
	prof          string   // directory for the wire-at-scale readers' CPU profiles ("": none)
	extras        []string // files of pre-made Markdown sections (SSE micro-benchmarks)
}

func orchestrate() int {
	var o options
	var concs, extras, only string
	flag.BoolVar(&o.quick, "quick", false, "smaller runs (1,000 streams, 200,000 requests) for a quick look")
	flag.StringVar(&o.out, "out", "", "write the Markdown report to this file as well as stdout")
	flag.IntVar(&o.scaleStreams, "streams", 10000, "concurrent streams of the memory experiment")
	flag.IntVar(&o.flatRequests, "requests", 1000000, "requests of the flat-memory experiment")
	flag.StringVar(&concs, "accuracy", "1,100,500,1000", "concurrencies of the accuracy experiment")
	flag.StringVar(&extras, "extra", "", "comma-separated Markdown files to append (SSE micro-benchmarks)")
	flag.StringVar(&only, "only", "", "run only these experiments (comma-separated: throughput, scale, flat, accuracy, sendlag, embedlag, coalesce, wirescale, wireacc, infsim, chunkcost)")
	flag.IntVar(&o.wireStreams, "wire-streams", 16384, "concurrent streams of the wire-at-scale experiment")
	flag.IntVar(&o.reps, "reps", 5, "turns each reader takes in the chunk-cost and wire-at-scale experiments (medians are shown)")
	flag.StringVar(&o.prof, "prof", "", "write the wire-at-scale readers' CPU profiles into this directory")
	flag.IntVar(&o.busy, "busy", 0, "run the wire experiments again with this many spinning processes beside them")
	flag.BoolVar(&pinCores, "pin", false, "pin the simulator to CPU 0 and the runner to CPU 1 (taskset, GOMAXPROCS=1 each)")
	flag.Parse()
	if o.quick {
		o.scaleStreams, o.flatRequests = min(o.scaleStreams, 1000), min(o.flatRequests, 200000)
	}
	for c := range strings.SplitSeq(concs, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(c))
		if err != nil || n <= 0 {
			fmt.Fprintln(os.Stderr, "runnerbench: -accuracy takes positive integers")
			return 2
		}
		o.accuracyConcs = append(o.accuracyConcs, n)
	}
	if extras != "" {
		o.extras = strings.Split(extras, ",")
	}
	if err := host.RaiseFileLimit(64); err != nil {
		fmt.Fprintln(os.Stderr, "runnerbench:", err)
		return 1
	}
	var md strings.Builder
	start := time.Now()
	header(&md)
	steps := []struct {
		name string
		fn   func(*strings.Builder, options) error
	}{
		{"throughput", throughput},
		{"scale", scale},
		{"flat", flatMemory},
		{"accuracy", accuracy},
		{"sendlag", sendLag},
		{"embedlag", embedLag},
		{"coalesce", coalesce},
		{"wirescale", wireScale},
		{"wireacc", wireAccuracy},
		{"infsim", wireInferenceSim},
		{"chunkcost", wireChunkCost},
	}
	failed := false
	for _, s := range steps {
		if only != "" && !slices.Contains(strings.Split(only, ","), s.name) {
			continue
		}
		fmt.Fprintf(os.Stderr, "runnerbench: %s...\n", s.name)
		t0 := time.Now()
		if err := s.fn(&md, o); err != nil {
			fmt.Fprintf(&md, "\n**%s failed:** %v\n", s.name, err)
			fmt.Fprintf(os.Stderr, "runnerbench: %s: %v\n", s.name, err)
			failed = true
		}
		fmt.Fprintf(os.Stderr, "runnerbench: %s took %s\n", s.name, time.Since(t0).Round(time.Second))
	}
	for _, f := range o.extras {
		b, err := os.ReadFile(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, "runnerbench:", err)
			failed = true
			continue
		}
		md.WriteString("\n")
		md.Write(b)
	}
	fmt.Fprintf(&md, "\n_The whole run took %s._\n", time.Since(start).Round(time.Second))
	fmt.Print(md.String())
	if o.out != "" {
		if err := os.WriteFile(o.out, []byte(md.String()), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "runnerbench:", err)
			return 1
		}
	}
	if failed {
		return 1
	}
	return 0
}

func header(md *strings.Builder) {
	cpu := "unknown"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	load := "?"
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		load = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	fmt.Fprintf(md, "## Measured figures\n\n")
	fmt.Fprintf(md, "| machine | |\n|---|---|\n")
	fmt.Fprintf(md, "| date | %s |\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(md, "| CPU | %s |\n| cores | %d |\n| Go | %s %s/%s |\n", cpu, runtime.NumCPU(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(md, "| load average at start (1, 5, 15 min) | %s |\n", load)
	pinned := "no: both processes share every core"
	if pinCores {
		pinned = "yes: simulator on CPU 0, runner on CPU 1, GOMAXPROCS=1 each"
	}
	fmt.Fprintf(md, "| processes pinned (-pin) | %s |\n", pinned)
}

// throughput: the runner's CPU cost per streamed chunk against a simulator
// that answers as fast as it can.
func throughput(md *strings.Builder, o options) error {
	s, err := startZeroLatencySim()
	if err != nil {
		return err
	}
	defer s.kill()
	fmt.Fprintf(md, "\n### Client CPU per chunk\n\nZero-latency simulator, 256 output tokens per request (one token per chunk), closed loop.\n\n")
	fmt.Fprintf(md, "| concurrency | requests | chunks | wall s | runner CPU s | chunks per CPU-second | CPU µs per chunk | chunks/s (wall) |\n|---|---|---|---|---|---|---|---|\n")
	for _, conc := range []int{1, 64, 256} {
		reqs := max(256, 2*conc)
		if o.quick {
			reqs /= 2
		}
		r, err := runRunner(job{URL: s.url, Conc: conc, Requests: reqs, Output: 256, Input: 64})
		if err != nil {
			return err
		}
		if r.Point.Failed > 0 {
			return fmt.Errorf("c=%d: %d requests failed: %v", conc, r.Point.Failed, r.Point.ErrorsByKind)
		}
		chunks := float64(r.Point.Completed * 256)
		fmt.Fprintf(md, "| %d | %d | %.0f | %.2f | %.2f | %.0f | %.2f | %.0f |\n",
			conc, r.Point.Completed, chunks, r.WallS, r.CPUS, chunks/r.CPUS, 1e6*r.CPUS/chunks, chunks/r.WallS)
	}
	return nil
}

// scale: N concurrent streams in one level; the runner's peak RSS.
func scale(md *strings.Builder, o options) error {
	n := o.scaleStreams
	cfg := sim.FastConfig()
	cfg.MaxNumSeqs = n + 16 // every stream decodes at once
	cfg.TTFTMs, cfg.ITLMs = 200, 500
	s, err := startSim(cfg, false)
	if err != nil {
		return err
	}
	defer s.kill()
	const out = 8
	r, err := runRunner(job{URL: s.url, Conc: n, Requests: n, Output: out, Input: 32})
	if err != nil {
		return err
	}
	hwm := float64(r.VmHWMKiB) / 1024
	per := float64(r.VmHWMKiB-r.BaseRSSKiB) * 1024 / float64(n)
	fmt.Fprintf(md, "\n### Memory at %d concurrent streams\n\n", n)
	fmt.Fprintf(md, "One level of concurrency %d, %d requests of %d output tokens, simulator in its own process (500 ms decode steps so every stream is open at once).\n\n", n, n, out)
	fmt.Fprintf(md, "| streams | completed | failed | runner peak RSS (VmHWM) | RSS before the level | memory per stream | wall s | runner CPU s | TTFT p50 ms |\n|---|---|---|---|---|---|---|---|---|\n")
	fmt.Fprintf(md, "| %d | %d | %d | %.0f MiB | %.0f MiB | %.1f KiB | %.1f | %.1f | %s |\n",
		n, r.Point.Completed, r.Point.Failed, hwm, float64(r.BaseRSSKiB)/1024, per/1024, r.WallS, r.CPUS, f2(r.Point.TTFTP50Ms))
	if r.Point.Failed > 0 {
		return fmt.Errorf("%d of %d streams failed: %v", r.Point.Failed, n, r.Point.ErrorsByKind)
	}
	if hwm >= 1024 {
		return fmt.Errorf("peak RSS %.0f MiB is over 1 GiB", hwm)
	}
	return nil
}

// flatMemory: heap in use over a long run must not grow with the request count.
func flatMemory(md *strings.Builder, o options) error {
	n := o.flatRequests
	s, err := startZeroLatencySim()
	if err != nil {
		return err
	}
	defer s.kill()
	every := max(n/10, 1)
	r, err := runRunner(job{URL: s.url, Conc: 64, Requests: n, Output: 2, Input: 16, HeapEvery: every})
	if err != nil {
		return err
	}
	fmt.Fprintf(md, "\n### Memory over %d requests\n\n", n)
	fmt.Fprintf(md, "One level, concurrency 64, %d requests of 2 output tokens against a zero-latency simulator; live heap (HeapInuse right after runtime.GC) sampled every %d finished requests.\n\n", n, every)
	fmt.Fprintf(md, "| finished requests | live heap in use |\n|---|---|\n")
	for _, h := range r.Heap {
		fmt.Fprintf(md, "| %d | %.1f MiB |\n", h.Requests, h.HeapMiB)
	}
	fmt.Fprintf(md, "\nCompleted %d, failed %d in %.1f s (%.0f requests/s); runner peak RSS %.0f MiB.\n",
		r.Point.Completed, r.Point.Failed, r.WallS, float64(r.Point.Completed)/r.WallS, float64(r.VmHWMKiB)/1024)
	if len(r.Heap) >= 2 {
		first, last := r.Heap[0], r.Heap[len(r.Heap)-1]
		fmt.Fprintf(md, "Heap at %d requests: %.1f MiB; at %d: %.1f MiB (%+.1f MiB).\n",
			first.Requests, first.HeapMiB, last.Requests, last.HeapMiB, last.HeapMiB-first.HeapMiB)
	}
	return nil
}

// accuracy: measured TPOT and ITL percentiles against the simulator's record
// of when it wrote each token (TokenWritten: after the write and flush
// returned), at 20 ms decode steps.
func accuracy(md *strings.Builder, o options) error {
	fmt.Fprintf(md, "\n### Accuracy under load\n\n")
	fmt.Fprintf(md, "Simulator with 50 ms prefill and 20 ms decode steps (no per-sequence slowdown), 64 output tokens, one wave of `concurrency` requests. Truth is the simulator's own per-token write times, dumped by its process at the end; the runner's figures are its level point. Error = measured / truth − 1.\n\n")
	fmt.Fprintf(md, "| concurrency | metric | runner ms | truth ms | error |\n|---|---|---|---|---|\n")
	for _, conc := range o.accuracyConcs {
		cfg := sim.FastConfig()
		cfg.MaxNumSeqs = conc + 16
		cfg.TTFTMs, cfg.ITLMs = 50, 20
		cfg.TruthLimit = conc + 64
		s, err := startSim(cfg, true)
		if err != nil {
			return err
		}
		const out = 64
		r, err := runRunner(job{URL: s.url, Conc: conc, Requests: conc, Output: out, Input: 64, KeepSample: true})
		truths, terr := s.stop(true)
		if err != nil {
			return err
		}
		if terr != nil {
			return fmt.Errorf("simulator truth: %w", terr)
		}
		byNonce := map[string]sim.RequestTruth{}
		for _, t := range truths {
			byNonce[t.Nonce] = t
		}
		var itl, tpot []float64
		for _, smp := range r.Samples {
			t, ok := byNonce[smp.Nonce]
			if !ok || len(t.TokenWritten) < 2 {
				continue
			}
			w := t.TokenWritten
			for i := 1; i < len(w); i++ {
				itl = append(itl, msf(w[i].Sub(w[i-1])))
			}
			// The runner's TPOT: (E2E − TTFT) / (tokens − 1), E2E ending at [DONE].
			tpot = append(tpot, msf(t.End.Sub(w[0]))/float64(len(w)-1))
		}
		if len(itl) == 0 {
			return fmt.Errorf("c=%d: no request matched the simulator's truth", conc)
		}
		var sched []float64
		for _, t := range truths {
			for i := 1; i < len(t.TokenScheduled); i++ {
				sched = append(sched, msf(t.TokenScheduled[i].Sub(t.TokenScheduled[i-1])))
			}
		}
		bunched := 0
		for _, g := range itl {
			if g < 1 {
				bunched++
			}
		}
		rows := []struct {
			name  string
			got   *float64
			truth float64
		}{
			{"TPOT p50", r.Point.TPOTP50Ms, quantile(tpot, 0.50)},
			{"TPOT p99", r.Point.TPOTP99Ms, quantile(tpot, 0.99)},
			{"ITL p50", r.Point.ITLP50Ms, quantile(itl, 0.50)},
			{"ITL p99", r.Point.ITLP99Ms, quantile(itl, 0.99)},
		}
		for _, row := range rows {
			if row.got == nil {
				return fmt.Errorf("c=%d: no %s", conc, row.name)
			}
			fmt.Fprintf(md, "| %d | %s | %.2f | %.2f | %+.2f%% |\n", conc, row.name, *row.got, row.truth, 100*(*row.got/row.truth-1))
		}
		fmt.Fprintf(md, "| %d | simulator: decode-step p50 / p99 as scheduled; share of write gaps < 1 ms (tokens it wrote together, behind schedule) | %.2f / %.2f; %.1f%% | | |\n",
			conc, quantile(sched, 0.5), quantile(sched, 0.99), 100*float64(bunched)/float64(len(itl)))
		fmt.Fprintf(md, "| %d | runner: client CPU / dispatch lag p99 / scheduling latency p90 / bottleneck flag | %s%% / %s ms / %s ms / %v | | |\n",
			conc, f2(r.Point.ClientCPUPercent), f2(r.Point.DispatchLagP99Ms), f2(r.Point.ClientSchedP90Ms), r.Point.ClientBottleneck)
	}
	return nil
}

// quantile is the linear-interpolation quantile (numpy's default, as the
// reference and the aggregate package compute percentiles).
func quantile(v []float64, q float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	pos := q * float64(len(s)-1)
	lo := int(pos)
	if lo+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[lo] + (pos-float64(lo))*(s[lo+1]-s[lo])
}

func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func f2(p *float64) string {
	if p == nil {
		return "–"
	}
	return strconv.FormatFloat(*p, 'f', 2, 64)
}

// startZeroLatencySim starts a simulator child that answers as fast as it
// can, for the experiments that load the runner rather than time it.
func startZeroLatencySim() (*simProc, error) {
	cfg := sim.FastConfig()
	cfg.ZeroLatency = true
	cfg.MaxNumSeqs = 1024
	return startSim(cfg, false)
}

// benchLogger is the runner child's logger: silent unless RUNNERBENCH_DEBUG
// is set, then debug lines on stderr with times.
func benchLogger() zerolog.Logger {
	if os.Getenv("RUNNERBENCH_DEBUG") == "" {
		return zerolog.Nop()
	}
	return zerolog.New(os.Stderr).Level(zerolog.DebugLevel).With().Timestamp().Logger()
}
