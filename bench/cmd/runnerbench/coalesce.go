package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/runnerbench/runner/internal/rxtime"
	"github.com/runnerbench/runner/protocol"
	"github.com/runnerbench/runner/runner/host"
	"github.com/runnerbench/runner/sim"
)

// The wire study (docs/wire.md): what the kernel's receive timestamps give a
// stream reader that falls behind, and how far each way of stamping a token
// lands from the time the simulator wrote it. A probe child reads every
// stream as the engine does (net/http, the chat protocol's decoder) through
// internal/rxtime, and notes for every token chunk the user time after it was
// decoded, the kernel time of the read it came in and that read's number.
// The simulator child records when the write carrying each token began and
// returned; the kernel's time of those bytes lies between the two.

// probeRole is the environment role of the study's reading child.
const probeRole = "probe"

// probeJob is what the probe child reads: one wave of Conc streams.
type probeJob struct {
	URL    string
	Conc   int
	Output int
}

// probeEvent is one token chunk (Tok ≥ 0) or a stream's [DONE] (Tok = -1) as
// the probe read it: Unix ns of the user time and of the read's kernel time
// (0: none), and the read's number on its connection.
type probeEvent struct {
	Req    int
	Tok    int
	UserNs int64
	KernNs int64
	Read   uint64
}

// probeOutcome is what the probe child prints.
type probeOutcome struct {
	Nonces []string
	Events []probeEvent
	Err    string
}

func probeChild() int { return childMain("probe", runProbe) }

// runProbe opens Conc streams at once and reads them all.
func runProbe(j probeJob) (out probeOutcome) {
	if err := host.RaiseFileLimit(j.Conc); err != nil {
		out.Err = err.Error()
		return out
	}
	tr := &http.Transport{
		MaxIdleConnsPerHost: j.Conc,
		DisableCompression:  true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return rxtime.Wrap(c), nil
		},
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	chat, _ := protocol.Lookup("chat")
	out.Nonces = make([]string, j.Conc)
	events := make([][]probeEvent, j.Conc)
	errs := make([]error, j.Conc)
	var wg sync.WaitGroup
	for i := range j.Conc {
		out.Nonces[i] = fmt.Sprintf("%012x", 0xabc000000000+i)
		wg.Go(func() { events[i], errs[i] = probeStream(client, chat, j, i, out.Nonces[i]) })
	}
	wg.Wait()
	for i := range events {
		if errs[i] != nil {
			out.Err = errs[i].Error()
			return out
		}
		out.Events = append(out.Events, events[i]...)
	}
	return out
}

// probeStream sends one request and notes every token chunk of its stream.
func probeStream(client *http.Client, chat protocol.Protocol, j probeJob, req int, nonce string) ([]probeEvent, error) {
	body, err := chat.Encode(protocol.Request{Model: "sim", MaxTokens: j.Output, Pinned: true,
		Messages: []protocol.Message{{Role: "user", Content: "[" + nonce + "] tell me about the harbour"}}})
	if err != nil {
		return nil, err
	}
	var conn net.Conn
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { conn = i.Conn }})
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, j.URL+chat.Path(), strings.NewReader(string(body)))
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(hr)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	st := rxtime.From(conn)
	if st == nil {
		return nil, fmt.Errorf("no kernel receive timestamps on this system")
	}
	dec := chat.NewDecoder()
	dec.Reset(resp.Body)
	var ev protocol.Event
	evs := make([]probeEvent, 0, j.Output+1)
	tok := 0
	for {
		if err := dec.Next(&ev); err != nil {
			return evs, nil
		}
		if !ev.Done && !ev.Content {
			continue
		}
		now := time.Now()
		read, k := st.Latest()
		e := probeEvent{Req: req, Tok: tok, UserNs: now.UnixNano(), KernNs: k, Read: read}
		if ev.Done {
			e.Tok = -1
		} else {
			tok++
		}
		evs = append(evs, e)
		if ev.Done {
			return evs, nil
		}
	}
}

// coalesce: the study, at 64 and 512 streams.
func coalesce(md *strings.Builder, o options) error {
	if err := kernelGives(md); err != nil {
		return err
	}
	fmt.Fprintf(md, "\n### Several events in one read\n\n")
	fmt.Fprintf(md, "Simulator in its own process (50 ms prefill, 20 ms decode steps, 32 output tokens, one wave of `c` streams); a probe reads every stream through `internal/rxtime` as the engine does. Truth: each token's write on the simulator, [began, returned], or its kernel's transmit time when TCP held the bytes past the call (for the last token and the end of the stream, that or the body's end, net/http's last chunk, whichever is nearer). An error is the distance from a stamp to that window (0 inside it), in ms; ITL error is a gap's stamp difference minus the gap between the windows' midpoints. *user*: the clock after the chunk is decoded (Runner before); *read's kernel time*: the kernel time of the read the chunk came in (Runner now); *interpolated*: the earlier tokens of a read spread evenly between the previous read's kernel time and this read's (the stamp not chosen).\n\n")
	fmt.Fprintf(md, "| c | machine | token chunks | sharing a read with a later token | read lag p50 / p99 / max ms | stamp | TTFT error p50 / p99 / max | ITL error p50 / p99 / max | E2E error p50 / p99 / max | tokens inside their write |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, busy := range machines(o) {
		for _, conc := range []int{64, 512} {
			if err := coalesceRow(md, conc, busy); err != nil {
				return err
			}
		}
	}
	return nil
}

