package sim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// The speed figures of the simulator are measured here, in benchmarks (run
// with `go test -run XXX -bench . ./sim/`), not asserted in timed tests.
//
// Method for chunks per CPU-second: the server runs in a child process (this
// test binary re-executed with SIM_BENCH_SERVE set, see TestMain), so its CPU
// time is exactly the child's rusage (user + system) and none of the client's
// work is counted. The client is a raw TCP loop (one request per connection,
// Connection: close, reading into a reused 64 KiB buffer and counting "\n\n"
// SSE line ends), as cheap as a client can be, so it does not starve the
// server of the two cores either.

func TestMain(m *testing.M) {
	if os.Getenv("SIM_BENCH_SERVE") != "" {
		os.Exit(benchServe())
	}
	code := m.Run()
	if code == 0 {
		// Every server the tests started is closed by now: no engine loop,
		// handler or connection goroutine may outlive it.
		http.DefaultClient.CloseIdleConnections()
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goroutine leak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// benchServe runs a zero-latency simulator until stdin closes, printing its
// URL on stdout.
func benchServe() int {
	var cfg Config
	if err := json.Unmarshal([]byte(os.Getenv("SIM_BENCH_SERVE")), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	s, err := Start(context.Background(), cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(s.URL())
	// Keep memory flat across long runs: forget finished records periodically.
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				s.ResetTruth()
			case <-stop:
				return
			}
		}
	}()
	_, _ = io.Copy(io.Discard, os.Stdin)
	close(stop)
	_ = s.Close()
	return 0
}

// rawRequest is the bytes of a streaming POST with Connection: close.
func rawRequest(path string, body []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nHost: sim\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", path, len(body))
	b.Write(body)
	return b.Bytes()
}

// rawStream sends req on a new connection to addr and reads to EOF, counting
// SSE events (blank-line ends). It reports whether the status was 200 and the
// stream ended with [DONE].
func rawStream(addr string, req, buf []byte) (events int, ok bool, err error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, false, err
	}
	return rawStreamOn(conn, req, buf)
}

// rawStreamOn is rawStream on an open connection, which it closes.
func rawStreamOn(conn net.Conn, req, buf []byte) (events int, ok bool, err error) {
	defer conn.Close()
	if _, err := conn.Write(req); err != nil {
		return 0, false, err
	}
	var prev byte
	var tail []byte
	first := true
	for {
		n, rerr := conn.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			if first {
				if !bytes.HasPrefix(chunk, []byte("HTTP/1.1 200")) {
					return 0, false, fmt.Errorf("status line %q", bytes.SplitN(chunk, []byte("\r\n"), 2)[0])
				}
				first = false
			}
			for _, c := range chunk {
				if c == '\n' && prev == '\n' {
					events++
				}
				prev = c
			}
			// A rolling window of the last 32 bytes: the final read may hold
			// only the chunked-encoding terminator.
			tail = append(tail, chunk[max(0, n-32):]...)
			if len(tail) > 32 {
				tail = append(tail[:0], tail[len(tail)-32:]...)
			}
		}
		if rerr != nil {
			if errors.Is(rerr, io.EOF) {
				return events, bytes.Contains(tail, []byte("data: [DONE]\n\n")), nil
			}
			return events, false, rerr
		}
	}
}

