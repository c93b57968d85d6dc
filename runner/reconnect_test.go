package runner

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rs/zerolog"

	"github.com/runnerbench/runner/internal/testutil"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
	"github.com/runnerbench/runner/sim"
)

// TestReconnectAfterServerClose runs a sweep of 1, 4 and 16 streams against
// a simulator that closes every connection after a stream, as llama-server
// does, with the race that makes it matter always lost (the next request on
// the connection is dropped unanswered). Every request must still succeed:
// the dropped ones are sent again, once, on a new connection, marked
// reconnected and counted per level, and the log says so once. The server
// must have served each request exactly once, the re-sent ones from their
// second send.
func TestReconnectAfterServerClose(t *testing.T) {
	t.Parallel()
	cfg := fastSim()
	cfg.ITLMs = 1
	cfg.CloseAfterStream = true
	cfg.LlamaTimings = true
	s := startSim(t, cfg)
	var logs testutil.SyncBuffer
	col := &collector{}
	e, err := NewEngine(Target{Name: "closer", Endpoint: defaulted(&scenario.Endpoint{Model: "sim"}), BaseURL: s.URL()}, Options{
		Logger: zerolog.New(&logs),
	})
	if err != nil {
		t.Fatal(err)
	}
	collectors.Store(e, col)
	t.Cleanup(func() { collectors.Delete(e); e.Close() })
	st := stage(4, 1, 4, 16)
	st.Requests.Each = 48
	res := runStage(t, e, synthPlan(32, "reference"), st)

	recs := col.measured()
	reconnected := map[int]int{}
	for _, r := range recs {
		if r.Reconnected {
			reconnected[r.Level]++
		}
	}
	total := 0
	for i, p := range res.Points {
		if p.Failed != 0 || p.Completed != 48 {
			t.Errorf("%s: completed %d, failed %d (%v: %v); want 48 and 0", p.Label(), p.Completed, p.Failed, p.ErrorsByKind, p.ErrorSamples)
		}
		if p.Reconnects == 0 || p.Reconnects != reconnected[i] {
			t.Errorf("%s: reconnects %d, records marked %d; want the same, above 0", p.Label(), p.Reconnects, reconnected[i])
		}
		if p.TTFTOverheadP50Ms == nil || p.TTFTOverheadP95Ms == nil || *p.TTFTOverheadP50Ms < 0 {
			t.Errorf("%s: ttft overhead p50 %v p95 %v, want two values >= 0", p.Label(), p.TTFTOverheadP50Ms, p.TTFTOverheadP95Ms)
		}
		total += p.Reconnects
		t.Logf("%s: reconnects %d of %d; ttft overhead p50 %.2f ms", p.Label(), p.Reconnects, p.NRequests, *p.TTFTOverheadP50Ms)
	}

	// The server read every dropped request but served none of them: what it
	// served is each request once, warm-ups included.
	served := map[string]int{}
	for _, tr := range s.Truth() {
		served[tr.Nonce]++
	}
	dropped := s.Counters().Dropped
	warmReconnects := 0
	col.mu.Lock()
	for _, r := range col.reqs {
		if r.Warmup && r.Reconnected {
			warmReconnects++
		}
	}
	all := len(col.reqs)
	col.mu.Unlock()
	if int(dropped) != total+warmReconnects {
		t.Errorf("the server dropped %d requests, the runner re-sent %d", dropped, total+warmReconnects)
	}
	if len(served) != all {
		t.Errorf("the server served %d distinct requests, the runner recorded %d", len(served), all)
	}
	for _, r := range recs {
		if served[r.Nonce] != 1 {
			t.Fatalf("seq %d was served %d times", r.Seq, served[r.Nonce])
		}
		tr := truth(t, s, r.Nonce)
		// The clock starts at the send the server answered.
		if tr.Arrival.Before(r.Start) {
			t.Errorf("seq %d (reconnected %v): start %v after the server's arrival %v", r.Seq, r.Reconnected, r.Start, tr.Arrival)
		}
		st := r.ServerTimings
		if st == nil || st.PredictedN != r.OutputTokens || st.PromptN+st.CacheN != r.InputTokens {
			t.Errorf("seq %d: server timings %+v for %d input, %d output tokens", r.Seq, st, r.InputTokens, r.OutputTokens)
		}
	}
	if n := strings.Count(logs.String(), "closed a kept-alive connection"); n != 1 {
		t.Errorf("the log says %d times that the server closes connections, want once:\n%s", n, logs.String())
	}
}