// coalesceRow runs the study once at conc streams, with busy spinning
// processes beside it.
func coalesceRow(md *strings.Builder, conc, busy int) error {
	stop := spin(busy)
	defer stop()
	cfg := sim.FastConfig()
	cfg.MaxNumSeqs = conc + 16
	cfg.TTFTMs, cfg.ITLMs = 50, 20
	cfg.TruthLimit = conc + 64
	s, err := startSim(cfg, true)
	if err != nil {
		return err
	}
	var out probeOutcome
	err = runChild(probeRole, probeJob{URL: s.url, Conc: conc, Output: 32}, &out)
	truths, terr := s.stop(true)
	switch {
	case err != nil:
		return err
	case out.Err != "":
		return fmt.Errorf("probe: %s", out.Err)
	case terr != nil:
		return fmt.Errorf("simulator truth: %w", terr)
	}
	byNonce := map[string]sim.RequestTruth{}
	for _, t := range truths {
		byNonce[t.Nonce] = t
	}
	st, err := studyOf(out, byNonce)
	if err != nil {
		return err
	}
	machine := "quiet"
	if busy > 0 {
		machine = fmt.Sprintf("busy %d", busy)
	}
	lag := st.lag
	for i, name := range []string{"user", "read's kernel time", "interpolated"} {
		head := fmt.Sprintf("| %d | %s | %d | %.1f%% | %s |", conc, machine, st.tokens, 100*float64(st.shared)/float64(st.tokens), pct3(lag))
		if i > 0 {
			head = "| | | | | |"
		}
		fmt.Fprintf(md, "%s %s | %s | %s | %s | %.1f%% |\n", head, name, pct3abs(st.ttft[i]), pct3abs(st.itl[i]), pct3abs(st.e2e[i]), 100*float64(st.inside[i])/float64(st.tokens))
	}
	return nil
}

// study is the probe's events judged against the truth, per way of stamping
// (0 user, 1 the read's kernel time, 2 interpolated).
type study struct {
	tokens, shared int
	lag            []float64
	ttft, itl, e2e [3][]float64
	inside         [3]int
}

// studyOf joins the probe's events with the simulator's truth.
func studyOf(out probeOutcome, truth map[string]sim.RequestTruth) (*study, error) {
	byReq := map[int][]probeEvent{}
	for _, e := range out.Events {
		byReq[e.Req] = append(byReq[e.Req], e)
	}
	st := &study{}
	for req, evs := range byReq {
		t, ok := truth[out.Nonces[req]]
		if !ok {
			return nil, fmt.Errorf("no truth for request %s", out.Nonces[req])
		}
		if err := st.add(evs, t); err != nil {
			return nil, fmt.Errorf("request %s: %w", out.Nonces[req], err)
		}
	}
	return st, nil
}

// add judges one stream's events.
func (st *study) add(evs []probeEvent, t sim.RequestTruth) error {
	n := len(t.TokenWritten)
	if len(evs) != n+1 || evs[n].Tok != -1 {
		return fmt.Errorf("%d events read for %d tokens written", len(evs), n)
	}
	for _, e := range evs {
		if e.KernNs == 0 {
			return fmt.Errorf("a read without a kernel time")
		}
		st.lag = append(st.lag, float64(e.UserNs-e.KernNs)/1e6)
	}
	stamps := [3][]int64{}
	for i := range evs {
		stamps[0] = append(stamps[0], evs[i].UserNs)
		stamps[1] = append(stamps[1], evs[i].KernNs)
	}
	stamps[2] = interpolate(evs)
	win := func(i int) (int64, int64) { return arrival(t, i) }
	for i := range n {
		st.tokens++
		if evs[i+1].Read == evs[i].Read && evs[i+1].Tok >= 0 {
			st.shared++
		}
		b, w := win(i)
		for s := range 3 {
			d := outside(stamps[s][i], b, w)
			if i == n-1 {
				d = nearer(d, stamps[s][i], t)
			}
			if d == 0 {
				st.inside[s]++
			}
			if i == 0 {
				st.ttft[s] = append(st.ttft[s], d)
			} else {
				pb, pw := win(i - 1)
				truthGap := float64((b+w)/2-(pb+pw)/2) / 1e6
				st.itl[s] = append(st.itl[s], float64(stamps[s][i]-stamps[s][i-1])/1e6-truthGap)
			}
		}
	}
	// [DONE] comes in the last token's write.
	b, w := win(n - 1)
	for s := range 3 {
		st.e2e[s] = append(st.e2e[s], nearer(outside(stamps[s][n], b, w), stamps[s][n], t))
	}
	return nil
}

