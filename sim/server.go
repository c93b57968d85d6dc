// Package sim is the built-in engine simulator: an OpenAI-compatible HTTP
// server backed by a model of a continuous-batching engine whose every
// scheduled time is known. Tests run the runner against it over real loopback
// HTTP and compare what the runner measured with the ground truth the
// simulator recorded (Server.Truth, TruthByNonce).
//
// Endpoints: POST /v1/chat/completions and /v1/completions (streaming SSE in
// vLLM's chunk format, or whole), /v1/responses (OpenAI's Responses events)
// and /v1/messages (Anthropic's Messages events) (typed.go), POST /v1/embeddings, /v1/rerank and /score (also at /v1/score, as
// vLLM serves it) (whole JSON answers, batch.go), GET /v1/models, GET /health, GET /metrics
// (vLLM's Prometheus names), POST /tokenize (vLLM's), GET /sim/truth.
//
// One goroutine steps the batch (engine.go): a FIFO queue, admission up to
// max_num_seqs, a prefix cache over 16-token blocks, prefill and decode step
// costs (see Config). Per-request handlers wait on the engine's notifications
// and write chunks as tokens become ready (stream.go). Randomness (natural
// lengths, faults, draft acceptance) comes from a generator per request seeded
// by (Config.Seed, arrival index), so a run is reproducible for a given
// arrival order however the requests end up batched.
//
// Tests use FastConfig (5 ms prefill step, 1 ms decode step); plans/sim/
// holds sample config files.
package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runnerbench/runner/internal/rxtime"
)

// Server is a running simulator. Its handler can be served by Start (own
// loopback listener) or by the caller (httptest.NewServer(s.Handler())).
type Server struct {
	cfg   Config
	epoch time.Time
	m     *metrics
	eng   *engine
	mux   *http.ServeMux

	srv *http.Server
	ln  net.Listener
	url string

	arrMu     sync.Mutex // orders arrivals: index assignment through engine submit
	mu        sync.Mutex
	next      int // arrival index
	records   []*record
	byNonce   map[string]*record
	byID      map[string]*record
	closeOnce sync.Once
	stopCtx   func() bool
}

// New builds a simulator without listening: serve s.Handler() yourself and
// call Close when done. cfg gets Defaults and must Validate.
func New(cfg Config) (*Server, error) {
	cfg = cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("simulator config: %w", err)
	}
	s := &Server{
		cfg: cfg,
		// Every truth time is the epoch plus a monotonic duration, written as
		// wall-clock time: the epoch's two readings must be taken together.
		epoch:   rxtime.Now(),
		m:       newMetrics(cfg.KVCacheBlocks),
		byNonce: make(map[string]*record),
		byID:    make(map[string]*record),
	}
	s.eng = newEngine(cfg, s.epoch, s.m)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { s.serveCompletion(w, r, apiChat) })
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) { s.serveCompletion(w, r, apiCompletions) })
	mux.HandleFunc("POST /v1/responses", func(w http.ResponseWriter, r *http.Request) { s.serveCompletion(w, r, apiResponses) })
	mux.HandleFunc("POST /v1/messages", func(w http.ResponseWriter, r *http.Request) { s.serveCompletion(w, r, apiMessages) })
	mux.HandleFunc("POST /v1/embeddings", func(w http.ResponseWriter, r *http.Request) { s.serveBatch(w, r, batchEmbeddings) })
	mux.HandleFunc("POST /v1/rerank", func(w http.ResponseWriter, r *http.Request) { s.serveBatch(w, r, batchRerank) })
	mux.HandleFunc("POST /score", func(w http.ResponseWriter, r *http.Request) { s.serveBatch(w, r, batchScore) })
	mux.HandleFunc("POST /v1/score", func(w http.ResponseWriter, r *http.Request) { s.serveBatch(w, r, batchScore) })
	mux.HandleFunc("GET /v1/models", s.serveModels)
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("POST /tokenize", s.serveTokenize)
	mux.HandleFunc("GET /metrics", s.serveMetrics)
	mux.HandleFunc("GET /sim/truth", s.serveTruth)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "NotFoundError", "no route "+r.Method+" "+r.URL.Path)
	})
	s.mux = mux
	return s, nil
}

