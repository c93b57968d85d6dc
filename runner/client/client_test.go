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
