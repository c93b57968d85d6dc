package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/runnerbench/runner/runner/host"
)

// The wire at scale: one level of N concurrent streams (16,384 by default)
// against a minimal streaming server, read by the runner and, in the same
// conditions, by a raw Go reader (net/http, a bufio line reader, one clock
// read per token line and nothing else): what the runner's measurement costs
// beyond reading the bytes.

// The roles of the experiment's children.
const (
	miniRole = "mini" // the minimal streaming server
	rawRole  = "raw"  // the raw Go reader
)

// miniTokens and miniStep are the wire-at-scale level's answer: 16 tokens,
// one every 200 ms (the first 200 ms after the request). The minimal server
// sends as many tokens as a request's max_tokens, one every step its
// argument names.
const (
	miniTokens = 16
	miniStep   = 200 * time.Millisecond
)

// miniToken is the minimal server's token chunk.
var miniToken = []byte(`data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":" tok"},"finish_reason":null}]}` + "\n\n")

// miniArg is the minimal server's argument: the step between tokens, and
// how many streams it serves at once.
type miniArg struct {
	Step    time.Duration
	Streams int
}

// miniChild serves the minimal server until its stdin closes.
func miniChild() int {
	var a miniArg
	if err := json.Unmarshal([]byte(os.Getenv(argEnv)), &a); err != nil {
		fmt.Fprintln(os.Stderr, "mini child:", err)
		return 2
	}
	// One connection per stream, and a few files besides.
	if err := host.RaiseFileLimit(a.Streams); err != nil {
		fmt.Fprintln(os.Stderr, "mini child:", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "mini child:", err)
		return 2
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { miniStream(w, r, a.Step) })
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"sim","object":"model"}]}`)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: time.Minute}
	go func() { _ = srv.Serve(ln) }()
	fmt.Println("http://" + ln.Addr().String() + "/v1")
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// miniStream answers one chat request with max_tokens token chunks (16 when
// it names none), one per step, then the finish, usage and [DONE].
func miniStream(w http.ResponseWriter, r *http.Request, step time.Duration) {
	var req struct {
		MaxTokens int `json:"max_tokens"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	n := req.MaxTokens
	if n <= 0 {
		n = miniTokens
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	f := w.(http.Flusher)
	f.Flush()
	t0 := time.Now()
	for i := range n {
		time.Sleep(time.Until(t0.Add(time.Duration(i+1) * step)))
		if _, err := w.Write(miniToken); err != nil {
			return
		}
		f.Flush()
	}
	_, _ = fmt.Fprintf(w, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\ndata: [DONE]\n\n", n, n+8)
}

// rawJob is what the raw reader child runs: Conc streams at once, each one
// request.
type rawJob struct {
	URL    string
	Conc   int
	Tokens int    // max_tokens of each request
	Prof   string // CPU profile file ("": none)
}

// scaleOutcome is what either reader reports of the level.
type scaleOutcome struct {
	Completed, Failed int
	Tokens            int
	TokPerS           float64 // output tokens over the level's window
	WallS, CPUS       float64
	SysS              float64 // the system part of CPUS
	MinFlt            int64   // page faults over the level (fresh memory touched)
	Mallocs           uint64  // heap allocations over the level
	VmHWMKiB          int64
	TTFTP50Ms         float64
	FirstErr          string
}

func rawChild() int { return childMain("raw", runRaw) }

// runRaw reads Conc streams the plainest way Go offers.
func runRaw(j rawJob) (out scaleOutcome) {
	if err := host.RaiseFileLimit(j.Conc); err != nil {
		out.FirstErr = err.Error()
		return out
	}
	tr := &http.Transport{MaxIdleConnsPerHost: j.Conc, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	body := fmt.Appendf(nil, `{"model":"sim","stream":true,"max_tokens":%d,"messages":[{"role":"user","content":"hello"}]}`, j.Tokens)
	ttft := make([]float64, j.Conc)
	var tokens, failed atomic.Int64
	var errOnce sync.Once
	stopProf := profile(j.Prof)
	var ru0, ru1 syscall.Rusage
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	// Open the connections first, as the runner does before a level
	// (client.Prime: GETs of the model list, 512 in flight at most, each
	// answer held unread until every GET has one, so that each holds a
	// connection of its own), so neither reader's TTFT holds a TCP handshake.
	const senders = 512
	answered := make(chan *http.Response, j.Conc)
	var left atomic.Int64
	left.Store(int64(j.Conc))
	var wg sync.WaitGroup
	for range min(j.Conc, senders) {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				if resp, err := client.Get(j.URL + "/models"); err == nil {
					answered <- resp
				}
			}
		})
	}
	wg.Wait()
	close(answered)
	for range min(j.Conc, senders) {
		wg.Go(func() {
			for resp := range answered {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	t0 := time.Now()
	for i := range j.Conc {
		wg.Go(func() {
			n, first, err := rawStream(client, j.URL, body)
			tokens.Add(int64(n))
			ttft[i] = first
			if err != nil || n != j.Tokens {
				failed.Add(1)
				ttft[i] = -1
				errOnce.Do(func() { out.FirstErr = fmt.Sprint(n, " tokens: ", err) })
			}
		})
	}
	wg.Wait()
	out.WallS = time.Since(t0).Seconds()
	runtime.ReadMemStats(&ms1)
	out.Mallocs = ms1.Mallocs - ms0.Mallocs
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	stopProf()
	out.CPUS = float64(ru1.Utime.Nano()+ru1.Stime.Nano()-ru0.Utime.Nano()-ru0.Stime.Nano()) / 1e9
	out.SysS, out.MinFlt = float64(ru1.Stime.Nano()-ru0.Stime.Nano())/1e9, ru1.Minflt-ru0.Minflt
	out.VmHWMKiB = procStatus("VmHWM")
	out.Failed = int(failed.Load())
	out.Completed = j.Conc - out.Failed
	out.Tokens = int(tokens.Load())
	out.TokPerS = float64(out.Tokens) / out.WallS
	ok := slices.DeleteFunc(ttft, func(v float64) bool { return v < 0 })
	if len(ok) > 0 {
		out.TTFTP50Ms = quantile(ok, 0.5)
	}
	return out
}

// rawStream sends one request and reads its stream line by line, reading
// the clock at each token line: the least a client can do and still time
// tokens.
func rawStream(client *http.Client, url string, body []byte) (tokens int, ttftMs float64, err error) {
	start := time.Now()
	resp, err := client.Post(url+"/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return tokens, ttftMs, err
		}
		if bytes.Contains(line, []byte(`"content"`)) {
			now := time.Now()
			if tokens == 0 {
				ttftMs = msf(now.Sub(start))
			}
			tokens++
		}
	}
}

// profile starts a CPU profile into file ("": none) and returns its stop.
func profile(file string) func() {
	if file == "" {
		return func() {}
	}
	f, err := os.Create(file)
	if err != nil {
		return func() {}
	}
	if pprof.StartCPUProfile(f) != nil {
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
		// Beside the CPU profile, what was allocated where (go tool pprof
		// -sample_index=alloc_objects FILE.alloc).
		if a, err := os.Create(file + ".alloc"); err == nil {
			_ = pprof.Lookup("allocs").WriteTo(a, 0)
			a.Close()
		}
	}
}

// startMini starts the minimal server child for streams at once, a token
// every step.
func startMini(step time.Duration, streams int) (*simProc, error) {
	arg, _ := json.Marshal(miniArg{step, streams})
	cmd := childCmd(0)
	cmd.Env = append(cmd.Env, roleEnv+"="+miniRole, argEnv+"="+string(arg))
	return startChild(cmd)
}

// startChild starts cmd, a child that prints its URL and serves until its
// stdin closes.
func startChild(cmd *exec.Cmd) (*simProc, error) {
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &simProc{cmd: cmd, stdin: stdin, out: bufio.NewReaderSize(stdout, 1<<20)}
	line, err := p.out.ReadString('\n')
	if err != nil {
		p.kill()
		return nil, fmt.Errorf("server child: %w", err)
	}
	p.url = strings.TrimSpace(line)
	return p, nil
}

// wireScale: the runner and the raw reader at N streams, each against a
// fresh minimal server, taking turns -reps times; medians.
func wireScale(md *strings.Builder, o options) error {
	n := o.wireStreams
	fmt.Fprintf(md, "\n### The wire at %d streams\n\n", n)
	fmt.Fprintf(md, "One level of %d concurrent streams, one request each, against a minimal streaming server in its own process (%d tokens, one every %v), read by the runner (a closed-loop level, warm-up 1; its tok/s over the measured window) and by a raw Go reader (net/http, a bufio line reader, one clock read per token line), taking turns (who goes first alternating), %d times; medians. Both open their connections first (a GET of the model list on each, 512 in flight at most, each holding its connection until every GET has one), so neither TTFT holds a handshake; CPU counts that too. CPU and peak RSS are the reading process's own. Load average at the start: %s.\n\n", n, miniTokens, miniStep, o.reps, loadAvg())
	fmt.Fprintf(md, "| reader | completed | failed | tok/s | TTFT p50 ms | CPU s | peak RSS MiB | wall s |\n|---|---|---|---|---|---|---|---|\n")
	var fig [2][6][]float64 // by reader: completed, failed, tok/s, TTFT p50, CPU, RSS
	for turn := range o.reps {
		// Who goes first alternates, so that neither reader always follows
		// the other (the kernel still tearing down its 16,384 connections).
		order := []int{0, 1}
		if turn%2 == 1 {
			order = []int{1, 0}
		}
		for _, k := range order {
			who := []string{"raw Go reader", "runner"}[k]
			r, err := scaleLevel(k == 1, n, o.profDir(fmt.Sprintf("%s-%d", who, turn)))
			if err != nil {
				return err
			}
			if r.FirstErr != "" {
				fmt.Fprintf(os.Stderr, "runnerbench: %s: first error: %s\n", who, r.FirstErr)
			}
			fmt.Fprintf(os.Stderr, "runnerbench: wirescale: %s: tok/s %.0f, TTFT p50 %.0f ms, CPU %.1f s (system %.1f s), page faults %d, peak RSS %.0f MiB\n", who, r.TokPerS, r.TTFTP50Ms, r.CPUS, r.SysS, r.MinFlt, float64(r.VmHWMKiB)/1024)
			for c, v := range []float64{float64(r.Completed), float64(r.Failed), r.TokPerS, r.TTFTP50Ms, r.CPUS, float64(r.VmHWMKiB) / 1024} {
				fig[k][c] = append(fig[k][c], v)
			}
		}
	}
	med := func(k, c int) float64 { return quantile(fig[k][c], 0.5) }
	for k, who := range []string{"raw Go reader", "runner"} {
		fmt.Fprintf(md, "| %s | %.0f | %.0f | %.0f | %.0f | %.1f | %.0f | |\n", who, med(k, 0), med(k, 1), med(k, 2), med(k, 3), med(k, 4), med(k, 5))
	}
	fmt.Fprintf(md, "| runner / raw | | | %.2f× | %.2f× | %.2f× | %.2f× | |\n", med(1, 2)/med(0, 2), med(1, 3)/med(0, 3), med(1, 4)/med(0, 4), med(1, 5)/med(0, 5))
	// The turns' own ratios (each runner turn over the raw turn just
	// before it), whose median's interval says what the machine's noise
	// leaves of the comparison.
	fmt.Fprintf(md, "\nrunner / raw per turn, median and the interval that holds the true median with at least %.0f%% confidence (order statistics):", 100*medianConf)
	for _, c := range []struct {
		name string
		col  int
	}{{"TTFT p50", 3}, {"CPU", 4}} {
		r := make([]float64, len(fig[0][c.col]))
		for i := range r {
			r[i] = fig[1][c.col][i] / fig[0][c.col][i]
		}
		lo, hi, conf := medianInterval(r)
		fmt.Fprintf(md, " %s %.2f× (%.2f–%.2f×, %.1f%%);", c.name, quantile(r, 0.5), lo, hi, 100*conf)
	}
	md.WriteString("\n")
	return nil
}

// medianConf is the least confidence medianInterval's intervals have.
const medianConf = 0.95

// medianInterval is the distribution-free interval for the median of x's
// distribution: the k-th smallest and k-th largest of x, k the largest with
// P(Binomial(n, 1/2) < k) at most (1-medianConf)/2; conf is its exact
// confidence. With fewer than 6 values there is none (the whole range, and
// its confidence, below medianConf).
func medianInterval(x []float64) (lo, hi, conf float64) {
	s := slices.Sorted(slices.Values(x))
	n := len(s)
	if n == 0 {
		return math.NaN(), math.NaN(), 0
	}
	// tail[k] = P(B < k), B ~ Binomial(n, 1/2).
	pmf := math.Pow(0.5, float64(n)) // P(B = 0)
	tail, k := 0.0, 0
	for j := 0; j < n/2; j++ {
		if tail+pmf > (1-medianConf)/2 {
			break
		}
		tail += pmf
		k = j + 1
		pmf *= float64(n-j) / float64(j+1)
	}
	if k == 0 {
		return s[0], s[n-1], 1 - 2*math.Pow(0.5, float64(n))
	}
	return s[k-1], s[n-k], 1 - 2*tail
}

// scaleLevel reads one wire-at-scale level, by the runner or the raw
// reader, against a fresh minimal server.
func scaleLevel(runner bool, n int, prof string) (scaleOutcome, error) {
	s, err := startMini(miniStep, n)
	if err != nil {
		return scaleOutcome{}, err
	}
	defer s.kill()
	if !runner {
		var r scaleOutcome
		err := runChild(rawRole, rawJob{URL: s.url, Conc: n, Tokens: miniTokens, Prof: prof}, &r)
		return r, err
	}
	oc, err := runRunner(job{URL: s.url, Conc: n, Requests: n, Output: miniTokens, Input: 8, Prof: prof})
	if err != nil {
		return scaleOutcome{}, err
	}
	r := scaleOutcome{Completed: oc.Point.Completed, Failed: oc.Point.Failed, Tokens: oc.Point.Completed * miniTokens, TokPerS: oc.Point.OutputTPSTotal,
		WallS: oc.WallS, CPUS: oc.CPUS, SysS: oc.SysS, MinFlt: oc.MinFlt, VmHWMKiB: oc.VmHWMKiB, TTFTP50Ms: deref0(oc.Point.TTFTP50Ms)}
	if oc.Point.Error != nil {
		r.FirstErr = *oc.Point.Error
	}
	return r, nil
}

func deref0(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

// loadAvg is /proc/loadavg's three averages.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

// profDir is where a reader's CPU profile goes ("": none): one file per
// reader and turn, so that several turns' profiles can be merged (go tool
// pprof -proto A B ...), one turn's saying little on a shared machine.
func (o options) profDir(who string) string {
	if o.prof == "" {
		return ""
	}
	return o.prof + "/" + strings.ReplaceAll(who, " ", "-") + ".pprof"
}

// wireChunkCost: the runner's CPU and allocations per chunk at 1,024
// streams against a raw Go reader's, each reading the same minimal server
// (a token every 10 ms) at two lengths, so the per-request costs (the
// connection, the request, the record) fall out of the difference. On a
// shared machine one run says little, so the readers take turns -reps
// times and the medians are shown.
func wireChunkCost(md *strings.Builder, o options) error {
	const conc, step = 1024, 10 * time.Millisecond
	lengths := [2]int{64, 192}
	fmt.Fprintf(md, "\n### CPU and allocations per chunk at %d streams\n\n", conc)
	fmt.Fprintf(md, "One level of %d streams, one request each, against the minimal streaming server (a token every %v), at %d and %d output tokens, read by the runner and by the raw Go reader, taking turns, %d times; medians. *Per chunk*: the reading process's CPU (user + system) over the level, its connections' opening included, divided by the chunks of the longer run; *marginal*: the difference between the two lengths divided by the difference in chunks, which leaves out everything paid per request. Load average at the start: %s.\n\n", conc, step, lengths[0], lengths[1], o.reps, loadAvg())
	fmt.Fprintf(md, "| reader | CPU µs per chunk | marginal CPU µs per chunk | allocations per chunk | marginal allocations per chunk |\n|---|---|---|---|---|\n")
	var fig [2][4][]float64 // by reader: the four columns, one value per turn
	for range o.reps {
		for k := range 2 {
			var r [2]scaleOutcome
			for i, n := range lengths {
				s, err := startMini(step, conc)
				if err != nil {
					return err
				}
				r[i], err = readLevel(k == 1, s.url, conc, n, o.profDir(fmt.Sprintf("chunks-%d-%d", k, n)))
				s.kill()
				if err != nil {
					return err
				}
			}
			chunks, dChunks := float64(r[1].Tokens), float64(r[1].Tokens-r[0].Tokens)
			for c, v := range []float64{1e6 * r[1].CPUS / chunks, 1e6 * (r[1].CPUS - r[0].CPUS) / dChunks,
				float64(r[1].Mallocs) / chunks, (float64(r[1].Mallocs) - float64(r[0].Mallocs)) / dChunks} {
				fig[k][c] = append(fig[k][c], v)
			}
		}
	}
	for k, who := range []string{"raw Go reader", "runner"} {
		fmt.Fprintf(md, "| %s | %.2f | %.2f | %.2f | %.3f |\n", who, quantile(fig[k][0], 0.5), quantile(fig[k][1], 0.5), quantile(fig[k][2], 0.5), quantile(fig[k][3], 0.5))
	}
	fmt.Fprintf(md, "| runner / raw | %.2f× | %.2f× | | |\n", quantile(fig[1][0], 0.5)/quantile(fig[0][0], 0.5), quantile(fig[1][1], 0.5)/quantile(fig[0][1], 0.5))
	return nil
}

// readLevel reads one level of conc streams of n tokens from url, by the
// runner or by the raw reader.
func readLevel(runner bool, url string, conc, n int, prof string) (scaleOutcome, error) {
	if !runner {
		var r scaleOutcome
		err := runChild(rawRole, rawJob{URL: url, Conc: conc, Tokens: n, Prof: prof}, &r)
		if err == nil && r.Failed > 0 {
			err = fmt.Errorf("raw reader: %d of %d failed: %s", r.Failed, conc, r.FirstErr)
		}
		return r, err
	}
	oc, err := runRunner(job{URL: url, Conc: conc, Requests: conc, Output: n, Input: 8, Prof: prof})
	if err != nil {
		return scaleOutcome{}, err
	}
	if oc.Point.Failed > 0 {
		return scaleOutcome{}, fmt.Errorf("runner: %d of %d failed: %v", oc.Point.Failed, conc, oc.Point.ErrorsByKind)
	}
	return scaleOutcome{Completed: oc.Point.Completed, Tokens: oc.Point.Completed * n, WallS: oc.WallS, CPUS: oc.CPUS, Mallocs: oc.Mallocs}, nil
}