// Start starts a simulator on an ephemeral loopback port (127.0.0.1:0). It
// stops when ctx is cancelled or Close is called.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	return StartOn(ctx, "127.0.0.1:0", cfg)
}

// StartOn is Start on a given address, which must be a loopback one.
func StartOn(ctx context.Context, addr string, cfg Config) (*Server, error) {
	if err := CheckLoopback(addr); err != nil {
		return nil, err
	}
	s, err := New(cfg)
	if err != nil {
		return nil, err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		s.eng.close()
		return nil, fmt.Errorf("simulator listen on %s: %w", addr, err)
	}
	s.ln = ln
	s.url = "http://" + ln.Addr().String() + "/v1"
	s.srv = &http.Server{
		Handler: s.dropClosed(s.mux),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			cs := new(connState)
			cs.conn, _ = c.(*clockConn)
			return context.WithValue(ctx, connKey{}, cs)
		},
		ReadHeaderTimeout: 10 * time.Second,
		// Thousands of idle keep-alive streams are the point; no write timeout,
		// since stalls and long generations are deliberate.
		IdleTimeout: 2 * time.Minute,
		// Clients that drop connections or fail TLS are part of what the
		// simulator is for; net/http's per-connection complaints would only
		// clutter the runner's stderr.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	cl := &clockListener{Listener: ln, s: s, closed: make(chan struct{})}
	if n := cfg.MaxConnections; n > 0 {
		cl.slots = make(chan struct{}, n)
	}
	go func() { _ = s.srv.Serve(cl) }()
	s.stopCtx = context.AfterFunc(ctx, func() { s.Close() })
	return s, nil
}

// connKey keys a connection's connState in its requests' contexts.
type connKey struct{}

// connState is what the simulator remembers about one client connection.
type connState struct {
	// closed: the connection carried a stream and close_after_stream is set,
	// so it counts as closed by the server.
	closed atomic.Bool
	// conn is the connection as accepted (nil behind a front end of
	// another's, such as a TLS test server's).
	conn *clockConn
}

// clockListener hands out clockConns, at most cap(slots) open at once
// (max_connections; nil: no limit).
type clockListener struct {
	net.Listener
	s      *Server
	slots  chan struct{}
	closed chan struct{}
	once   sync.Once
}

