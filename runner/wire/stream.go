package wire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/runnerbench/runner/internal/redact"
	"github.com/runnerbench/runner/protocol"
	"github.com/runnerbench/runner/protocol/sse"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/runner/client"
)

// streamClock times a stream's token chunks: one clock read per chunk, and
// every duration taken from the request's own start.
type streamClock struct {
	start, first, last, firstAnswer time.Time
	maxITL                          time.Duration
	chunks, reasoning               int
	// read is the connection's read that brought the last token chunk, when
	// the kernel timed it (0: it did not).
	read uint64
}

// token notes a chunk carrying content or reasoning that arrived at now. It
// returns the gap since the previous token chunk (0 for the first).
func (c *streamClock) token(now time.Time, content, reasoning bool) (gap time.Duration) {
	if c.chunks == 0 {
		c.first = now
	} else {
		gap = now.Sub(c.last)
		c.maxITL = max(c.maxITL, gap)
	}
	if content && c.firstAnswer.IsZero() {
		c.firstAnswer = now
	}
	if reasoning && !content {
		c.reasoning++
	}
	c.last = now
	c.chunks++
	return gap
}

// record fills the timing fields that do not depend on success.
func (c *streamClock) record(rec *result.Request) {
	rec.Chunks = c.chunks
	rec.ReasoningChunks = c.reasoning
	if c.chunks == 0 {
		return
	}
	rec.TTFTMs = result.Ptr(Ms(c.first.Sub(c.start)))
	if !c.firstAnswer.IsZero() && !c.firstAnswer.Equal(c.first) {
		rec.TTFATMs = result.Ptr(Ms(c.firstAnswer.Sub(c.start)))
	}
	if c.chunks > 1 {
		rec.MaxITLMs = result.Ptr(Ms(c.maxITL))
	}
}

// streamEnd is what a stream says about how it ends: its finish, its usage,
// its server timings, [DONE].
type streamEnd struct {
	finished, sawDone  bool
	finishReason       string
	finishAt           time.Time // when the finish (or a later usage) chunk arrived
	end                time.Time // the end of the stream, as E2E counts it
	usage, usageBad    bool      // usageBad: a count was no integer
	promptTok, compTok int
	hasTimings         bool
	timings            sse.Timings
	results            int // items of a non-streamed answer
	toolCalls          int // tool calls the stream opened
}

// needsTime says whether chunk c, which carried no token, is timed: a
// finish, or usage after the finish.
func (s *streamEnd) needsTime(c *sse.Chunk) bool {
	return c.Finish || (c.Usage && s.finished)
}

// note takes the end-of-stream fields of chunk c, which arrived at now (set
// when the chunk carried a token or needsTime said so).
func (s *streamEnd) note(c *sse.Chunk, now time.Time) {
	if c.ToolCall {
		s.toolCalls++
	}
	if c.Finish {
		s.finished = true
		s.finishAt = now
		if c.FinishReason != nil {
			// Copy: the chunk's bytes are reused by the next read.
			s.finishReason, _ = sse.Unescape(c.FinishReason)
		}
	}
	if c.HasTimings {
		s.hasTimings, s.timings = true, c.Timings
	}
	if c.Usage {
		s.usage, s.usageBad, s.promptTok, s.compTok = true, c.UsageInvalid, c.PromptTokens, c.CompletionTokens
		if s.finished {
			s.finishAt = now
		}
	}
}

// stamp is the time of the token chunk just decoded: the kernel's receive
// time of the read that brought it, on the monotonic clock, or the runner's
// clock where the kernel gave none (one clock read either way). A measured
// request's chunk counts toward the level's stamps: how it was timed, its
// read lag, and whether the token chunk before it came in the same read
// (and so carries this one's time).
func (w *Worker) stamp(clk *streamClock) time.Time {
	now := time.Now()
	read, at, ok := w.kernelTime(clk, now)
	if w.gaps != nil {
		if ok && clk.chunks > 0 && read == clk.read {
			w.gaps.Shared()
		}
		w.gaps.Stamp(ok, now.Sub(at))
	}
	clk.read = 0
	if ok {
		clk.read = read
	}
	return at
}

// at is the time of an event decoded now that is no token chunk (the
// finish, the end of the stream), as stamp would time it, counted nowhere.
func (w *Worker) at(clk *streamClock) time.Time {
	_, at, _ := w.kernelTime(clk, time.Now())
	return at
}