// TestNoResendAfterResponse: a request that got any response byte is never
// sent again, even on a reused connection; here the server answers 500s and
// cuts streams mid-way on connections it also closes after each stream.
func TestNoResendAfterResponse(t *testing.T) {
	t.Parallel()
	cfg := fastSim()
	cfg.ITLMs = 1
	cfg.Seed = 5
	cfg.CloseAfterStream = true
	cfg.Faults = sim.Faults{HTTP500: 0.25, Disconnect: 0.25, AfterTokens: 2}
	s := startSim(t, cfg)
	e, col := newEngine(t, s.URL(), nil)
	st := stage(6, 4)
	n, w := 64, 0
	st.Requests.Each, st.Warmup = n, &w
	res := runStage(t, e, synthPlan(24, "reference"), st)
	p := res.Points[0]
	served := map[string]int{}
	for _, tr := range s.Truth() {
		served[tr.Nonce]++
	}
	applied := map[sim.Fault]int{}
	for _, r := range col.measured() {
		if served[r.Nonce] != 1 {
			t.Errorf("seq %d was served %d times", r.Seq, served[r.Nonce])
			continue
		}
		tr := truth(t, s, r.Nonce)
		applied[tr.Fault]++
		want := faultKind[tr.Fault]
		if r.ErrorKind != want {
			t.Errorf("seq %d: fault %q classified %q (%s), want %q", r.Seq, tr.Fault, r.ErrorKind, r.Error, want)
		}
	}
	if applied[sim.FaultHTTP500] == 0 || applied[sim.FaultDisconnect] == 0 || p.Reconnects == 0 {
		t.Errorf("faults applied %v, reconnects %d: the test needs each", applied, p.Reconnects)
	}
	if p.Failed != applied[sim.FaultHTTP500]+applied[sim.FaultDisconnect] || p.ErrorsByKind[result.ErrTruncated] != applied[sim.FaultDisconnect] {
		t.Errorf("failed %d, by kind %v; applied %v", p.Failed, p.ErrorsByKind, applied)
	}
}

// partialServer answers the first POST on each connection with a short
// complete stream, and any later POST on the same connection with the start
// of a response and a close: the client then has response bytes but no
// response. It counts the POSTs it read.
type partialServer struct {
	ln    net.Listener
	posts atomic.Int64
}

func startPartialServer(t *testing.T) *partialServer {
	t.Helper()
	ps := &partialServer{}
	ps.ln = testutil.ServeConns(t, ps.serve)
	return ps
}

func (ps *partialServer) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	posts := 0
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		if req.Method != http.MethodPost {
			_, _ = io.WriteString(c, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
			continue
		}
		ps.posts.Add(1)
		if posts++; posts > 1 {
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-")
			return
		}
		body := `data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"length"}]}` + "\n\ndata: [DONE]\n\n"
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	}
}

// TestNoResendAfterPartialResponse: a request whose response had begun when
// the connection died is a failure, never sent again, although it failed
// before a whole response on a reused connection.
func TestNoResendAfterPartialResponse(t *testing.T) {
	t.Parallel()
	ps := startPartialServer(t)
	e, col := newEngine(t, "http://"+ps.ln.Addr().String()+"/v1", nil)
	st := stage(1, 1)
	n, w := 4, 0
	st.Requests.Each, st.Warmup = n, &w
	res := runStage(t, e, synthPlan(8, "reference"), st)
	p := res.Points[0]
	if got := ps.posts.Load(); got != int64(n) {
		t.Errorf("the server read %d requests for %d sent", got, n)
	}
	if p.Completed != 2 || p.Failed != 2 || p.Reconnects != 0 || p.ErrorsByKind[result.ErrConnect] != 2 {
		t.Errorf("completed %d failed %d (%v) reconnects %d; want 2, 2 connect failures, 0", p.Completed, p.Failed, p.ErrorsByKind, p.Reconnects)
	}
	for _, r := range col.measured() {
		if r.Reconnected {
			t.Errorf("seq %d marked reconnected", r.Seq)
		}
	}
}