// Accept implements net.Listener. Under max_connections it takes the next
// connection only once one of those open has closed, as a server with a
// thread per connection does: the kernel completes the handshakes
// meanwhile, and a request sent on a waiting connection waits unread.
func (l *clockListener) Accept() (net.Conn, error) {
	if l.slots != nil {
		select {
		case l.slots <- struct{}{}:
		case <-l.closed:
			return nil, net.ErrClosed
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		if l.slots != nil {
			<-l.slots
		}
		return nil, err
	}
	return &clockConn{Conn: c, s: l.s, tx: newTxLog(c), slots: l.slots}, nil
}

// Close implements net.Listener, ending an Accept that waits for a slot.
func (l *clockListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// clockConn times the write that ends a response's body. net/http writes a
// chunked body's last chunk itself, after the handler has returned, so a
// client whose read takes it in with the stream's last event sees that
// write's time; the truth records it (BodyEndBegan, BodyEnd) so the client
// can be held to it.
type clockConn struct {
	net.Conn
	s     *Server
	after atomic.Pointer[record] // the response whose body's end is the next write
	// tx is the kernel's transmit times of the connection's writes (nil:
	// none); lastKey their key for the last byte written so far.
	tx      *txLog
	lastKey atomic.Uint32
	keyed   atomic.Bool // lastKey is set
	// slots is the listener's (max_connections), whose slot this
	// connection gives back when it closes (nil: no limit).
	slots    chan struct{}
	released atomic.Bool
}

// Write implements net.Conn.
func (c *clockConn) Write(p []byte) (int, error) {
	r := c.after.Load()
	var began time.Time
	if r != nil {
		began = time.Now()
	}
	n, err := c.Conn.Write(p)
	if c.tx != nil {
		if key, ok := c.tx.wrote(n); ok {
			c.lastKey.Store(key)
			c.keyed.Store(true)
		}
	}
	if r != nil && c.after.CompareAndSwap(r, nil) {
		if err == nil {
			done := time.Now()
			c.s.mu.Lock()
			r.t.BodyEndBegan, r.t.BodyEnd = began, done
			r.bodyKey, r.bodyKeyed = c.lastKey.Load(), c.keyed.Load()
			c.s.mu.Unlock()
		}
		close(r.bodyEnd)
	}
	return n, err
}

// key is the transmit-time key of the last byte written so far (false: no
// transmit times, or nothing written).
func (c *clockConn) key() (uint32, bool) {
	if c == nil || c.tx == nil || !c.keyed.Load() {
		return 0, false
	}
	return c.lastKey.Load(), true
}

// Close implements net.Conn: a body's end never written is timed as none,
// and the transmit times the kernel queued are read before they go.
func (c *clockConn) Close() error {
	if r := c.after.Swap(nil); r != nil {
		close(r.bodyEnd)
	}
	if c.tx != nil {
		c.tx.flush()
	}
	if c.slots != nil && c.released.CompareAndSwap(false, true) {
		<-c.slots
	}
	return c.Conn.Close()
}

// timeBodyEnd asks the request's connection to time its next write: the
// end of rec's body, once the handler (past its last write) returns. It is
// called before rec's done closes, which orders bodyEnd's making before
// every wait for it.
func timeBodyEnd(r *http.Request, rec *record) {
	if c, ok := r.Context().Value(connKey{}).(*connState); ok && c.conn != nil {
		rec.bodyEnd = make(chan struct{})
		if old := c.conn.after.Swap(rec); old != nil {
			close(old.bodyEnd) // an earlier response's end the connection never wrote
		}
	}
}

// markClosed records that the request's connection is to be treated as
// closed once this response is done (close_after_stream).
func markClosed(r *http.Request) {
	if c, ok := r.Context().Value(connKey{}).(*connState); ok {
		c.closed.Store(true)
	}
}

// dropClosed wraps h: a request arriving on a connection the server counts
// as closed (see Config.CloseAfterStream) gets no response; the connection
// is dropped, as a request written to a connection llama-server had just
// closed is.
func (s *Server) dropClosed(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, ok := r.Context().Value(connKey{}).(*connState); ok && c.closed.Load() {
			if strings.HasSuffix(r.URL.Path, "/completions") || strings.HasSuffix(r.URL.Path, "/responses") || strings.HasSuffix(r.URL.Path, "/messages") || strings.HasSuffix(r.URL.Path, "/embeddings") || strings.HasSuffix(r.URL.Path, "/rerank") || strings.HasSuffix(r.URL.Path, "/score") {
				s.m.droppedConns.Add(1)
			}
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				_ = conn.Close()
			}
			return
		}
		h.ServeHTTP(w, r)
	})
}

// CheckLoopback refuses any listen address that is not a loopback IP, so the
// simulator can never be exposed beyond the machine by mistake.
func CheckLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("listen address %q is not loopback (use 127.0.0.1 or ::1)", addr)
	}
	return nil
}

// URL returns the OpenAI base URL, http://127.0.0.1:PORT/v1 ("" for a Server
// made by New, which does not listen).
func (s *Server) URL() string { return s.url }

// Handler returns the HTTP handler serving every endpoint.
func (s *Server) Handler() http.Handler { return s.mux }

// Config returns the effective configuration (defaults applied).
func (s *Server) Config() Config { return s.cfg }

// Close stops the listener (if any), drops open connections and stops the
// engine. It is safe to call more than once.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		if s.stopCtx != nil {
			s.stopCtx()
		}
		if s.srv != nil {
			err = s.srv.Close()
		}
		s.eng.close()
	})
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// Fault names a failure injected into a request ("" for none).
type Fault string

// The faults of Config.Faults.
const (
	FaultNone          Fault = ""
	FaultHTTP429       Fault = "http_429"
	FaultHTTP500       Fault = "http_500"
	FaultHTTP503       Fault = "http_503"
	FaultDisconnect    Fault = "disconnect"
	FaultMalformed     Fault = "malformed"
	FaultStall         Fault = "stall"
	FaultTruncate      Fault = "truncate"
	FaultErrorInStream Fault = "error_in_stream"
	FaultHTML          Fault = "html"
	FaultBadUsage      Fault = "bad_usage"
)

