package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
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

// miniTokens and miniStep are the minimal server's answer: 16 tokens, one
// every 200 ms (the first 200 ms after the request).
const (
	miniTokens = 16
	miniStep   = 200 * time.Millisecond
)

var (
	miniToken = []byte(`data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":" tok"},"finish_reason":null}]}` + "\n\n")
	miniEnd   = []byte(`data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"length"}],"usage":{"prompt_tokens":8,"completion_tokens":16,"total_tokens":24}}` + "\n\ndata: [DONE]\n\n")
)

// miniChild serves the minimal server until its stdin closes.
func miniChild() int {
	if err := host.RaiseFileLimit(70000); err != nil {
		fmt.Fprintln(os.Stderr, "mini child:", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "mini child:", err)
		return 2
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", miniStream)
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"sim","object":"model"}]}`)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: time.Minute}
	go func() { _ = srv.Serve(ln) }()
	fmt.Println("http://" + ln.Addr().String() + "/v1")
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// miniStream answers one chat request with miniTokens token chunks, one per
// miniStep, then the finish, usage and [DONE].
func miniStream(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	f := w.(http.Flusher)
	f.Flush()
	t0 := time.Now()
	for i := range miniTokens {
		time.Sleep(time.Until(t0.Add(time.Duration(i+1) * miniStep)))
		if _, err := w.Write(miniToken); err != nil {
			return
		}
		f.Flush()
	}
	_, _ = w.Write(miniEnd)
}

// rawJob is what the raw reader child runs: Conc streams at once, each one
// request.
type rawJob struct {
	URL  string
	Conc int
	Prof string // CPU profile file ("": none)
}

// scaleOutcome is what either reader reports of the level.
type scaleOutcome struct {
	Completed, Failed int
	Tokens            int
	TokPerS           float64 // output tokens over the level's window
	WallS, CPUS       float64
	VmHWMKiB          int64
	TTFTP50Ms         float64
	FirstErr          string
}

func rawChild() int {
	var j rawJob
	if err := json.Unmarshal([]byte(os.Getenv(argEnv)), &j); err != nil {
		fmt.Fprintln(os.Stderr, "raw child:", err)
		return 2
	}
	out := runRaw(j)
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		return 1
	}
	return 0
}

// runRaw reads Conc streams the plainest way Go offers.
func runRaw(j rawJob) (out scaleOutcome) {
	if err := host.RaiseFileLimit(j.Conc); err != nil {
		out.FirstErr = err.Error()
		return out
	}
	tr := &http.Transport{MaxIdleConnsPerHost: j.Conc, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	body := []byte(`{"model":"sim","stream":true,"max_tokens":16,"messages":[{"role":"user","content":"hello"}]}`)
	ttft := make([]float64, j.Conc)
	var tokens, failed atomic.Int64
	var errOnce sync.Once
	stopProf := profile(j.Prof)
	var ru0, ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	// Open the connections first, as the runner does before a level
	// (primeConnections), so neither reader's TTFT holds a TCP handshake.
	var wg sync.WaitGroup
	for range j.Conc {
		wg.Go(func() {
			if resp, err := client.Get(j.URL + "/models"); err == nil {
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
			if err != nil || n != miniTokens {
				failed.Add(1)
				ttft[i] = -1
				errOnce.Do(func() { out.FirstErr = fmt.Sprint(n, " tokens: ", err) })
			}
		})
	}
	wg.Wait()
	out.WallS = time.Since(t0).Seconds()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	stopProf()
	out.CPUS = float64(ru1.Utime.Nano()+ru1.Stime.Nano()-ru0.Utime.Nano()-ru0.Stime.Nano()) / 1e9
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
	return func() { pprof.StopCPUProfile(); f.Close() }
}

// startMini starts the minimal server child.
func startMini() (*simProc, error) {
	cmd := childCmd(0)
	cmd.Env = append(cmd.Env, roleEnv+"="+miniRole)
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
// fresh minimal server, back to back.
func wireScale(md *strings.Builder, o options) error {
	n := o.wireStreams
	fmt.Fprintf(md, "\n### The wire at %d streams\n\n", n)
	fmt.Fprintf(md, "One level of %d concurrent streams, one request each, against a minimal streaming server in its own process (%d tokens, one every %v), read by the runner (a closed-loop level, warm-up 1; its tok/s over the measured window) and by a raw Go reader (net/http, a bufio line reader, one clock read per token line). Both open their connections first (a GET of the model list on each, all at once), so neither TTFT holds a handshake; CPU counts that too. CPU and peak RSS are the reading process's own. Load average at the start: %s.\n\n", n, miniTokens, miniStep, loadAvg())
	fmt.Fprintf(md, "| reader | completed | failed | tok/s | TTFT p50 ms | CPU s | peak RSS MiB | wall s |\n|---|---|---|---|---|---|---|---|\n")
	var rows [2]scaleOutcome
	for i, who := range []string{"raw Go reader", "runner"} {
		s, err := startMini()
		if err != nil {
			return err
		}
		var r scaleOutcome
		if i == 0 {
			err = runChild(rawRole, rawJob{URL: s.url, Conc: n, Prof: o.profDir(who)}, &r)
		} else {
			var oc outcome
			oc, err = runRunner(job{URL: s.url, Conc: n, Requests: n, Output: miniTokens, Input: 8, Prof: o.profDir(who)})
			r = scaleOutcome{Completed: oc.Point.Completed, Failed: oc.Point.Failed, Tokens: oc.Point.Completed * miniTokens, TokPerS: oc.Point.OutputTPSTotal,
				WallS: oc.WallS, CPUS: oc.CPUS, VmHWMKiB: oc.VmHWMKiB, TTFTP50Ms: deref0(oc.Point.TTFTP50Ms)}
			if oc.Point.Error != nil {
				r.FirstErr = *oc.Point.Error
			}
		}
		s.kill()
		if err != nil {
			return err
		}
		rows[i] = r
		fmt.Fprintf(md, "| %s | %d | %d | %.0f | %.0f | %.1f | %.0f | %.1f |\n", who, r.Completed, r.Failed, r.TokPerS, r.TTFTP50Ms, r.CPUS, float64(r.VmHWMKiB)/1024, r.WallS)
		if r.FirstErr != "" {
			fmt.Fprintf(os.Stderr, "runnerbench: %s: first error: %s\n", who, r.FirstErr)
		}
	}
	raw, run := rows[0], rows[1]
	fmt.Fprintf(md, "| runner / raw | | | %.2f× | %.2f× | %.2f× | %.2f× | |\n",
		run.TokPerS/raw.TokPerS, run.TTFTP50Ms/raw.TTFTP50Ms, run.CPUS/raw.CPUS, float64(run.VmHWMKiB)/float64(raw.VmHWMKiB))
	return nil
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

// profDir is where a reader's CPU profile goes ("": none).
func (o options) profDir(who string) string {
	if o.prof == "" {
		return ""
	}
	return o.prof + "/" + strings.ReplaceAll(who, " ", "-") + ".pprof"
}
