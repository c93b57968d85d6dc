package wire

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/runnerbench/runner/protocol"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/runner/client"
	"github.com/runnerbench/runner/scenario"
	"github.com/runnerbench/runner/sim"
)

// newClient is a client of base as the plan loader leaves an endpoint.
func newClient(t testing.TB, base string) *client.Client {
	t.Helper()
	ep := &scenario.Endpoint{Model: "sim"}
	(&scenario.Plan{Endpoints: map[string]*scenario.Endpoint{"t": ep}}).ApplyDefaults()
	c, err := client.New("t", ep, base, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// chatBody is a pinned chat request for out tokens, its prompt led by nonce.
func chatBody(t testing.TB, nonce string, out int) []byte {
	t.Helper()
	p, _ := protocol.Lookup("chat")
	b, err := p.Encode(protocol.Request{Model: "sim", MaxTokens: out, Pinned: true, Text: "[" + nonce + "] tell me a story"})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// gapLog keeps a request's token gaps and stamps, and checks at each gap
// that the connection the stream is read from is at hand.
type gapLog struct {
	w            *Worker
	gaps         []time.Duration
	at           []time.Time
	noConn       int
	remote       string
	wrongRem     int
	kernel, user int
	shared       int
	lags         []time.Duration
}

func (g *gapLog) Stamp(kernel bool, lag time.Duration) {
	if !kernel {
		g.user++
		return
	}
	g.kernel++
	g.lags = append(g.lags, lag)
}

func (g *gapLog) Shared() { g.shared++ }

func (g *gapLog) Gap(gap time.Duration, at time.Time) {
	g.gaps = append(g.gaps, gap)
	g.at = append(g.at, at)
	switch {
	case g.w.conn == nil:
		g.noConn++
	case g.w.conn.RemoteAddr().String() != g.remote:
		g.wrongRem++
	}
}

// TestWireTimesTheSimulatorsStream sends requests one at a time to the
// simulator and holds each record to the simulator's truth: the token
// chunks and tokens it sent, every gap handed to Gaps (one per chunk after
// the first, read on the connection the client dialled), the clock's own
// arithmetic (TTFT, max ITL), and every token timed by the kernel: at the
// write that carried it or, when the reader took a later write in with it
// (and said so: Shared), at that later one, never before its own. (Runner's
// TestAccuracy holds the engine to the same bound under load.)
func TestWireTimesTheSimulatorsStream(t *testing.T) {
	cfg := sim.FastConfig()
	cfg.ITLMs = 2
	s, err := sim.Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := newClient(t, s.URL())
	p, _ := protocol.Lookup("chat")
	g := &gapLog{remote: strings.TrimPrefix(strings.TrimSuffix(s.URL(), "/v1"), "http://")}
	w := NewWorker(c, p, g)
	g.w = w
	for i := range 4 {
		g.gaps, g.at, g.lags = nil, nil, nil
		g.kernel, g.user, g.shared = 0, 0, 0
		nonce := fmt.Sprintf("wire%d", i)
		const out = 12
		rec := &result.Request{MaxTokens: out}
		w.Do(t.Context(), Request{Body: chatBody(t, nonce, out)}, rec)
		if !rec.OK {
			t.Fatalf("request %d failed: %s %s", i, rec.ErrorKind, rec.Error)
		}
		tr, err := s.TruthByNonce(t.Context(), nonce)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Chunks != tr.Chunks || rec.OutputTokens != tr.OutputTokens || rec.OutputTokens != out || rec.InputTokens != tr.PromptTokens {
			t.Fatalf("request %d: %d chunks, %d/%d tokens; the simulator sent %d chunks, %d/%d tokens",
				i, rec.Chunks, rec.InputTokens, rec.OutputTokens, tr.Chunks, tr.PromptTokens, tr.OutputTokens)
		}
		if len(g.gaps) != rec.Chunks-1 {
			t.Fatalf("request %d: %d gaps for %d chunks", i, len(g.gaps), rec.Chunks)
		}
		if g.noConn > 0 || g.wrongRem > 0 {
			t.Fatalf("request %d: the stream reader saw no connection %d times, another one %d times", i, g.noConn, g.wrongRem)
		}
		first := g.at[0].Add(-g.gaps[0])
		var maxGap time.Duration
		for k := range g.gaps {
			maxGap = max(maxGap, g.gaps[k])
			if k > 0 && g.at[k].Sub(g.at[k-1]) != g.gaps[k] {
				t.Fatalf("request %d: gap %d is %v, its tokens %v apart", i, k, g.gaps[k], g.at[k].Sub(g.at[k-1]))
			}
		}
		if got, want := *rec.TTFTMs, Ms(first.Sub(rec.Start)); got != want {
			t.Errorf("request %d: TTFT %.6f ms, the first token's arrival says %.6f", i, got, want)
		}
		if got, want := *rec.MaxITLMs, Ms(maxGap); got != want {
			t.Errorf("request %d: max ITL %.6f ms, the largest gap %.6f", i, got, want)
		}
		if first.Before(tr.TokenScheduled[0]) || g.at[len(g.at)-1].Before(tr.TokenScheduled[len(tr.TokenScheduled)-1]) {
			t.Errorf("request %d: a token seen before the simulator made it", i)
		}
		if runtime.GOOS == "linux" && (g.kernel != rec.Chunks || g.user != 0 || len(g.lags) != rec.Chunks) {
			t.Fatalf("request %d: %d chunks, %d timed by the kernel, %d by the runner's clock", i, rec.Chunks, g.kernel, g.user)
		}
		late := 0
		for k, at := range append([]time.Time{first}, g.at...) {
			switch first, j := tr.WriteOf(at); {
			case first <= k && k <= j:
			case j == len(tr.TokenWritten) && k == j-1:
				// The last token, read with the body's end (net/http's last
				// chunk): no later token shares its read.
			case j > k:
				late++ // taken in with a later write: carries its time
			default:
				t.Errorf("request %d: token %d timed %v after its write began, in no write of it or a later token", i, k, at.Sub(tr.TokenWriteBegan[k]))
			}
		}
		if late > g.shared {
			t.Errorf("request %d: %d tokens carry a later write's time, %d said to share a read", i, late, g.shared)
		}
		// The end ([DONE]) usually comes in the last token's read, and has
		// its time: equal, up to the float sum's last bit.
		if rec.E2EMs < *rec.TTFTMs+Ms(g.at[len(g.at)-1].Sub(first))-1e-9 {
			t.Errorf("request %d: E2E %.3f ms ends before its last token", i, rec.E2EMs)
		}
	}
}

// TestReplyCaptured: a request's Reply holds the response body as the wire
// read it, which the protocol reads the assistant's reply from; a body past
// protocol.MaxCapture is kept up to the bound.
func TestReplyCaptured(t *testing.T) {
	s, err := sim.Start(t.Context(), sim.FastConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p, _ := protocol.Lookup("chat")
	w := NewWorker(newClient(t, s.URL()), p, nil)
	var cp Capture
	rec := &result.Request{}
	w.Do(t.Context(), Request{Body: chatBody(t, "reply1", 5), Reply: &cp}, rec)
	if !rec.OK {
		t.Fatalf("failed: %s", rec.Error)
	}
	if !strings.HasPrefix(string(cp.Bytes()), "data: ") || !strings.Contains(string(cp.Bytes()), "[DONE]") {
		t.Fatalf("capture %q is not the stream", cp.Bytes())
	}
	if reply := p.(protocol.Conversational).Reply(cp.Bytes()); reply == "" {
		t.Fatal("no reply in the captured stream")
	}
	cp.Reset()
	chunk := []byte(strings.Repeat("x", 1<<20))
	for range 5 {
		if n, err := cp.Write(chunk); n != len(chunk) || err != nil {
			t.Fatalf("write %d %v", n, err)
		}
	}
	if len(cp.Bytes()) != protocol.MaxCapture {
		t.Fatalf("captured %d bytes, bound %d", len(cp.Bytes()), protocol.MaxCapture)
	}
}

// fixedStream serves a chat stream of n one-token chunks, written at once
// from bytes made beforehand, so the server allocates per request, not per
// chunk.
func fixedStream(n int) http.HandlerFunc {
	var b strings.Builder
	for range n {
		b.WriteString(`data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"tok"},"finish_reason":null}]}` + "\n\n")
	}
	b.WriteString(`data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"length"}],"usage":{"prompt_tokens":9,"completion_tokens":` + fmt.Sprint(n) + `,"total_tokens":9}}` + "\n\ndata: [DONE]\n\n")
	body := []byte(b.String())
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		_, _ = w.Write(body)
	}
}

// BenchmarkChunkAllocs shows that reading a stream allocates nothing per
// chunk: it reads streams of 32 and of 512 one-token chunks from a server
// that writes each stream's bytes at once, and reports the allocations
// per request of each and their difference per extra chunk (allocs/chunk,
// which must be ~0: what a request allocates, it allocates once).
func BenchmarkChunkAllocs(b *testing.B) {
	const short, long = 32, 512
	mux := http.NewServeMux()
	mux.Handle("/short/v1/chat/completions", fixedStream(short))
	mux.Handle("/long/v1/chat/completions", fixedStream(long))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	p, _ := protocol.Lookup("chat")
	gaps := discard{}
	perReq := func(w *Worker, n int) float64 {
		body := chatBody(b, "alloc", n)
		const reqs = 64
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		for range reqs {
			rec := &result.Request{MaxTokens: n}
			w.Do(b.Context(), Request{Body: body}, rec)
			if !rec.OK || rec.OutputTokens != n {
				b.Fatalf("%d tokens: ok %v %s", rec.OutputTokens, rec.OK, rec.Error)
			}
		}
		runtime.ReadMemStats(&m1)
		return float64(m1.Mallocs-m0.Mallocs) / reqs
	}
	ws := NewWorker(newClient(b, srv.URL+"/short/v1"), p, gaps)
	wl := NewWorker(newClient(b, srv.URL+"/long/v1"), p, gaps)
	perReq(ws, short) // open the connections
	perReq(wl, long)
	var aShort, aLong float64
	for b.Loop() {
		aShort += perReq(ws, short)
		aLong += perReq(wl, long)
	}
	n := float64(b.N)
	b.ReportMetric(aShort/n, "allocs/req@32")
	b.ReportMetric(aLong/n, "allocs/req@512")
	b.ReportMetric((aLong-aShort)/n/(long-short), "allocs/chunk")
}

type discard struct{}

func (discard) Gap(time.Duration, time.Time) {}
func (discard) Stamp(bool, time.Duration)    {}
func (discard) Shared()                      {}
