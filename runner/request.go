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
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/runner/sse"
)

// job is one request ready to send: the body is built before the clock starts.
type job struct {
	nonce     string
	body      []byte
	maxTokens int
}

// worker is one in-flight slot. Its SSE reader and chunk are reused from
// request to request, so reading a stream allocates nothing per chunk.
type worker struct {
	e     *Engine
	path  string
	rd    *sse.Reader
	chunk sse.Chunk
	itl   *itlBatch // nil for warm-ups: their token gaps are not measured
}

func (e *Engine) newWorker(path string, itl *itlBatch) *worker {
	return &worker{e: e, path: path, rd: sse.NewReader(nil), itl: itl}
}

// timeoutError is a request timeout; its message says which one struck.
type timeoutError struct{ msg string }

func (t *timeoutError) Error() string { return t.msg }

// interruptError ends a request that the run (not the server) stopped.
type interruptError struct{ msg string }

func (t *interruptError) Error() string { return t.msg }

var errInterrupted = &interruptError{"run interrupted"}

// phases of a request, for its one watchdog timer.
const (
	phaseFirstToken = iota
	phaseStreaming
	phaseDraining
)

// drainTimeout bounds reading past [DONE] to the end of the body.
const drainTimeout = 2 * time.Second

// do sends one request and measures its stream into rec (whose identity
// fields the caller has filled). Token gaps go straight into the worker's
// batch; nothing is stored per chunk.
func (w *worker) do(ctx context.Context, j *job, rec *result.Request) {
	to := w.e.timeout
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	req, err := w.newRequest(rctx, j.body)
	if err != nil {
		fail(rec, result.ErrConnect, "building request: "+err.Error())
		return
	}

	// One watchdog per request: the first-token bound until the first token,
	// then the idle bound. Rather than re-arming a timer at every chunk (a
	// lock on the timer heap per token), each token chunk stores its time and
	// the watchdog, when it fires, re-arms itself for the idle time left.
	// The whole-request bound is a second timer that never moves.
	var (
		phase   atomic.Int32
		lastTok atomic.Int64 // offset of the latest token chunk from start, ns
		start   time.Time
	)
	idle := to.Idle.D()
	var watchdog *time.Timer
	watchdog = time.AfterFunc(to.FirstToken.D(), func() {
		switch phase.Load() {
		case phaseFirstToken:
			cancel(&timeoutError{"first token timeout: no token within " + to.FirstToken.String()})
		case phaseDraining:
			cancel(&timeoutError{"no end of body after [DONE]"})
		default:
			// start was written before phase moved on (atomics order it).
			quiet := time.Since(start) - time.Duration(lastTok.Load())
			if quiet < idle {
				watchdog.Reset(idle - quiet)
				return
			}
			cancel(&timeoutError{"idle timeout: no token for " + idle.String()})
		}
	})
	defer watchdog.Stop()
	whole := time.AfterFunc(to.Request.D(), func() {
		cancel(&timeoutError{"request timeout: not finished within " + to.Request.String()})
	})
	defer whole.Stop()

	resp, err := w.send(rctx, req, j.body, rec, &start)
	if rec.Reconnected {
		watchdog.Reset(to.FirstToken.D()) // the first-token bound restarts with the clock
	}
	if err != nil {
		kind, msg := classifyTransport(rctx, ctx, err, to.Connect.String())
		rec.E2EMs = ms(time.Since(start))
		fail(rec, kind, msg)
		return
	}
	defer resp.Body.Close()
	rec.Status = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		rec.E2EMs = ms(time.Since(start))
		fail(rec, "http_"+strconv.Itoa(resp.StatusCode), sample(data))
		return
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		rec.E2EMs = ms(time.Since(start))
		ct := resp.Header.Get("Content-Type")
		if ct == "" {
			ct = "none"
		}
		fail(rec, result.ErrMalformed, "200 response is not an event stream (content-type "+ct+"): "+sample(data))
		return
	}

	var (
		rd                 = w.rd
		c                  = &w.chunk
		first, last        time.Time
		firstAnswer        time.Time
		maxITL             time.Duration
		chunks, reasoning  int
		finished, sawDone  bool
		finishReason       string
		finishAt           time.Time // when the finish (or a later usage) chunk arrived
		usage              bool
		promptTok, compTok int
		end                time.Time
		hasTimings         bool
		timings            sse.Timings
	)
	rd.Reset(resp.Body)
	for {
		data, err := rd.Next()
		if err != nil {
			if sawDone {
				break // end was taken at [DONE]; how the drain ended does not matter
			}
			end = time.Now()
			if finished {
				// A finish_reason completes the stream even without [DONE]. A
				// clean EOF ends it now; a cut or stall after the finish
				// does not make it a failure, but must not stretch its E2E.
				if err != io.EOF {
					end = finishAt
				}
				break
			}
			rec.E2EMs = ms(end.Sub(start))
			switch {
			case err == io.EOF:
				fail(rec, result.ErrTruncated, fmt.Sprintf("stream ended without finish_reason or [DONE] after %d chunks", chunks))
			case errors.Is(err, sse.ErrLineTooLong):
				fail(rec, result.ErrMalformed, "stream line longer than the reader's limit")
			default:
				kind, msg := classifyRead(rctx, ctx, err, chunks)
				fail(rec, kind, msg)
			}
			recordTokens(rec, start, first, firstAnswer, maxITL, chunks, reasoning)
			return
		}
		if sawDone {
			continue // drain to EOF so the connection goes back to the pool
		}
		if string(data) == "[DONE]" {
			sawDone = true
			end = time.Now()
			// Read on to EOF so the connection goes back to the pool, but
			// do not wait long for a server that keeps the stream open.
			phase.Store(phaseDraining)
			watchdog.Reset(drainTimeout)
			continue
		}
		if err := sse.Parse(data, c); err != nil {
			end = time.Now()
			rec.E2EMs = ms(end.Sub(start))
			fail(rec, result.ErrMalformed, "unparseable chunk: "+sample(data))
			recordTokens(rec, start, first, firstAnswer, maxITL, chunks, reasoning)
			return
		}
		if c.Error {
			end = time.Now()
			rec.E2EMs = ms(end.Sub(start))
			msg := "error in stream"
			if c.ErrorMessage != nil {
				m, _ := sse.Unescape(c.ErrorMessage)
				msg = sample([]byte(m))
			}
			fail(rec, result.ErrServer, msg)
			recordTokens(rec, start, first, firstAnswer, maxITL, chunks, reasoning)
			return
		}
		var now time.Time // read at most once per chunk
		if c.Content || c.Reasoning {
			now = time.Now() // the one clock read per token chunk
			lastTok.Store(int64(now.Sub(start)))
			if chunks == 0 {
				first = now
				phase.Store(phaseStreaming)
				watchdog.Reset(idle)
			} else {
				gap := now.Sub(last)
				maxITL = max(maxITL, gap)
				if w.itl != nil {
					w.itl.add(gap)
				}
			}
			if c.Content && firstAnswer.IsZero() {
				firstAnswer = now
			}
			if c.Reasoning && !c.Content {
				reasoning++
			}
			last = now
			chunks++
		}
		if c.Finish {
			finished = true
			if now.IsZero() {
				now = time.Now() // a finish chunk without a token
			}
			finishAt = now
			if c.FinishReason != nil {
				// Copy: the chunk's bytes are reused by the next read.
				finishReason, _ = sse.Unescape(c.FinishReason)
			}
		}
		if c.HasTimings {
			hasTimings, timings = true, c.Timings
		}
		if c.Usage {
			usage, promptTok, compTok = true, c.PromptTokens, c.CompletionTokens
			if finished {
				if now.IsZero() {
					now = time.Now()
				}
				finishAt = now
			}
		}
	}

	rec.OK = true
	rec.E2EMs = ms(end.Sub(start))
	rec.FinishReason = finishReason
	rec.UsageReported = usage
	rec.InputTokens = promptTok
	if hasTimings {
		rec.ServerTimings = serverTimings(&timings)
	}
	recordTokens(rec, start, first, firstAnswer, maxITL, chunks, reasoning)
	// Usage is preferred: engines may put several tokens in one chunk.
	rec.OutputTokens = chunks
	if usage && compTok > 0 {
		rec.OutputTokens = compTok
	}
	if rec.TTFTMs != nil && rec.OutputTokens >= 2 {
		// The reference's formula: decode time over the tokens after the first.
		rec.TPOTMs = result.Ptr((rec.E2EMs - *rec.TTFTMs) / float64(rec.OutputTokens-1))
	}
}