func childCPU(ps *os.ProcessState) time.Duration {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkChunksPerCPUSecond streams b.N × 1000-token responses (64 at a
// time) from a zero-latency simulator in a child process and reports the
// server's CPU time per chunk.
//
// The second case is the opposite extreme: 2,000 streams at 10 ms per token
// (200,000 chunks/s wanted in wall time), where every chunk is its own write
// and flush because the handler is never behind.
func BenchmarkChunksPerCPUSecond(b *testing.B) {
	b.Run("zero_latency/streams=64", func(b *testing.B) {
		benchChunks(b, Config{ZeroLatency: true, MaxNumSeqs: 4096}, 64, 1000)
	})
	b.Run("itl_10ms/streams=2000", func(b *testing.B) {
		benchChunks(b, Config{TTFTMs: 1, ITLMs: 10, MaxNumSeqs: 4096}, 2000, 100)
	})
}

func benchChunks(b *testing.B, cfg Config, conc, tokens int) {
	tpc := max(cfg.TokensPerChunk, 1)
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cfgJSON, _ := json.Marshal(cfg)
	cmd.Env = append(os.Environ(), "SIM_BENCH_SERVE="+string(cfgJSON))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatal(err)
	}
	addr := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(line), "http://"), "/v1")
	body, _ := json.Marshal(chatBody("[0123456789ab] the quick brown fox", tokens, map[string]any{"ignore_eos": true, "stream_options": nil}))
	req := rawRequest("/v1/chat/completions", body)

	// Warm the child up and read its CPU baseline (start-up is not measured).
	buf := make([]byte, 64<<10)
	if _, ok, err := rawStream(addr, req, buf); !ok || err != nil {
		b.Fatalf("warm-up: ok %v err %v", ok, err)
	}
	cpu0 := procCPU(cmd.Process.Pid)

	b.ResetTimer()
	var next atomic.Int64
	var events atomic.Int64
	var failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range min(conc, b.N) {
		wg.Go(func() {
			buf := make([]byte, 16<<10)
			for next.Add(1) <= int64(b.N) {
				n, ok, err := rawStream(addr, req, buf)
				if !ok || err != nil {
					failed.Add(1)
				}
				events.Add(int64(n))
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	b.StopTimer()
	cpu1 := procCPU(cmd.Process.Pid)
	_ = stdin.Close()
	if err := cmd.Wait(); err != nil {
		b.Fatalf("child: %v", err)
	}
	if failed.Load() > 0 {
		b.Fatalf("%d streams failed", failed.Load())
	}
	// Per request: the role chunk, one chunk per group of tpc tokens, [DONE].
	perReq := int64(1 + (tokens+tpc-1)/tpc + 1)
	if events.Load() != int64(b.N)*perReq {
		b.Fatalf("%d SSE events, want %d", events.Load(), int64(b.N)*perReq)
	}
	chunks := float64(int64(b.N) * int64((tokens+tpc-1)/tpc))
	cpu := cpu1 - cpu0
	if cpu <= 0 {
		cpu = childCPU(cmd.ProcessState) // whole-life figure as a fallback
	}
	b.ReportMetric(chunks/cpu.Seconds(), "chunks/cpu-s")
	b.ReportMetric(float64(cpu.Nanoseconds())/chunks, "cpu-ns/chunk")
	b.ReportMetric(chunks/wall.Seconds(), "chunks/s")
}

// procCPU reads a process's user+system CPU time from /proc (Linux).
func procCPU(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the ")" that ends the command name; utime and stime are
	// fields 14 and 15 (1-based), in clock ticks (100 Hz on Linux).
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// TestConcurrentStreams2000 holds 2,000 streams open at once (max_num_seqs
// 2048, so all run in one batch) and checks that every one completes with
// all its tokens and that the ground truth shows them running together.
func TestConcurrentStreams2000(t *testing.T) {
	if testing.Short() {
		t.Skip("2,000 connections; skipped in -short")
	}
	n := 2000
	if raceEnabled {
		n = 400
	}
	// 10 tokens at 100 ms: each stream lasts about a second, longer than it
	// takes a loaded 2-core machine to accept all 2,000 requests.
	runConcurrent(t, n, 10, 100)
}

// runConcurrent opens n connections, then sends n streaming requests of
// `tokens` tokens at itlMs per token at once and reads them all.
func runConcurrent(t testing.TB, n, tokens int, itlMs float64) {
	cfg := FastConfig()
	cfg.MaxNumSeqs = 2048
	cfg.ITLMs = itlMs
	cfg.TTFTMs = 20
	s := startSim(t, cfg)
	addr := strings.TrimSuffix(strings.TrimPrefix(s.URL(), "http://"), "/v1")
	var wg sync.WaitGroup
	var failed, events atomic.Int64
	var firstErr atomic.Value
	t0 := time.Now()
	conns := make([]net.Conn, n)
	for i := range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			for _, c := range conns[:i] {
				c.Close()
			}
			t.Fatalf("dial %d: %v", i, err)
		}
		conns[i] = c
	}
	startLine := make(chan struct{})
	for i := range n {
		body, _ := json.Marshal(chatBody(fmt.Sprintf("[%012x] hello", i), tokens, map[string]any{"ignore_eos": true}))
		req := rawRequest("/v1/chat/completions", body)
		wg.Go(func() {
			buf := make([]byte, 4096)
			<-startLine
			ev, ok, err := rawStreamOn(conns[i], req, buf)
			if !ok || err != nil {
				failed.Add(1)
				firstErr.CompareAndSwap(nil, fmt.Sprint(err))
			}
			events.Add(int64(ev))
		})
	}
	t1 := time.Now()
	close(startLine)
	wg.Wait()
	t.Logf("dialled %d connections in %v, streamed in %v", n, t1.Sub(t0), time.Since(t1))
	if failed.Load() > 0 {
		t.Fatalf("%d of %d streams failed (first: %v)", failed.Load(), n, firstErr.Load())
	}
	// role + tokens + usage + [DONE] per stream
	if want := int64(n * (tokens + 3)); events.Load() != want {
		t.Errorf("%d SSE events, want %d", events.Load(), want)
	}
	truth := s.Truth()
	if len(truth) != n {
		t.Fatalf("%d truth records, want %d", len(truth), n)
	}
	// Concurrency: the peak number of sequences between prefill start and last token.
	type ev struct {
		at time.Time
		d  int
	}
	evs := make([]ev, 0, 2*n)
	for _, tr := range truth {
		if tr.OutputTokens != tokens || tr.Queued {
			t.Fatalf("record %d: %d tokens, queued %v", tr.Index, tr.OutputTokens, tr.Queued)
		}
		evs = append(evs, ev{tr.PrefillStart, 1}, ev{tr.TokenScheduled[tokens-1], -1})
	}
	sortEvents := func(a, b ev) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.d - b.d // ends before starts at the same instant
	}
	slices.SortFunc(evs, sortEvents)
	peak, cur := 0, 0
	for _, e := range evs {
		cur += e.d
		peak = max(peak, cur)
	}
	var gapSum, delaySum time.Duration
	var gaps, delays int
	for _, tr := range truth {
		for i := range tr.TokenScheduled {
			delaySum += tr.TokenWritten[i].Sub(tr.TokenScheduled[i])
			delays++
			if i > 0 {
				gapSum += tr.TokenScheduled[i].Sub(tr.TokenScheduled[i-1])
				gaps++
			}
		}
	}
	t.Logf("%d streams: peak %d sequences in the batch at once; mean decode step %v (model %v); mean write delay after schedule %v",
		n, peak, gapSum/time.Duration(max(gaps, 1)), time.Duration(itlMs*float64(time.Millisecond)), delaySum/time.Duration(max(delays, 1)))
	// All n connections are open throughout; how many sequences share one
	// batch also depends on how fast a loaded machine accepts the requests.
	if peak < n/2 {
		t.Errorf("peak batch %d, want close to %d", peak, n)
	}
}

// BenchmarkConcurrentStreams2000 is TestConcurrentStreams2000 with longer
// streams (200 tokens at 10 ms), reporting the wall time per batch (ideal:
// 20 ms + 200 × 10 ms plus the decode slowdown the model adds, none here).
func BenchmarkConcurrentStreams2000(b *testing.B) {
	for range b.N {
		runConcurrent(b, 2000, 200, 10)
	}
}

// BenchmarkAppendChunk measures encoding one token chunk into the reused buffer.
func BenchmarkAppendChunk(b *testing.B) {
	s, err := New(FastConfig())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	st := &stream{s: s, rec: &record{}, sq: &seq{outputTokens: 1 << 30}, chat: true, id: "chatcmpl-0123456789abcdef", created: 1700000000}
	st.rec.t.MaxTokens = 1 << 30
	st.setup("chat.completion.chunk")
	st.roleSent = true
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		st.buf = st.appendChunk(st.buf[:0], i, i+1, false)
	}
}