// arrival is when token i's bytes reached the client's kernel, as an
// interval: its write call, or its transmit time when TCP held the bytes
// past the call (a late reader's delayed acknowledgements).
func arrival(t sim.RequestTruth, i int) (int64, int64) {
	if i < len(t.TokenSent) && t.TokenSent[i].After(t.TokenWritten[i]) {
		return t.TokenSent[i].UnixNano(), t.TokenSent[i].UnixNano()
	}
	return t.TokenWriteBegan[i].UnixNano(), t.TokenWritten[i].UnixNano()
}

// nearer is d, or the distance from at to the body's end when that is
// nearer: the last token and [DONE] come in the last write, and a late read
// takes in the body's end (net/http's last chunk) with them.
func nearer(d float64, at int64, t sim.RequestTruth) float64 {
	if t.BodyEnd.IsZero() {
		return d
	}
	if e := outside(at, t.BodyEndBegan.UnixNano(), t.BodyEnd.UnixNano()); math.Abs(e) < math.Abs(d) {
		return e
	}
	return d
}

// interpolate stamps the token chunks of a read that holds several evenly
// between the previous read's kernel time and this read's, when the
// previous read held a token of the stream (else with this read's time).
func interpolate(evs []probeEvent) []int64 {
	out := make([]int64, len(evs))
	for i := 0; i < len(evs); {
		j := i
		for j+1 < len(evs) && evs[j+1].Read == evs[i].Read {
			j++
		}
		k := evs[j].KernNs
		for m := i; m <= j; m++ {
			out[m] = k
			if i > 0 && j > i {
				prev := evs[i-1].KernNs
				out[m] = prev + (k-prev)*int64(m-i+1)/int64(j-i+1)
			}
		}
		i = j + 1
	}
	return out
}

// outside is how far (ms) at lies outside [b, w]: 0 inside, negative before.
func outside(at, b, w int64) float64 {
	switch {
	case at < b:
		return float64(at-b) / 1e6
	case at > w:
		return float64(at-w) / 1e6
	}
	return 0
}

// pct3 is "p50 / p99 / max" of v (ms).
func pct3(v []float64) string {
	return fmt.Sprintf("%.2f / %.2f / %.2f", quantile(v, 0.5), quantile(v, 0.99), slices.Max(v))
}

// pct3abs is pct3 of the absolute values of v, the largest signed.
func pct3abs(v []float64) string {
	a := make([]float64, len(v))
	worst := 0.0
	for i, x := range v {
		a[i] = math.Abs(x)
		if a[i] > math.Abs(worst) {
			worst = x
		}
	}
	return fmt.Sprintf("%.2f / %.2f / %+.2f", quantile(a, 0.5), quantile(a, 0.99), worst)
}

// spinRole is the environment role of a child that only spins: the load
// -busy puts beside an experiment (as ../shared/tools/busy does).
const spinRole = "spin"

func spinChild() int {
	//lint:ignore SA5002 spinning is this child's whole job
	for {
	}
}

// spin starts n spinning children and returns what stops them.
func spin(n int) (stop func()) {
	var cmds []*exec.Cmd
	for range n {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), roleEnv+"="+spinRole)
		if cmd.Start() == nil {
			cmds = append(cmds, cmd)
		}
	}
	return func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}
}

// machines is the loads an experiment runs under: a quiet machine (none
// added), then -busy spinning processes when asked.
func machines(o options) []int {
	if o.busy > 0 {
		return []int{0, o.busy}
	}
	return []int{0}
}

// kernelGives shows what the kernel stamps when a reader comes late: eight
// events written 2 ms apart on one loopback connection, each write its own
// segment, read only after the last has arrived, one event per recvmsg.
func kernelGives(md *strings.Builder) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return err
	}
	c := rxtime.Wrap(raw)
	defer c.Close()
	srv := <-accepted
	if srv == nil {
		return fmt.Errorf("accept failed")
	}
	defer srv.Close()
	st := rxtime.From(c)
	if st == nil {
		return fmt.Errorf("no kernel receive timestamps on this system")
	}
	ev := []byte("data: {\"n\":0}\n\n")
	const n = 8
	var began [n]int64
	for i := range n {
		began[i] = time.Now().UnixNano()
		if _, err := srv.Write(ev); err != nil {
			return err
		}
		time.Sleep(2 * time.Millisecond)
	}
	fmt.Fprintf(md, "\n### What the kernel gives a late reader\n\n")
	fmt.Fprintf(md, "Eight %d-byte events written 2 ms apart to one loopback connection (each write its own segment), read only after the last arrived, one event per `recvmsg` (a buffer of one event's size). Each read's kernel time against its own event's write, and against the last write:\n\n", len(ev))
	fmt.Fprintf(md, "| read | kernel time − its event's write began (ms) | kernel time − the last write began (ms) |\n|---|---|---|\n")
	buf := make([]byte, len(ev))
	for i := range n {
		if _, err := io.ReadFull(c, buf); err != nil {
			return err
		}
		_, k := st.Latest()
		fmt.Fprintf(md, "| %d | %.3f | %.3f |\n", i+1, float64(k-began[i])/1e6, float64(k-began[n-1])/1e6)
	}
	return nil
}