// RequestTruth is what the simulator scheduled and did for one request.
type RequestTruth struct {
	Index    int    `json:"index"`    // arrival order, from 0
	ID       string `json:"id"`       // the response id (chatcmpl-… / cmpl-… / resp_… / msg_… / embd-… / rerank-… / score-…)
	Endpoint string `json:"endpoint"` // "chat", "completions", "responses", "messages", "embeddings", "rerank" or "score"
	Nonce    string `json:"nonce"`    // the leading [nonce] of the prompt, without brackets ("" if none)
	Stream   bool   `json:"stream"`
	Status   int    `json:"status"` // HTTP status sent
	// Model is the request's model; Traceparent the W3C traceparent header
	// it carried ("" without one).
	Model       string `json:"model,omitempty"`
	Traceparent string `json:"traceparent,omitempty"`

	PromptTokens        int    `json:"prompt_tokens"`          // as in usage.prompt_tokens
	Inputs              int    `json:"inputs,omitempty"`       // embeddings' inputs, the documents of rerank and score
	ImageTokens         int    `json:"image_tokens,omitempty"` // of PromptTokens, the images' (chat image_url parts)
	PromptTokensNoNonce int    `json:"prompt_tokens_no_nonce"` // PromptTokens minus the tokens of "[nonce]"
	CachedTokens        int    `json:"cached_tokens"`          // served from the prefix cache
	MaxTokens           int    `json:"max_tokens"`
	IgnoreEOS           bool   `json:"ignore_eos"`
	TargetTokens        int    `json:"target_tokens"`    // tokens the engine was to generate (max_tokens or a natural stop)
	OutputTokens        int    `json:"output_tokens"`    // tokens actually sent to the client
	ReasoningTokens     int    `json:"reasoning_tokens"` // of OutputTokens, sent as reasoning
	FinishReason        string `json:"finish_reason"`
	Fault               Fault  `json:"fault"`
	FaultAfterTokens    int    `json:"fault_after_tokens"` // tokens sent before a mid-stream fault struck
	Queued              bool   `json:"queued"`             // waited in the FIFO queue behind a full batch
	Preemptions         int    `json:"preemptions"`        // times the engine preempted it (its KV cache full)
	Chunks              int    `json:"chunks"`             // SSE data lines carrying tokens

	// ToolCall: the response is one call of a tool of the request (the one
	// its tool_choice names, or its first), its OutputTokens the arguments'
	// tokens, streamed as argument deltas.
	ToolCall bool `json:"tool_call,omitempty"`

	// Speculative decoding: decode steps (drafts), drafted and accepted tokens.
	SpecDrafts      int `json:"spec_drafts"`
	SpecDraftTokens int `json:"spec_draft_tokens"`
	SpecAccepted    int `json:"spec_accepted"`

	Arrival      time.Time `json:"arrival"`       // request decoded and submitted to the engine
	PrefillStart time.Time `json:"prefill_start"` // start of the step that admitted it (zero if never admitted)
	FirstToken   time.Time `json:"first_token"`   // scheduled emission of the first token
	End          time.Time `json:"end"`           // after the last write (or when the handler gave up)
	// TokenScheduled[i] is when the engine produced token i; TokenWritten[i]
	// is when the chunk carrying it had been written and flushed to the
	// connection (after the write returned), so the difference is the
	// server's own delivery delay. TokenWriteBegan[i] is when that write
	// began: the chunk's bytes reached the kernel between the two, so a
	// client's kernel receive time of them on loopback lies inside
	// [TokenWriteBegan[i], TokenWritten[i]] (the last chunk carries the
	// stream's end too).
	TokenScheduled  []time.Time `json:"token_scheduled"`
	TokenWriteBegan []time.Time `json:"token_write_began"`
	TokenWritten    []time.Time `json:"token_written"`
	// TokenSent[i] is when the kernel transmitted the write carrying token
	// i (its software transmit timestamp, on Linux): inside the write
	// call, unless TCP held the bytes (a congestion window waiting on a
	// late reader's acknowledgements), and on loopback the instant the
	// client's kernel received them. Nil without transmit times; a zero
	// element, a time never reported.
	TokenSent []time.Time `json:"token_sent,omitempty"`
	// Retransmits is how many segments the simulator's kernel sent again
	// while it wrote the response (TCP_INFO, on Linux): a retransmission
	// carries no transmit time, and when the first copy was lost the
	// client's kernel receives the bytes when it arrives.
	Retransmits int `json:"retransmits,omitempty"`
	// BodyEndBegan and BodyEnd bracket the write that ended a streamed
	// response's body on the connection: net/http's last chunk, written
	// after the handler returned, which a client reading late takes in
	// with the last event (Truth, TruthByNonce and TruthByID wait for it).
	// Zero when the simulator does not see it (HTTP/2, behind another's
	// TLS front, a client gone before it).
	BodyEndBegan time.Time `json:"body_end_began,omitzero"`
	BodyEnd      time.Time `json:"body_end,omitzero"`
	BodyEndSent  time.Time `json:"body_end_sent,omitzero"`
}

