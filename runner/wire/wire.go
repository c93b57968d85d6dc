// Package wire is the load engine's hot path: one request sent on the
// endpoint's client (runner/client) and its stream read through the API's
// decoder (protocol), every token chunk timed with one clock read, the
// request's timeouts kept by its watchdog, and its outcome classified into
// the failure taxonomy of the request record. It allocates nothing per
// chunk.
//
// Each token chunk's time is the kernel's receive time of the read that
// brought it (internal/rxtime, on the connection the client's Do returns),
// placed on the monotonic clock, or the runner's clock where the kernel gave
// none (docs/wire.md).
package wire

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/runnerbench/runner/internal/redact"
	"github.com/runnerbench/runner/internal/rxtime"
	"github.com/runnerbench/runner/protocol"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/runner/client"
	"github.com/runnerbench/runner/scenario"
)

// Request is one request to send: its body built before the clock starts.
type Request struct {
	// Body is the request's JSON body.
	Body []byte
	// Results is how many items a non-streamed answer must hold (a batch
	// API's: one per input or document; 0: not judged).
	Results int
	// Reply, when set, receives a copy of the response body as it is read
	// (a multi-turn conversation's reply, parsed after the stream).
	Reply *Capture
	// Headers are the request's own headers beside the endpoint's (its
	// traceparent, its session), set before the clock starts.
	Headers []Header
	// GiveUp, when set, is when the client gives up on the request (a
	// user who stops waiting): it is then recorded as cancelled, with what
	// arrived, neither ok nor failed.
	GiveUp GiveUp
}

// GiveUp is when a request is cancelled by the client: After its send
// (0: not by time), or once Tokens token chunks have arrived (0: not by
// tokens), whichever comes first.
type GiveUp struct {
	After  time.Duration
	Tokens int
}

// Header is one header of a request: its canonical name and value.
type Header struct{ Name, Value string }

// Gaps receives a measured request's token timing as its stream is read, on
// the reading goroutine; its methods must be quick and must not allocate.
type Gaps interface {
	// Gap is called for every token chunk after the first, with the gap
	// since the previous one and the chunk's arrival.
	Gap(gap time.Duration, at time.Time)
	// Stamp is called for every token chunk: kernel says whether it was
	// timed by the kernel's receive time (else by the runner's clock), lag
	// is then its read lag (the runner's clock once it was decoded minus
	// the kernel's time).
	Stamp(kernel bool, lag time.Duration)
	// Shared is called when a kernel-timed token chunk came in one read with
	// the token chunk before it, which therefore carries this one's time.
	Shared()
}

// Worker sends one request at a time (a Dispatcher holds one per
// goroutine). Its decoder and event are reused from request to request, so
// reading a stream allocates nothing per chunk.
type Worker struct {
	c     *client.Client
	proto protocol.Protocol
	url   string // where the protocol's requests go
	to    scenario.Timeouts
	dec   protocol.Decoder
	ev    protocol.Event
	// header is the endpoint's headers with the protocol's Accept, shared
	// by the workers and cloned for each request (a clone of a map of its
	// final size: no growth).
	header http.Header
	gaps   Gaps // nil for warm-ups: their token gaps are not measured
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

	// The request in flight, for sent (called by the client as it goes out).
	rec    *result.Request
	wd     *watchdog
	sentFn func(time.Time, bool)
	// giveUp is the request in flight's; quit, when it gives up by time,
	// cancels it at giveUp.After from its send.
	giveUp GiveUp
	quit   *time.Timer
	cancel context.CancelCauseFunc
	// conn is the connection the response is read from; rx its kernel
	// receive times (nil: none, as on HTTP/2, where streams share the
	// connection and its latest read is not this stream's).
	conn  net.Conn
	rx    rxtime.Stamper
	clock rxtime.Clock // maps rx's times onto the monotonic clock
	tee   tee          // the reply copy's reader, reused
}

// NewWorker is a worker sending API p's requests on c; gaps receives its
// token gaps (nil: not measured, as for warm-ups).
func NewWorker(c *client.Client, p protocol.Protocol, gaps Gaps) *Worker {
	w := &Worker{c: c, proto: p, url: c.APIURL(p), to: c.Timeouts(), dec: p.NewDecoder(), header: c.RequestHeader(p), gaps: gaps}
	w.sentFn = w.sent
	return w
}

// NotServed says why the last request's answer shows that the endpoint
// does not serve the worker's API at its path: a 404, 405 or 501 there, an
// event stream where a JSON answer was due, an event or answer of another
// API ("": it showed no such thing).
func (w *Worker) NotServed() string { return w.notServed }

// NoModel says why the last request's answer shows that the server does not
// serve the endpoint's model, as the stage's error would say it: a 404
// whose answer says the model does not exist ("": it showed no such thing).
// Such an answer is not a NotServed: the API is served.
func (w *Worker) NoModel() string { return w.noModel }

// Do sends one request and measures its stream into rec (whose identity
// fields the caller has filled): open sends it and checks the response,
// read times the stream.
func (w *Worker) Do(ctx context.Context, r Request, rec *result.Request) {
	w.notServed, w.noModel = "", ""
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	wd := newWatchdog(w.to, !protocol.Streams(w.proto), cancel)
	defer wd.stop()
	w.rec, w.wd, w.giveUp, w.cancel = rec, wd, r.GiveUp, cancel
	defer w.done()
	resp, ok := w.open(ctx, rctx, r, rec, wd)
	if !ok {
		return
	}
	defer resp.Body.Close()
	var body io.Reader = resp.Body
	if r.Reply != nil {
		w.tee = tee{r: resp.Body, c: r.Reply}
		body = &w.tee
	}
	w.read(ctx, rctx, body, rec, wd, len(r.Body))
	if rec.OK && r.Results > 0 && w.results != r.Results {
		// A batch answered in part is not a success: its usage and latency
		// are those of less work than was asked.
		Fail(rec, result.ErrMalformed, fmt.Sprintf("answer holds %d results for the %d inputs sent", w.results, r.Results))
	}
}