// kernelTime is the kernel's receive time of the connection's latest read
// (its number) on the monotonic clock, and true; or now and false when the
// connection has no kernel times, the read none, or its time cannot be this
// response's: after now (the wall clock went back) or before the request
// went out (it jumped forward).
func (w *Worker) kernelTime(clk *streamClock, now time.Time) (uint64, time.Time, bool) {
	if w.rx == nil {
		return 0, now, false
	}
	read, k := w.rx.Latest()
	if k == 0 {
		return read, now, false
	}
	at := w.clock.At(k)
	if at.After(now) || at.Before(clk.start) {
		return read, now, false
	}
	return read, at, true
}

// read reads the body of a 200 response into rec through the protocol's
// decoder: every token event timed, the stream's end judged. A stream that
// does not complete (a finish_reason or its end marker) is a failure with
// its reason. Token gaps go straight to the worker's Gaps; nothing is
// stored per chunk.
func (w *Worker) read(ctx, rctx context.Context, body io.Reader, rec *result.Request, wd *watchdog, sent int) {
	clk := streamClock{start: wd.start}
	var st streamEnd
	w.results = 0
	if w.rx != nil {
		w.clock.Sync() // the wall clock's offset, for this response's kernel times
	}
	dec, c := w.dec, &w.ev
	dec.Reset(body)
	for {
		var err error
		if st.sawDone {
			err = dec.Skip() // drain to EOF so the connection goes back to the pool
		} else {
			err = dec.Next(c)
		}
		if err != nil {
			if st.sawDone {
				break // end was taken at [DONE]; how the drain ended does not matter
			}
			if !w.readOK(err, rec, &clk) {
				return
			}
			if !st.endOfBody(err, w.at(&clk)) {
				failRead(ctx, rctx, rec, &clk, err)
				return
			}
			break
		}
		if st.sawDone {
			continue
		}
		if c.Done {
			st.sawDone, st.end = true, w.at(&clk)
			// Read on to EOF so the connection goes back to the pool, but
			// do not wait long for a server that keeps the stream open.
			wd.draining()
			continue
		}
		if !w.chunkOK(rec, &clk) {
			return
		}
		var now time.Time // read at most once per chunk
		if c.Content || c.Reasoning {
			now = w.stamp(&clk) // the one clock read per token chunk
			gap := clk.token(now, c.Content, c.Reasoning)
			wd.token(now, clk.chunks == 1)
			if clk.chunks > 1 && w.gaps != nil {
				w.gaps.Gap(gap, now)
			}
			if n := w.giveUp.Tokens; n > 0 && clk.chunks >= n {
				gaveUp(rec, &clk, now) // the user has read enough: stop reading
				return
			}
		}
		if now.IsZero() && st.needsTime(&c.Chunk) {
			now = w.at(&clk) // a finish chunk without a token
		}
		st.note(&c.Chunk, now)
		if c.ID != nil && rec.ResponseID == "" {
			rec.ResponseID = string(c.ID[:min(len(c.ID), maxRequestID)]) // once per request: the answer's id
		}
		if c.Results > 0 {
			st.results = c.Results
		}
	}
	w.results = st.results
	succeed(rec, &clk, &st, sent)
}

// endOfBody judges a read error that ends the body before [DONE]: true when
// the stream had already finished (a finish_reason completes it), false when
// it is a failure. A clean EOF after the finish ends the stream at now (the
// arrival of the body's last bytes); a cut or stall after it must not
// stretch its E2E.
func (s *streamEnd) endOfBody(err error, now time.Time) bool {
	s.end = now
	if !s.finished {
		return false
	}
	if err != io.EOF {
		s.end = s.finishAt
	}
	return true
}

// gaveUp records a request the client stopped reading at now, after its
// GiveUp tokens: cancelled, with what arrived (closing the body unread
// closes the connection, which tells the server).
func gaveUp(rec *result.Request, clk *streamClock, now time.Time) {
	rec.E2EMs = Ms(now.Sub(clk.start))
	Fail(rec, cancelled, "")
	clk.record(rec)
	rec.OutputTokens = clk.chunks
}

// failRead records a stream that ended before it completed.
func failRead(ctx, rctx context.Context, rec *result.Request, clk *streamClock, err error) {
	rec.E2EMs = Ms(time.Since(clk.start))
	kind, msg, ours := byCause(rctx, ctx)
	switch {
	case ours:
		// We cancelled the request (its timeout, or the run stopping): whatever
		// the read returned, even a clean end of body, is because of that.
	case err == io.EOF:
		kind, msg = result.ErrTruncated, fmt.Sprintf("stream ended without finish_reason or [DONE] after %d chunks", clk.chunks)
	case errors.Is(err, protocol.ErrLineTooLong):
		kind, msg = result.ErrMalformed, "stream line longer than the reader's limit"
	default:
		kind, msg = result.ErrTruncated, fmt.Sprintf("stream cut after %d chunks: %s", clk.chunks, client.Excerpt([]byte(err.Error())))
	}
	Fail(rec, kind, msg)
	clk.record(rec)
	if rec.Cancelled {
		rec.OutputTokens = clk.chunks // what arrived before the client gave up
	}
}