// WriteOf says which of the request's writes at (on the wall clock) lies
// in, as the tokens it carried: first and last are token indexes (a write
// may carry several), both len(TokenWritten) for the body's end, both -1
// for none; of several writes that hold at, the latest. It lies in a write when it is inside the write call, or, for a
// write whose bytes TCP held past the call, at their transmit time (within
// heldSlack; TokenSent, BodyEndSent). A client's kernel receive time of
// bytes read on loopback lies in a write of them or a later one of the same
// response: TCP keeps one receive time per run of unread segments it
// merges, the latest.
func (t RequestTruth) WriteOf(at time.Time) (first, last int) {
	// The latest write that holds at: writes TCP held leave together, and
	// at is then the time of every one of them.
	if !t.BodyEnd.IsZero() && !at.Before(t.BodyEndBegan) && !at.After(t.BodyEnd) || nearHeld(at, t.BodyEndSent, t.BodyEnd) {
		return len(t.TokenWritten), len(t.TokenWritten)
	}
	for j := len(t.TokenWritten) - 1; j >= 0; j-- {
		if !at.Before(t.TokenWriteBegan[j]) && !at.After(t.TokenWritten[j]) || j < len(t.TokenSent) && nearHeld(at, t.TokenSent[j], t.TokenWritten[j]) {
			first = j
			for first > 0 && t.TokenWriteBegan[first-1].Equal(t.TokenWriteBegan[j]) {
				first--
			}
			return first, j
		}
	}
	return -1, -1
}

// heldSlack is how long after its transmit time a loopback receiver's
// kernel may stamp a write TCP held: the two are taken in one pass through
// the loopback device, in the softirq that let the bytes go, but a virtual
// machine's host can take the CPU away between them (54 µs was seen).
const heldSlack = time.Millisecond

// nearHeld says whether at is at the transmit time sent of a write TCP held
// (sent after the write call returned at written), or just after it. A
// write sent during its call is judged by its call alone.
func nearHeld(at, sent, written time.Time) bool {
	return !sent.IsZero() && sent.After(written) && !at.Before(sent.Add(-time.Microsecond)) && !at.After(sent.Add(heldSlack))
}

// QueueWait is how long the request waited before its prefill started.
func (t RequestTruth) QueueWait() time.Duration {
	if t.PrefillStart.IsZero() {
		return 0
	}
	return t.PrefillStart.Sub(t.Arrival)
}

// TTFT is the scheduled time to first token, from arrival.
func (t RequestTruth) TTFT() time.Duration {
	if t.FirstToken.IsZero() {
		return 0
	}
	return t.FirstToken.Sub(t.Arrival)
}

// record is a RequestTruth being filled in by its handler.
type record struct {
	t         RequestTruth
	done      chan struct{}
	finishing bool // under Server.mu: past the point of no more waiting
	// bodyEnd, when the connection times the write that ends the body
	// (timeBodyEnd, before done closes), closes once that write returned or
	// the connection closed without it.
	bodyEnd chan struct{}
	// The response's writes' transmit-time keys (set before done closes;
	// the body end's before bodyEnd closes), on conn.
	conn      *clockConn
	txKeys    []uint32
	bodyKey   uint32
	bodyKeyed bool
}