// sent notes that the request in flight went out at start (again: a
// re-send on a new connection, its clock restarted, and its give-up time
// with it).
func (w *Worker) sent(start time.Time, again bool) {
	if again {
		w.rec.Reconnected = true
	}
	w.rec.Start = start
	w.wd.sent(start, again)
	if d := w.giveUp.After; d > 0 {
		if w.quit != nil {
			w.quit.Stop()
		}
		cancel := w.cancel
		w.quit = time.AfterFunc(d, func() { cancel(errGaveUp) })
	}
}

// done forgets the request that ended.
func (w *Worker) done() {
	if w.quit != nil {
		w.quit.Stop()
	}
	w.rec, w.wd, w.conn, w.rx, w.quit, w.cancel, w.giveUp = nil, nil, nil, nil, nil, nil, GiveUp{}
}

// open sends the request and returns its response when it is a 200 of the
// protocol's media type; any other outcome is recorded in rec as a failure (false).
func (w *Worker) open(ctx, rctx context.Context, r Request, rec *result.Request, wd *watchdog) (*http.Response, bool) {
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, w.url, bytes.NewReader(r.Body))
	if err != nil {
		Fail(rec, result.ErrConnect, "building request: "+err.Error())
		return nil, false
	}
	req.Header = w.header.Clone()
	for _, h := range r.Headers {
		req.Header[h.Name] = []string{h.Value}
	}
	req.ContentLength = int64(len(r.Body))
	resp, conn, err := w.c.Do(req, w.sentFn)
	w.conn = conn
	if err != nil {
		kind, msg := classifyTransport(rctx, ctx, err, w.to.Connect.String())
		rec.E2EMs = Ms(time.Since(wd.start))
		Fail(rec, kind, msg)
		return nil, false
	}
	rec.Status = resp.StatusCode
	rec.XRequestID = responseRequestID(resp.Header)
	kind, msg := "", ""
	if resp.StatusCode != http.StatusOK {
		kind = "http_" + strconv.Itoa(resp.StatusCode)
	} else if !isMediaType(resp.Header.Get("Content-Type"), w.proto.MediaType()) {
		ct := resp.Header.Get("Content-Type")
		if ct == "" {
			ct = "none"
		}
		kind, msg = result.ErrMalformed, "200 response is not "+w.proto.Describe()+" (content-type "+ct+"): "
	}
	if kind == "" {
		if resp.ProtoMajor == 1 {
			w.rx = rxtime.From(conn)
		}
		return resp, true
	}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	rec.E2EMs = Ms(time.Since(wd.start))
	Fail(rec, kind, msg+client.Excerpt(data))
	switch {
	case resp.StatusCode == http.StatusNotFound && protocol.ModelNotFound(string(data), w.c.Model()):
		w.noModel = fmt.Sprintf("model %q: POST %s answered http 404 (%s): the server does not serve this model (set the endpoint's model to one GET %s lists)",
			w.c.Model(), redact.URL(w.url), client.Excerpt(data), redact.URL(w.c.URL("/models")))
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed || resp.StatusCode == http.StatusNotImplemented:
		w.notServed = fmt.Sprintf("POST %s answered http %d (%s)", redact.URL(w.url), resp.StatusCode, client.Excerpt(data))
	case kind == result.ErrMalformed && !protocol.Streams(w.proto) && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"):
		// An event stream where a whole JSON answer was due: another API's path.
		w.notServed = fmt.Sprintf("POST %s answered with an event stream, not %s", redact.URL(w.url), w.proto.Describe())
	}
	return nil, false
}

// isMediaType reports whether Content-Type value ct names media type want
// (lower case), its parameters aside: what mime.ParseMediaType's media type
// compares as, without the map of parameters it allocates per response.
func isMediaType(ct, want string) bool {
	base, _, _ := strings.Cut(ct, ";")
	base = strings.TrimSpace(base)
	if len(base) != len(want) {
		return false
	}
	for i := range len(base) {
		c := base[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != want[i] {
			return false
		}
	}
	return true
}

// responseRequestID is the x-request-id header a server answered with ("":
// none), cut to maxRequestID bytes of printable ASCII: it is the server's
// text, written into requests.jsonl.
func responseRequestID(h http.Header) string {
	v := h.Get("X-Request-Id")
	if len(v) > maxRequestID {
		v = v[:maxRequestID]
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return ""
		}
	}
	return v
}

// maxRequestID bounds a recorded request id.
const maxRequestID = 128

// Capture is a copy of a response body as the wire read it, up to
// protocol.MaxCapture bytes: one memory copy per read, nothing parsed
// while the clock runs.
type Capture struct{ buf bytes.Buffer }

// Write keeps what fits under the bound; it never fails.
func (c *Capture) Write(p []byte) (int, error) {
	if room := protocol.MaxCapture - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// Bytes is what was captured.
func (c *Capture) Bytes() []byte { return c.buf.Bytes() }

// Reset empties the capture for the next request.
func (c *Capture) Reset() { c.buf.Reset() }

// tee reads r, copying what it reads into c.
type tee struct {
	r io.Reader
	c *Capture
}

func (t *tee) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n > 0 {
		_, _ = t.c.Write(p[:n])
	}
	return n, err
}
