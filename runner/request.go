package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/runnerbench/runner/internal/redact"
	"github.com/runnerbench/runner/protocol"
	"github.com/runnerbench/runner/protocol/sse"
	"github.com/runnerbench/runner/result"
)

// job is one request ready to send: the body is built before the clock starts.
type job struct {
	nonce     string
	body      []byte
	maxTokens int
	// inputs is the texts a batch API's request carries (embeddings' inputs,
	// rerank's documents; 0 for one prompt), results how many items its
	// answer must hold (0: not judged).
	inputs, results int
	imageBytes      int // the images' bytes (before their base64 encoding)
}

// Worker is one in-flight slot (a Dispatcher holds one per goroutine). Its decoder and event are reused from
// request to request, so reading a stream allocates nothing per chunk.
type Worker struct {
	e     *Engine
	proto protocol.Protocol
	dec   protocol.Decoder
	ev    protocol.Event
	// header is the endpoint's headers with the protocol's Accept, cloned
	// for each request (a clone of a map of its final size: no growth).
	header http.Header
	itl    *itlBatch // nil for warm-ups: their token gaps are not measured
	// results is the item count of the last non-streamed answer read.
	results int
	// notServed says why the last request's answer shows that the endpoint
	// does not serve the worker's API at its path ("": it did not show
	// that): a 404 or 405, or an event stream of another API.
	notServed string
	// noModel says why the last request's answer shows that the server
	// does not serve the endpoint's model ("": it did not show that): a 404
	// saying so (protocol.ModelNotFound). The API is served; the model is
	// not.
	noModel string
}

func (e *Engine) newWorker(p protocol.Protocol, itl *itlBatch) *Worker {
	h := e.headersFor(p)
	h.Set("Accept", p.MediaType())
	return &Worker{e: e, proto: p, dec: p.NewDecoder(), header: h, itl: itl}
}

// headersFor is the endpoint's headers for requests of API p: an API that
// carries the key in headers of its own (Anthropic's x-api-key) gets them
// instead of the bearer token, and the headers it requires
// (anthropic-version); a header the plan sets itself is kept as it is.
func (e *Engine) headersFor(p protocol.Protocol) http.Header {
	h := e.headers.Clone()
	a, ok := p.(protocol.Authenticator)
	if !ok {
		return h
	}
	key := e.t.Endpoint.APIKey.Reveal()
	extra, bearer := a.Headers(key)
	if key != "" && !bearer {
		h.Del("Authorization") // made from api_key (validation refuses both)
	}
	for k, v := range extra {
		if h.Get(k) != "" {
			continue // the plan's own header
		}
		h.Set(k, v)
	}
	return h
}

// timeoutError is a request timeout; its message says which one struck.
type timeoutError struct{ msg string }

func (t *timeoutError) Error() string { return t.msg }

// interruptError ends a request that the run (not the server) stopped.
type interruptError struct{ msg string }

func (t *interruptError) Error() string { return t.msg }

var errInterrupted = &interruptError{"run interrupted"}

// do sends one request and measures its stream into rec (whose identity
// fields the caller has filled): open sends it and checks the response,
// read times the stream.
func (w *Worker) do(ctx context.Context, j *job, rec *result.Request) {
	w.notServed, w.noModel = "", ""
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	wd := newWatchdog(w.e.timeout, !protocol.Streams(w.proto), cancel)
	defer wd.stop()
	resp, ok := w.open(ctx, rctx, j.body, rec, wd)
	if !ok {
		return
	}
	defer resp.Body.Close()
	w.read(ctx, rctx, resp.Body, rec, wd, len(j.body))
	if rec.OK && j.results > 0 && w.results != j.results {
		// A batch answered in part is not a success: its usage and latency
		// are those of less work than was asked.
		fail(rec, result.ErrMalformed, fmt.Sprintf("answer holds %d results for the %d inputs sent", w.results, j.results))
	}
}

// open sends the request and returns its response when it is a 200 of the
// protocol's media type; any other outcome is recorded in rec as a failure (false).
func (w *Worker) open(ctx, rctx context.Context, body []byte, rec *result.Request, wd *watchdog) (*http.Response, bool) {
	req, err := w.newRequest(rctx, body)
	if err != nil {
		fail(rec, result.ErrConnect, "building request: "+err.Error())
		return nil, false
	}
	resp, err := w.send(rctx, req, body, rec, wd)
	if err != nil {
		kind, msg := classifyTransport(rctx, ctx, err, w.e.timeout.Connect.String())
		rec.E2EMs = ms(time.Since(wd.start))
		fail(rec, kind, msg)
		return nil, false
	}
	rec.Status = resp.StatusCode
	kind, msg := "", ""
	if resp.StatusCode != http.StatusOK {
		kind = "http_" + strconv.Itoa(resp.StatusCode)
	} else if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != w.proto.MediaType() {
		ct := resp.Header.Get("Content-Type")
		if ct == "" {
			ct = "none"
		}
		kind, msg = result.ErrMalformed, "200 response is not "+w.proto.Describe()+" (content-type "+ct+"): "
	}
	if kind == "" {
		return resp, true
	}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	rec.E2EMs = ms(time.Since(wd.start))
	fail(rec, kind, msg+sample(data))
	switch {
	case resp.StatusCode == http.StatusNotFound && protocol.ModelNotFound(string(data), w.e.model):
		w.noModel = fmt.Sprintf("POST %s answered http 404 (%s)", redact.URL(w.e.apiURL(w.proto)), sample(data))
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed || resp.StatusCode == http.StatusNotImplemented:
		w.notServed = fmt.Sprintf("POST %s answered http %d (%s)", redact.URL(w.e.apiURL(w.proto)), resp.StatusCode, sample(data))
	case kind == result.ErrMalformed && !protocol.Streams(w.proto) && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"):
		// An event stream where a whole JSON answer was due: another API's path.
		w.notServed = fmt.Sprintf("POST %s answered with an event stream, not %s", redact.URL(w.e.apiURL(w.proto)), w.proto.Describe())
	}
	return nil, false
}