// txWait bounds how long a truth waits for the transmit time of a write TCP
// held (released by the client's next acknowledgement).
const txWait = 2 * time.Second

// sentTimes sets t's transmit times (TokenSent, BodyEndSent) from rec's
// connection, waiting at most txWait for those not reported yet.
func (rec *record) sentTimes(t *RequestTruth) {
	if rec.conn == nil || rec.conn.tx == nil || len(rec.txKeys) == 0 {
		return
	}
	deadline := time.Now().Add(txWait)
	at := func(key uint32) time.Time {
		// Writes TCP held merge into one packet, reported once, under the
		// last one's key: a key not reported left with the next that is.
		ns, ok := rec.conn.tx.sentAt(key)
		for !ok && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
			ns, ok = rec.conn.tx.sentAt(key)
		}
		if !ok {
			return time.Time{}
		}
		return time.Unix(0, ns)
	}
	t.TokenSent = make([]time.Time, len(rec.txKeys))
	for i, k := range rec.txKeys {
		if i > 0 && k == rec.txKeys[i-1] {
			t.TokenSent[i] = t.TokenSent[i-1] // one write, several tokens
			continue
		}
		t.TokenSent[i] = at(k)
	}
	if rec.bodyKeyed {
		t.BodyEndSent = at(rec.bodyKey)
	}
}

// bodyEndWait bounds how long a truth waits for its body's end to be timed:
// the write follows the handler's return at once, unless the client is gone.
const bodyEndWait = 2 * time.Second

// complete waits (at most bodyEndWait, or until ctx ends) for the write that
// ends rec's body to be timed, when its connection times it.
func (rec *record) complete(ctx context.Context) {
	if rec.bodyEnd == nil {
		return
	}
	t := time.NewTimer(bodyEndWait)
	defer t.Stop()
	select {
	case <-rec.bodyEnd:
	case <-t.C:
	case <-ctx.Done():
	}
}

func (s *Server) register(nonce string) (*record, int) {
	rec := &record{done: make(chan struct{})}
	s.mu.Lock()
	idx := s.next
	s.next++
	rec.t.Index = idx
	s.records = append(s.records, rec)
	if nonce != "" {
		s.byNonce[nonce] = rec
	}
	if lim := s.cfg.TruthLimit; len(s.records) > lim+lim/4+16 {
		s.dropOldestLocked(len(s.records) - lim)
	}
	s.mu.Unlock()
	return rec, idx
}

func (s *Server) setID(rec *record, id string) {
	s.mu.Lock()
	rec.t.ID = id
	s.byID[id] = rec
	s.mu.Unlock()
}

// beginFinish marks rec as about to make its last write. Truth waits for such
// records, so a client that has just read [DONE] always finds its record.
func (s *Server) beginFinish(rec *record) {
	s.mu.Lock()
	rec.finishing = true
	s.mu.Unlock()
}

// finish publishes rec.
func (s *Server) finish(rec *record) {
	s.mu.Lock()
	close(rec.done)
	s.mu.Unlock()
}

