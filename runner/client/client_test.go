package client

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/runnerbench/runner/internal/testutil"
	"github.com/runnerbench/runner/scenario"
	"github.com/runnerbench/runner/sim"
)

// endpoint is an endpoint as the plan loader leaves it (defaults applied).
func endpoint(model string) *scenario.Endpoint {
	ep := &scenario.Endpoint{Model: model}
	(&scenario.Plan{Endpoints: map[string]*scenario.Endpoint{"t": ep}}).ApplyDefaults()
	return ep
}

// closingServer answers the first POST on each connection with a complete
// response that offers keep-alive, and closes the connection, unanswered,
// on any later one, as llama-server's race does. It counts POSTs and
// connections.
type closingServer struct {
	ln           net.Listener
	posts, conns atomic.Int64
}

func startClosingServer(t *testing.T) *closingServer {
	t.Helper()
	s := &closingServer{}
	s.ln = testutil.ServeConns(t, func(c net.Conn) {
		s.conns.Add(1)
		s.serve(c)
	})
	return s
}

func (s *closingServer) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for n := 0; ; n++ {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		s.posts.Add(1)
		if n > 0 {
			return // closed under a request written on a kept-alive connection
		}
		const body = "ok"
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	}
}

// TestDoResendsOnceAfterClosedKeepAlive: a POST written on a kept-alive
// connection the server closed without answering is sent again, once, on a
// connection of its own; sent sees both sends (the second marked again),
// and the connection Do returns is the one the answer came on.
func TestDoResendsOnceAfterClosedKeepAlive(t *testing.T) {
	s := startClosingServer(t)
	c, err := New("t", endpoint("m"), "http://"+s.ln.Addr().String()+"/v1", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	post := func() (resp *http.Response, conn net.Conn, sends []bool, err error) {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, c.URL("/x"), strings.NewReader("{}"))
		resp, conn, err = c.Do(req, func(_ time.Time, again bool) { sends = append(sends, again) })
		return resp, conn, sends, err
	}
	resp, first, sends, err := post()
	if err != nil || len(sends) != 1 || sends[0] || first == nil {
		t.Fatalf("first POST: err %v, sends %v, conn %v", err, sends, first)
	}
	_, _ = io.ReadAll(resp.Body)
	resp.Body.Close()

	resp, second, sends, err := post()
	if err != nil {
		t.Fatalf("second POST: %v", err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); string(b) != "ok" {
		t.Fatalf("second POST answered %q", b)
	}
	if len(sends) != 2 || sends[0] || !sends[1] {
		t.Fatalf("sends %v, want a first send and one re-send", sends)
	}
	if second == nil || second.LocalAddr().String() == first.LocalAddr().String() {
		t.Fatalf("the re-send's connection %v is not a new one (first %v)", second, first.LocalAddr())
	}
	if p, n := s.posts.Load(), s.conns.Load(); p != 3 || n != 2 {
		t.Fatalf("the server read %d POSTs on %d connections, want 3 on 2", p, n)
	}
}

// TestDoNoResendWhenCancelled: a request whose context has ended is not
// sent again, whatever the error.
func TestDoNoResendWhenCancelled(t *testing.T) {
	s := startClosingServer(t)
	c, err := New("t", endpoint("m"), "http://"+s.ln.Addr().String()+"/v1", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.URL("/x"), strings.NewReader("{}"))
	sends := 0
	if _, _, err := c.Do(req, func(time.Time, bool) { sends++ }); err == nil || sends != 1 {
		t.Fatalf("err %v after %d sends, want an error after one", err, sends)
	}
}

// TestWaitReadyModelNotListed: a plan's model the server does not list is
// warned about by WaitReady, naming the models it does list; the listed
// model is not.
func TestWaitReadyModelNotListed(t *testing.T) {
	s, err := sim.Start(t.Context(), sim.FastConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, c := range []struct {
		model, want string
	}{{"llama-3-8b", `model "llama-3-8b" is not among the models`}, {"sim", ""}} {
		cl, err := New("t", endpoint(c.model), s.URL(), zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.WaitReady(t.Context(), 5*time.Second); err != nil {
			t.Fatal(err)
		}
		w := strings.Join(cl.Warnings(), "\n")
		if (c.want == "") != (w == "") || !strings.Contains(w, c.want) || c.want != "" && !strings.Contains(w, `("sim")`) {
			t.Errorf("model %s: warnings %q, want %q", c.model, w, c.want)
		}
		cl.Close()
	}
}

// TestExcerpt: a server's text is cut at a rune under 200 bytes, made
// valid UTF-8 and one line.
func TestExcerpt(t *testing.T) {
	long := strings.Repeat("é", 150) // 300 bytes
	for _, c := range []struct{ in, want string }{
		{"  a\n\tb  c ", "a b c"},
		{"x\xffy", "x\uFFFDy"},
		{long, strings.Repeat("é", 100) + "…"},
	} {
		if got := Excerpt([]byte(c.in)); got != c.want {
			t.Errorf("Excerpt(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// primeServer serves the model list over HTTP/1.1 on loopback, counting the
// connections it accepts; a GET is held until release is closed when hold
// says so.
func primeServer(t *testing.T, hold func(n int64) bool, release chan struct{}) (url string, conns, gets *atomic.Int64) {
	t.Helper()
	conns, gets = new(atomic.Int64), new(atomic.Int64)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if hold(gets.Add(1)) {
				select {
				case <-release:
				case <-r.Context().Done():
				}
			}
			_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
		}),
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateNew {
				conns.Add(1)
			}
		},
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String() + "/v1", conns, gets
}

// primeClient is a client of url's endpoint with its pool sized for n
// connections, closed when the test ends.
func primeClient(t *testing.T, url string, n int) *Client {
	t.Helper()
	c, err := New("t", endpoint("m"), url, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	c.Resize(n)
	return c
}

// TestPrimeOpensEachConnection: Prime(n) leaves n connections open, one per
// GET, even against a server that answers at once: a GET that handed its
// connection back before the others had theirs would let them reuse it,
// and the level would dial the rest inside its measured window. n is more
// than twice the GETs Prime has in flight at once (primeSenders), so each
// sender sends several, each on a connection of its own.
func TestPrimeOpensEachConnection(t *testing.T) {
	const n = 2*primeSenders + 37
	url, conns, _ := primeServer(t, func(int64) bool { return false }, nil)
	c := primeClient(t, url, n)
	c.Prime(t.Context(), n)
	if got := conns.Load(); got != n {
		t.Fatalf("Prime(%d) opened %d connections, want %d", n, got, n)
	}
	// They are kept: n more GETs at once open none.
	c.Prime(t.Context(), n)
	if got := conns.Load(); got != n {
		t.Fatalf("a second Prime(%d) found %d connections open, want %d", n, got, n)
	}
}

// TestPrimeGivesUpOnStall: a GET the server never answers holds Prime for
// primeStall after the last answer, not longer; the others' connections are
// kept.
func TestPrimeGivesUpOnStall(t *testing.T) {
	t.Parallel()
	const n = 8
	release := make(chan struct{})
	defer close(release)
	url, conns, _ := primeServer(t, func(k int64) bool { return k == 1 }, release)
	c := primeClient(t, url, n)
	start := time.Now()
	done := make(chan struct{})
	go func() { c.Prime(t.Context(), n); close(done) }()
	select {
	case <-done:
	case <-time.After(primeStall + time.Minute):
		t.Fatalf("Prime still waiting %v after its start", primeStall+time.Minute)
	}
	if d := time.Since(start); d < primeStall {
		t.Fatalf("Prime gave up after %v, before its bound %v passed without an answer", d, primeStall)
	}
	if got := conns.Load(); got != n {
		t.Fatalf("Prime(%d) opened %d connections, want %d", n, got, n)
	}
	// The answered GETs' connections went back to the pool: a request
	// after Prime takes one instead of dialling.
	resp, err := c.Pooled().Get(c.URL("/models"))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if got := conns.Load(); got != n {
		t.Fatalf("a GET after a Prime(%d) that gave up found %d connections, want %d: the answered GETs' connections were closed, not kept", n, got, n)
	}
}

// TestPrimeHoldsConnections: while one GET waits for its answer, the GETs
// already answered keep their connections: a request beside them finds no
// idle connection and dials its own. (Had they handed theirs back, it would
// have taken one, as late GETs of a large Prime did.)
func TestPrimeHoldsConnections(t *testing.T) {
	const n = 8
	release := make(chan struct{})
	url, conns, gets := primeServer(t, func(k int64) bool { return k == 1 }, release)
	c := primeClient(t, url, n)
	done := make(chan struct{})
	go func() { c.Prime(t.Context(), n); close(done) }()
	for deadline := time.Now().Add(time.Minute); gets.Load() < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the server saw %d of Prime(%d)'s GETs in a minute", gets.Load(), n)
		}
	}
	resp, err := c.Pooled().Get(c.URL("/models"))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	close(release)
	<-done
	if got := conns.Load(); got != n+1 {
		t.Fatalf("a GET beside Prime(%d) found the server with %d connections, want %d: the answered GETs handed theirs back", n, got, n+1)
	}
}

// TestPrimeSaysWhenAServerServesFewConnections: against a server that
// serves at most 3 connections at once (the simulator's max_connections, as
// llama-server's HTTP threads), Prime(8) is answered on 3, gives up after
// primeStall, and says so once per endpoint with those figures; a Prime
// answered in full says nothing.
func TestPrimeSaysWhenAServerServesFewConnections(t *testing.T) {
	t.Parallel()
	cfg := sim.FastConfig()
	cfg.MaxConnections = 3
	s, err := sim.Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var log strings.Builder
	c, err := New("t", endpoint(cfg.Model), s.URL(), zerolog.New(&log))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Resize(8)
	c.Prime(t.Context(), 3) // answered in full: nothing to say
	if log.Len() != 0 {
		t.Fatalf("Prime(3) on 3 connections logged %q", log.String())
	}
	start := time.Now()
	c.Prime(t.Context(), 8)
	if d := time.Since(start); d < primeStall {
		t.Fatalf("Prime(8) returned after %v, before %v without an answer", d, primeStall)
	}
	want := "were answered on 3, then on none for 1s; the level went on, its requests opening the connections it lacked. Servers that serve a limited number of connections at once do this"
	if got := log.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, want) || !strings.Contains(got, `"connections":8`) || !strings.Contains(got, `"answered":3`) {
		t.Fatalf("Prime(8) against 3 connections logged %q, want one warning saying %q", got, want)
	}
	c.Prime(t.Context(), 8)
	if n := strings.Count(log.String(), "\n"); n != 1 {
		t.Fatalf("a second stalled Prime logged again (%d lines): once per endpoint", n)
	}
}

// TestPrimeWaitsWhileDialling: a connection still being opened is progress.
// While one is (the client's dialing count held up for 2.5 s), Prime does
// not give up on GETs the server holds unanswered; once none is, it gives up
// primeStall later.
func TestPrimeWaitsWhileDialling(t *testing.T) {
	t.Parallel()
	const n, dial = 4, 2500 * time.Millisecond
	release := make(chan struct{})
	defer close(release)
	url, _, gets := primeServer(t, func(k int64) bool { return k > 2 }, release)
	c := primeClient(t, url, n)
	start := time.Now()
	done := make(chan struct{})
	go func() { c.Prime(t.Context(), n); close(done) }()
	for deadline := time.Now().Add(time.Minute); gets.Load() < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the server saw %d of Prime(%d)'s GETs in a minute", gets.Load(), n)
		}
	}
	c.dialing.Add(1) // a dial that takes a while
	time.Sleep(dial)
	c.dialing.Add(-1)
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("Prime still waiting a minute after the last dial ended")
	}
	if d := time.Since(start); d < dial+primeStall {
		t.Fatalf("Prime gave up after %v, while a connection was being opened (until %v) or before %v after", d, dial, primeStall)
	}
}

// TestPrimeSaysWhenNoneAnswered: against a server that answers none of
// Prime's GETs, Prime gives up after primeStall and says that none was
// answered, without the sentence about a connection limit (there is no
// count to give).
func TestPrimeSaysWhenNoneAnswered(t *testing.T) {
	t.Parallel()
	const n = 4
	release := make(chan struct{})
	defer close(release)
	url, _, _ := primeServer(t, func(int64) bool { return true }, release)
	var log strings.Builder
	c, err := New("t", endpoint("m"), url, zerolog.New(&log))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Resize(n)
	c.Prime(t.Context(), n)
	want := "sent on 4 connections, to open them before a level, were answered on none within 1s; the level went on, its requests opening their connections"
	if got := log.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, want) || strings.Contains(got, "limited number") || !strings.Contains(got, `"answered":0`) {
		t.Fatalf("Prime(%d) answered on none logged %q, want one warning saying %q", n, got, want)
	}
}