// readOK fails the request on an event the decoder could not read (false);
// other read errors are the stream's end, judged by the caller.
func (w *Worker) readOK(err error, rec *result.Request, clk *streamClock) bool {
	var other *protocol.OtherAPIError
	if errors.As(err, &other) {
		rec.E2EMs = Ms(time.Since(clk.start))
		Fail(rec, result.ErrMalformed, other.Error())
		clk.record(rec)
		w.notServed = fmt.Sprintf("POST %s answered with %s of api %s, not of api %s", redact.URL(w.url), other.Form(), other.Got, other.Want)
		return false
	}
	var bad *protocol.MalformedError
	if !errors.As(err, &bad) {
		return true
	}
	rec.E2EMs = Ms(time.Since(clk.start))
	Fail(rec, result.ErrMalformed, "unparseable chunk: "+client.Excerpt(bad.Data))
	clk.record(rec)
	return false
}

// chunkOK fails the request on an error object inside the stream (false).
func (w *Worker) chunkOK(rec *result.Request, clk *streamClock) bool {
	c := &w.ev
	if c.Error {
		rec.E2EMs = Ms(time.Since(clk.start))
		msg := "error in stream"
		if c.ErrorMessage != nil {
			m, _ := sse.Unescape(c.ErrorMessage)
			msg = client.Excerpt([]byte(m))
		}
		Fail(rec, result.ErrServer, msg)
		clk.record(rec)
		return false
	}
	return true
}

// succeed records a completed stream; sent is the request body's size in
// bytes, against which its usage is judged.
func succeed(rec *result.Request, clk *streamClock, st *streamEnd, sent int) {
	rec.OK = true
	rec.E2EMs = Ms(st.end.Sub(clk.start))
	rec.FinishReason = st.finishReason
	if why := st.implausibleUsage(rec.MaxTokens, sent); why != "" {
		// Counted as if the stream had carried none; the level warns.
		rec.UsageRejected = why
		st.usage, st.promptTok, st.compTok = false, 0, 0
	}
	rec.UsageReported = st.usage
	rec.InputTokens = st.promptTok
	rec.ToolCalls = st.toolCalls
	if st.hasTimings {
		rec.ServerTimings = serverTimings(&st.timings)
	}
	clk.record(rec)
	// Usage is preferred: engines may put several tokens in one chunk.
	rec.OutputTokens = clk.chunks
	if st.usage && st.compTok > 0 {
		rec.OutputTokens = st.compTok
	}
	if rec.TTFTMs != nil && rec.OutputTokens >= 2 {
		// The reference's formula: decode time over the tokens after the first.
		rec.TPOTMs = result.Ptr((rec.E2EMs - *rec.TTFTMs) / float64(rec.OutputTokens-1))
	}
}

// Bounds past which a stream's usage is not believed: completion tokens
// more than twice max_tokens (and 16) — a cap the server was asked to
// hold, reasoning included; prompt tokens more than one per byte sent plus
// promptSlack (a chat template's and images' tokens): no tokenizer makes
// more tokens of text than it has bytes.
const (
	completionSlack = 16
	promptSlack     = 1 << 16
)

// implausibleUsage says why the stream's usage cannot be true ("" when it
// can, or when there is none): a count that is no integer, negative, or far
// above what was asked (max_tokens, 0 when unknown) or sent (bytes).
func (s *streamEnd) implausibleUsage(maxTokens, sent int) string {
	switch {
	case !s.usage:
		return ""
	case s.usageBad:
		return "a usage count is not an integer"
	case s.promptTok < 0:
		return fmt.Sprintf("prompt_tokens %d is negative", s.promptTok)
	case s.compTok < 0:
		return fmt.Sprintf("completion_tokens %d is negative", s.compTok)
	case maxTokens > 0 && s.compTok > 2*maxTokens+completionSlack:
		return fmt.Sprintf("completion_tokens %d is far above max_tokens %d", s.compTok, maxTokens)
	case sent > 0 && s.promptTok > sent+promptSlack:
		return fmt.Sprintf("prompt_tokens %d is far above the %d bytes sent", s.promptTok, sent)
	}
	return ""
}

// serverTimings copies a stream's timings into the request record.
func serverTimings(t *sse.Timings) *result.ServerTimings {
	return &result.ServerTimings{
		PromptN: t.PromptN, PromptMs: t.PromptMs, PredictedN: t.PredictedN, PredictedMs: t.PredictedMs,
		CacheN: t.CacheN, DraftN: t.DraftN, DraftNAccepted: t.DraftNAccepted,
	}
}