// Truth returns the records of every finished request, in arrival order.
// Requests still in flight are left out, except those already making their
// last write, which it waits for. The token slices are shared: do not modify
// them.
func (s *Server) Truth() []RequestTruth {
	s.mu.Lock()
	var pending []*record
	for _, r := range s.records {
		if r.finishing {
			pending = append(pending, r)
		}
	}
	s.mu.Unlock()
	for _, r := range pending {
		<-r.done // its handler is past its last blocking step
	}
	s.mu.Lock()
	ended := make([]*record, 0, len(s.records))
	for _, r := range s.records {
		select {
		case <-r.done:
			ended = append(ended, r)
		default:
		}
	}
	s.mu.Unlock()
	for _, r := range ended {
		r.complete(context.Background())
	}
	s.mu.Lock()
	out := make([]RequestTruth, 0, len(s.records))
	recs := make([]*record, 0, len(s.records))
	for _, r := range s.records {
		select {
		case <-r.done:
			out = append(out, r.t)
			recs = append(recs, r)
		default:
		}
	}
	s.mu.Unlock()
	for i, r := range recs {
		r.sentTimes(&out[i])
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out
}

// TruthByNonce waits until the request whose prompt led with [nonce] is
// finished and returns its record; it fails when ctx ends first or no such
// request arrived.
func (s *Server) TruthByNonce(ctx context.Context, nonce string) (RequestTruth, error) {
	s.mu.Lock()
	rec := s.byNonce[nonce]
	s.mu.Unlock()
	if rec == nil {
		return RequestTruth{}, fmt.Errorf("no request with nonce %q", nonce)
	}
	return s.wait(ctx, rec)
}

// TruthByID is TruthByNonce by response id.
func (s *Server) TruthByID(ctx context.Context, id string) (RequestTruth, error) {
	s.mu.Lock()
	rec := s.byID[id]
	s.mu.Unlock()
	if rec == nil {
		return RequestTruth{}, fmt.Errorf("no request with id %q", id)
	}
	return s.wait(ctx, rec)
}

func (s *Server) wait(ctx context.Context, rec *record) (RequestTruth, error) {
	select {
	case <-rec.done:
		rec.complete(ctx)
		s.mu.Lock()
		t := rec.t
		s.mu.Unlock()
		rec.sentTimes(&t)
		return t, nil
	case <-ctx.Done():
		return RequestTruth{}, fmt.Errorf("waiting for request truth: %w", ctx.Err())
	}
}

// dropOldestLocked forgets up to n of the oldest finished records.
func (s *Server) dropOldestLocked(n int) {
	kept := s.records[:0]
	for _, r := range s.records {
		if n > 0 {
			select {
			case <-r.done:
				s.forgetLocked(r)
				n--
				continue
			default:
			}
		}
		kept = append(kept, r)
	}
	clear(s.records[len(kept):])
	s.records = kept
}

func (s *Server) forgetLocked(r *record) {
	if r.t.Nonce != "" && s.byNonce[r.t.Nonce] == r {
		delete(s.byNonce, r.t.Nonce)
	}
	if s.byID[r.t.ID] == r {
		delete(s.byID, r.t.ID)
	}
}

// ResetTruth forgets every finished record (long benchmarks call it to bound
// memory); in-flight requests keep theirs.
func (s *Server) ResetTruth() {
	s.mu.Lock()
	kept := s.records[:0]
	for _, r := range s.records {
		select {
		case <-r.done:
			s.forgetLocked(r)
		default:
			kept = append(kept, r)
		}
	}
	clear(s.records[len(kept):])
	s.records = kept
	s.mu.Unlock()
}

// Counters is a snapshot of the engine's lifetime counters (the /metrics values).
type Counters struct {
	Running, Waiting                          int64
	PromptTokens, GenerationTokens            int64
	PrefixCacheQueries, PrefixCacheHits       int64
	SpecDrafts, SpecDraftTokens, SpecAccepted int64
	// Dropped counts completion requests that arrived on a connection
	// close_after_stream had closed and were dropped unanswered (other
	// requests are dropped too, uncounted). Not in /metrics: no engine counts
	// what it never answered.
	Dropped int64
}

// Counters returns the current counter values.
func (s *Server) Counters() Counters {
	return Counters{
		Running:            s.m.running.Load(),
		Waiting:            s.m.waiting.Load(),
		PromptTokens:       s.m.promptTokens.Load(),
		GenerationTokens:   s.m.genTokens.Load(),
		PrefixCacheQueries: s.m.cacheQueries.Load(),
		PrefixCacheHits:    s.m.cacheHits.Load(),
		SpecDrafts:         s.m.specDrafts.Load(),
		SpecDraftTokens:    s.m.specDraftTokens.Load(),
		SpecAccepted:       s.m.specAccepted.Load(),
		Dropped:            s.m.droppedConns.Load(),
	}
}

func (s *Server) at(d time.Duration) time.Time { return s.epoch.Add(d) }

// serveTruth serves the finished requests' truth as a JSON array (GET
// /sim/truth, optionally ?nonce=X for one), for a simulator running out of
// process under `runner sim`.
func (s *Server) serveTruth(w http.ResponseWriter, r *http.Request) {
	all := s.Truth()
	if n := r.URL.Query().Get("nonce"); n != "" {
		kept := all[:0]
		for _, t := range all {
			if t.Nonce == n {
				kept = append(kept, t)
			}
		}
		all = kept
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(all)
}