// BenchmarkStreamInProcess streams 1000-token responses from an in-process
// zero-latency simulator over loopback with the raw client and reports heap
// allocations per chunk for the whole process (server and client), showing
// the hot path does not allocate per chunk.
func BenchmarkStreamInProcess(b *testing.B) {
	s, err := Start(b.Context(), Config{ZeroLatency: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	addr := strings.TrimSuffix(strings.TrimPrefix(s.URL(), "http://"), "/v1")
	const tokens = 1000
	body, _ := json.Marshal(chatBody("[0123456789ab] hi", tokens, map[string]any{"ignore_eos": true, "stream_options": nil}))
	req := rawRequest("/v1/chat/completions", body)
	buf := make([]byte, 64<<10)
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	b.ResetTimer()
	for b.Loop() {
		if _, ok, err := rawStream(addr, req, buf); !ok || err != nil {
			b.Fatalf("ok %v err %v", ok, err)
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&ms1)
	s.ResetTruth()
	chunks := float64(b.N * tokens)
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/chunks, "allocs/chunk")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/chunks, "ns/chunk")
}

// BenchmarkDeliveryDelay streams 8 × 200 tokens at 2 ms per step in process
// and reports how far behind the schedule chunks were written (p50, p99) and
// the mean decode step against the model's: the simulator's own timing error,
// which bounds how exactly a client can be checked against the ground truth.
func BenchmarkDeliveryDelay(b *testing.B) {
	cfg := FastConfig()
	cfg.ITLMs = 2
	for b.Loop() {
		s, err := Start(b.Context(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		addr := strings.TrimSuffix(strings.TrimPrefix(s.URL(), "http://"), "/v1")
		body, _ := json.Marshal(chatBody("hi", 200, map[string]any{"ignore_eos": true}))
		req := rawRequest("/v1/chat/completions", body)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() { _, _, _ = rawStream(addr, req, make([]byte, 4096)) })
		}
		wg.Wait()
		var delays []time.Duration
		var gapSum time.Duration
		gaps := 0
		for _, tr := range s.Truth() {
			for i := range tr.TokenWritten {
				delays = append(delays, tr.TokenWritten[i].Sub(tr.TokenScheduled[i]))
				if i > 0 {
					gapSum += tr.TokenScheduled[i].Sub(tr.TokenScheduled[i-1])
					gaps++
				}
			}
		}
		_ = s.Close()
		if len(delays) != 8*200 {
			b.Fatalf("%d token times", len(delays))
		}
		slices.Sort(delays)
		b.ReportMetric(float64(delays[len(delays)/2].Microseconds()), "p50-delay-µs")
		b.ReportMetric(float64(delays[len(delays)*99/100].Microseconds()), "p99-delay-µs")
		b.ReportMetric(float64((gapSum / time.Duration(gaps)).Microseconds()), "mean-step-µs")
	}
}