// apiURL is where p's requests go: the API root's URL of its path (a Rooted
// API's path is at the server's root), then the base URL's query.
func (e *Engine) apiURL(p protocol.Protocol) string { return protocol.URL(p, e.baseURL) + e.query }

// newRequest builds the POST of body to the worker's path, with the
// endpoint's headers.
func (w *Worker) newRequest(ctx context.Context, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.e.apiURL(w.proto), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header = w.header.Clone()
	req.ContentLength = int64(len(body))
	return req, nil
}

// send posts req and sets *start (and rec.Start) to the moment it went out.
//
// A server that closes a kept-alive connection without saying so
// (llama-server does after every stream, though its headers offer
// keep-alive) makes a request written on that connection before the client
// saw the close fail with no response at all. Go's transport re-sends only
// idempotent requests, and a POST is not one; so such a request, one that
// failed before any response byte on a connection that had carried a request
// before, is sent again here, once, on a new connection, with its clock
// restarted (the new connection's set-up is then inside its TTFT, as it is
// for any request on a fresh connection). A request the server answered in
// any way, by a single response byte, is never re-sent, and neither is one
// our own timeout or the run's interruption ended.
func (w *Worker) send(rctx context.Context, req *http.Request, body []byte, rec *result.Request, wd *watchdog) (*http.Response, error) {
	var reused, answered atomic.Bool
	trace := &httptrace.ClientTrace{
		GotConn:              func(c httptrace.GotConnInfo) { reused.Store(c.Reused) },
		GotFirstResponseByte: func() { answered.Store(true) },
	}
	req = req.WithContext(httptrace.WithClientTrace(rctx, trace))
	client, fresh := w.e.clients()
	rec.Start = time.Now()
	wd.sent(rec.Start, false)
	resp, err := client.Do(req)
	if err == nil || !reused.Load() || answered.Load() || rctx.Err() != nil {
		return resp, err
	}
	w.e.noteClosedKeepAlive(err)
	again, berr := w.newRequest(rctx, body)
	if berr != nil {
		return nil, err
	}
	rec.Reconnected = true
	rec.Start = time.Now()
	wd.sent(rec.Start, true)
	return fresh.Do(again)
}

// serverTimings copies a stream's timings into the request record.
func serverTimings(t *sse.Timings) *result.ServerTimings {
	return &result.ServerTimings{
		PromptN: t.PromptN, PromptMs: t.PromptMs, PredictedN: t.PredictedN, PredictedMs: t.PredictedMs,
		CacheN: t.CacheN, DraftN: t.DraftN, DraftNAccepted: t.DraftNAccepted,
	}
}

func fail(rec *result.Request, kind, msg string) {
	rec.OK = false
	rec.ErrorKind = kind
	rec.Error = msg
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// classifyTransport names a failure before any response arrived.
func classifyTransport(rctx, parent context.Context, err error, connect string) (kind, msg string) {
	if k, m, ok := byCause(rctx, parent); ok {
		return k, m
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return result.ErrTimeout, "connect timeout: no connection within " + connect
	}
	return result.ErrConnect, sample([]byte(redact.Error(err).Error()))
}

// byCause reports a cancellation we caused (a timeout) or the run's interruption.
func byCause(rctx, parent context.Context) (kind, msg string, ok bool) {
	if rctx.Err() == nil {
		return "", "", false
	}
	cause := context.Cause(rctx)
	var te *timeoutError
	if errors.As(cause, &te) {
		return result.ErrTimeout, te.msg, true
	}
	var ie *interruptError
	if errors.As(cause, &ie) {
		return result.ErrInterrupted, ie.msg, true
	}
	if parent.Err() != nil {
		return result.ErrInterrupted, errInterrupted.msg, true
	}
	return result.ErrInterrupted, sample([]byte(cause.Error())), true
}

// sample is a short, printable excerpt of an error body or message.
func sample(b []byte) string {
	const n = 200
	s := strings.TrimSpace(string(b))
	if len(s) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.Join(strings.Fields(s), " ")
}