// newRequest builds the POST of body to the worker's path, with the
// endpoint's headers.
func (w *worker) newRequest(ctx context.Context, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.e.url(w.path), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header = w.e.headers.Clone()
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
func (w *worker) send(rctx context.Context, req *http.Request, body []byte, rec *result.Request, start *time.Time) (*http.Response, error) {
	var reused, answered atomic.Bool
	trace := &httptrace.ClientTrace{
		GotConn:              func(c httptrace.GotConnInfo) { reused.Store(c.Reused) },
		GotFirstResponseByte: func() { answered.Store(true) },
	}
	req = req.WithContext(httptrace.WithClientTrace(rctx, trace))
	client, fresh := w.e.clients()
	*start = time.Now()
	rec.Start = *start
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
	*start = time.Now()
	rec.Start = *start
	return fresh.Do(again)
}

// serverTimings copies a stream's timings into the request record.
func serverTimings(t *sse.Timings) *result.ServerTimings {
	return &result.ServerTimings{
		PromptN: t.PromptN, PromptMs: t.PromptMs, PredictedN: t.PredictedN, PredictedMs: t.PredictedMs,
		CacheN: t.CacheN, DraftN: t.DraftN, DraftNAccepted: t.DraftNAccepted,
	}
}

// recordTokens fills the timing fields that do not depend on success.
func recordTokens(rec *result.Request, start, first, firstAnswer time.Time, maxITL time.Duration, chunks, reasoning int) {
	rec.Chunks = chunks
	rec.ReasoningChunks = reasoning
	if chunks == 0 {
		return
	}
	rec.TTFTMs = result.Ptr(ms(first.Sub(start)))
	if !firstAnswer.IsZero() && !firstAnswer.Equal(first) {
		rec.TTFATMs = result.Ptr(ms(firstAnswer.Sub(start)))
	}
	if chunks > 1 {
		rec.MaxITLMs = result.Ptr(ms(maxITL))
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

// classifyRead names a failure while reading the stream.
func classifyRead(rctx, parent context.Context, err error, chunks int) (kind, msg string) {
	if k, m, ok := byCause(rctx, parent); ok {
		return k, m
	}
	return result.ErrTruncated, fmt.Sprintf("stream cut after %d chunks: %s", chunks, sample([]byte(err.Error())))
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
