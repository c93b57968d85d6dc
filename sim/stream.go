package sim

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// vocab is the output text: token i of a response is " " + vocab[(index+i) %
// len(vocab)]. Plain ASCII words, so they need no JSON escaping and the chunk
// encoder can append them as they are.
var vocab = func() []string {
	words := strings.Fields("the quick brown fox jumps over a lazy dog while distant thunder rolls " +
		"across open water and the harbour lights flicker against low cloud cover as fishing " +
		"boats return with the morning tide carrying nets and crates")
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = " " + w
	}
	return out
}()

// stream serves one request from the engine's output: it waits for the
// engine's notifications and writes whatever tokens are ready, one chunk per
// engine step (or per TokensPerChunk tokens), stamping each token with the
// time its chunk was written and flushed.
type stream struct {
	s            *Server
	w            http.ResponseWriter
	r            *http.Request
	rec          *record
	sq           *seq
	chat         bool
	api          apiKind
	tool         bool // the response is a call of toolName (typed.go)
	toolName     string
	id           string
	created      int64
	includeUsage bool
	reasoning    int  // the first this many tokens are reasoning (chat only)
	pooled       bool // a batch answer (batch.go): no output tokens

	meta      []byte // `data: {"id":…,"object":…,"created":…,"model":…`
	buf       []byte
	sent      int // tokens written
	flushedTo int // tokens whose written time is recorded
	// began and written are, for each token, when the write of the chunk
	// carrying it began and when it (and its flush) returned, from epoch;
	// keys its transmit-time key on cc, the connection (nil keys: none).
	began, written []time.Duration
	cc             *clockConn
	keys           []uint32
	retrans0       uint32 // the connection's retransmitted segments before the response
	chunks         int
	faultAt        int
	faultDone      bool
	finishing      bool // beginFinish called
	roleSent       bool
	flusher        http.Flusher // the plain http/1 writer, which does not report flush errors
}

func (st *stream) setup(object string) {
	cfg := &st.s.cfg
	b := make([]byte, 0, 160)
	b = append(b, `data: {"id":"`...)
	b = append(b, st.id...)
	b = append(b, `","object":"`...)
	b = append(b, object...)
	b = append(b, `","created":`...)
	b = strconv.AppendInt(b, st.created, 10)
	b = append(b, `,"model":`...)
	b = strconv.AppendQuote(b, cfg.Model)
	st.meta = b
	st.buf = make([]byte, 0, 1024)
	st.flusher, _ = st.w.(http.Flusher)
	st.began = make([]time.Duration, st.sq.outputTokens)
	st.written = make([]time.Duration, st.sq.outputTokens)
	if cs, ok := st.r.Context().Value(connKey{}).(*connState); ok && cs.conn != nil && cs.conn.tx != nil {
		st.cc, st.keys = cs.conn, make([]uint32, st.sq.outputTokens)
		st.retrans0 = st.cc.tx.retransmits()
	}
	st.faultAt = -1
	if f := st.rec.t.Fault; f != FaultNone && f != FaultBadUsage {
		n := st.sq.outputTokens
		at := cfg.Faults.AfterTokens
		if at == 0 {
			at = n / 2
		}
		st.faultAt = min(at, n-1)
	}
}

func (st *stream) finishReason() string {
	if st.tool {
		return "tool_calls"
	}
	if st.sq.outputTokens >= st.rec.t.MaxTokens {
		return "length"
	}
	return "stop"
}

// tokenText appends the text of tokens [a, b).
func (st *stream) tokenText(b []byte, from, to int) []byte {
	base := st.rec.t.Index
	for i := from; i < to; i++ {
		b = append(b, vocab[(base+i)%len(vocab)]...)
	}
	return b
}

// badPromptTokens and badCompletionTokens are the usage FaultBadUsage
// reports: a negative count, and one no reply can have (2^62).
const (
	badPromptTokens     = -5
	badCompletionTokens = 1 << 62
)

func (st *stream) appendUsage(b []byte) []byte {
	t := &st.rec.t
	if t.Fault == FaultBadUsage {
		b = append(b, `"usage":{"prompt_tokens":`...)
		b = strconv.AppendInt(b, badPromptTokens, 10)
		b = append(b, `,"total_tokens":`...)
		b = strconv.AppendInt(b, badPromptTokens+badCompletionTokens, 10)
		b = append(b, `,"completion_tokens":`...)
		b = strconv.AppendInt(b, badCompletionTokens, 10)
		return append(b, '}')
	}
	b = append(b, `"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(t.PromptTokens), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(t.PromptTokens+st.sent), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(st.sent), 10)
	if st.s.cfg.PromptTokensDetails {
		st.sq.mu.Lock()
		cached := st.sq.cached
		st.sq.mu.Unlock()
		b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
		b = strconv.AppendInt(b, int64(cached), 10)
		b = append(b, '}')
	}
	return append(b, '}')
}

// appendChunk appends the SSE line for tokens [from, to); final marks the last one.
func (st *stream) appendChunk(b []byte, from, to int, final bool) []byte {
	if st.typed() {
		return st.appendTypedChunk(b, from, to, final)
	}
	cfg := &st.s.cfg
	b = append(b, st.meta...)
	b = append(b, `,"choices":[{"index":0,`...)
	if st.chat {
		b = append(b, `"delta":{`...)
		if !st.roleSent || cfg.RoleInEveryChunk {
			b = append(b, `"role":"assistant",`...)
		}
		switch {
		case st.tool:
			// vLLM's tool-call deltas: the first names the call, every one
			// carries a piece of the arguments.
			b = append(b, `"tool_calls":[{"index":0,`...)
			if from == 0 {
				b = append(b, `"id":"call_`...)
				b = append(b, st.id[strings.IndexByte(st.id, '-')+1:]...)
				b = append(b, `","type":"function","function":{"name":`...)
				b = strconv.AppendQuote(b, st.toolName)
				b = append(b, `,"arguments":"`...)
			} else {
				b = append(b, `"function":{"arguments":"`...)
			}
			b = st.appendDeltaText(b, blockTool, from, to, final)
			b = append(b, `"}}]},"logprobs":null,"finish_reason":`...)
		case from < st.reasoning:
			b = append(b, '"')
			b = append(b, cfg.ReasoningField...)
			b = append(b, `":"`...)
			b = st.tokenText(b, from, to)
			b = append(b, `"},"logprobs":null,"finish_reason":`...)
		default:
			b = append(b, `"content":"`...)
			b = st.tokenText(b, from, to)
			b = append(b, `"},"logprobs":null,"finish_reason":`...)
		}
	} else {
		b = append(b, `"text":"`...)
		b = st.tokenText(b, from, to)
		b = append(b, `","logprobs":null,"finish_reason":`...)
	}
	st.roleSent = true
	if final {
		b = append(b, '"')
		b = append(b, st.finishReason()...)
		b = append(b, `","stop_reason":null}]`...)
		st.sent = to // usage and timings count this chunk's tokens
		if st.includeUsage && cfg.UsageInFinishChunk {
			b = append(b, ',')
			b = st.appendUsage(b)
		}
		if cfg.LlamaTimings && !st.usageChunk() {
			b = st.appendTimings(b)
		}
	} else if st.chat {
		b = append(b, "null}]"...)
	} else {
		b = append(b, `null,"stop_reason":null}]`...) // vLLM's completion chunks carry it throughout
	}
	return append(b, "}\n\n"...)
}

func (st *stream) appendRoleChunk(b []byte) []byte {
	b = append(b, st.meta...)
	b = append(b, `,"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`+"\n\n"...)
	st.roleSent = true
	return b
}

func (st *stream) appendUsageChunk(b []byte) []byte {
	b = append(b, st.meta...)
	b = append(b, `,"choices":[],`...)
	b = st.appendUsage(b)
	if st.s.cfg.LlamaTimings {
		b = st.appendTimings(b)
	}
	return append(b, "}\n\n"...)
}

// usageChunk reports whether usage goes in a chunk of its own after the finish chunk.
func (st *stream) usageChunk() bool { return st.includeUsage && !st.s.cfg.UsageInFinishChunk }

// appendTimings appends `,"timings":{...}` as llama-server writes it, from
// the engine's schedule of this request.
func (st *stream) appendTimings(b []byte) []byte {
	sq := st.sq
	sq.mu.Lock()
	cached, start, drafts := sq.cached, sq.prefillStart, sq.draftTokens
	accepted := sq.accepted
	var first, last time.Duration
	if n := min(st.sent, len(sq.sched)); n > 0 {
		first, last = sq.sched[0], sq.sched[n-1]
	}
	sq.mu.Unlock()
	msOf := func(b []byte, d time.Duration) []byte {
		return strconv.AppendFloat(b, float64(d)/float64(time.Millisecond), 'f', 3, 64)
	}
	b = append(b, `,"timings":{"cache_n":`...)
	b = strconv.AppendInt(b, int64(cached), 10)
	b = append(b, `,"prompt_n":`...)
	b = strconv.AppendInt(b, int64(sq.promptTokens-cached), 10)
	b = append(b, `,"prompt_ms":`...)
	b = msOf(b, max(0, first-start))
	b = append(b, `,"predicted_n":`...)
	b = strconv.AppendInt(b, int64(st.sent), 10)
	b = append(b, `,"predicted_ms":`...)
	b = msOf(b, last-first)
	if st.s.cfg.SpecK > 0 {
		b = append(b, `,"draft_n":`...)
		b = strconv.AppendInt(b, int64(drafts), 10)
		b = append(b, `,"draft_n_accepted":`...)
		b = strconv.AppendInt(b, int64(accepted), 10)
	}
	return append(b, '}')
}

// flush writes the buffer, flushes the connection and stamps the tokens just
// sent with the times the write began and returned: the bytes reached the
// kernel between the two.
func (st *stream) flush() error {
	began := time.Since(st.s.epoch)
	if len(st.buf) > 0 {
		if _, err := st.w.Write(st.buf); err != nil {
			return err
		}
		st.buf = st.buf[:0]
	}
	if st.flusher != nil {
		st.flusher.Flush()
	} else if err := http.NewResponseController(st.w).Flush(); err != nil {
		return err
	}
	now := time.Since(st.s.epoch)
	key, keyed := st.cc.key()
	for i := st.flushedTo; i < st.sent; i++ {
		st.began[i], st.written[i] = began, now
		if keyed {
			st.keys[i] = key
		}
	}
	st.flushedTo = st.sent
	return nil
}

func (st *stream) serveStream() {
	object := "text_completion"
	if st.chat {
		object = "chat.completion.chunk"
	}
	st.setup(object)
	h := st.w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Request-Id", st.id)
	st.w.WriteHeader(http.StatusOK)
	st.rec.t.Status = http.StatusOK
	if st.flush() != nil {
		st.end(finishAbort)
		return
	}
	ctx := st.r.Context()
	for {
		select {
		case <-st.sq.notify:
		case <-ctx.Done():
			st.end(finishAbort)
			return
		}
		if !st.pump() {
			return
		}
	}
}

// pump writes every ready chunk; it returns false once the request is over.
func (st *stream) pump() bool {
	sq := st.sq
	sq.mu.Lock()
	ends, done := sq.stepEnds, sq.done
	sq.mu.Unlock()
	total := sq.outputTokens
	tpc := st.s.cfg.TokensPerChunk
	si := 0
	for {
		for si < len(ends) && int(ends[si]) <= st.sent {
			si++
		}
		if st.faultAt == st.sent && !st.faultDone {
			st.faultDone = true
			if !st.applyFault() {
				return false
			}
		}
		if si == len(ends) {
			break
		}
		j := si
		end := int(ends[j])
		for end-st.sent < tpc && j+1 < len(ends) {
			j++
			end = int(ends[j])
		}
		if end-st.sent < tpc && !(done && end == total) {
			break // wait to fill the group
		}
		if st.sent < st.reasoning && end > st.reasoning {
			end = st.reasoning // never mix reasoning and content in one delta
		}
		if !st.faultDone && st.faultAt > st.sent && end > st.faultAt {
			end = st.faultAt
		}
		if st.chat && !st.roleSent {
			// vLLM opens with a role-only chunk, sent with the first token.
			st.buf = st.appendRoleChunk(st.buf)
		} else if st.typed() && !st.roleSent {
			st.buf = st.appendTypedOpen(st.buf)
		}
		final := done && end == total
		if final {
			st.begin()
		}
		st.buf = st.appendChunk(st.buf, st.sent, end, final)
		st.chunks++
		st.sent = end
		if !final && len(st.buf) >= 32<<10 {
			// A handler far behind the engine (zero latency) writes in
			// bounded batches rather than buffering a whole response.
			if err := st.flush(); err != nil {
				st.end(finishAbort)
				return false
			}
		}
		if final {
			if st.usageChunk() {
				st.buf = st.appendUsageChunk(st.buf)
			}
			if !st.typed() {
				st.buf = append(st.buf, "data: [DONE]\n\n"...)
			}
			_ = st.flush()
			st.end(finishIndex(st.finishReason()))
			return false
		}
	}
	if err := st.flush(); err != nil {
		st.end(finishAbort)
		return false
	}
	if sq.cancelled.Load() && !done {
		// The engine shut down under us.
		st.end(finishAbort)
		return false
	}
	return true
}

func finishIndex(reason string) int {
	if reason == "length" {
		return finishLength
	}
	return finishStop
}

// applyFault carries out a mid-stream fault after st.sent tokens; it returns
// false when the request is over.
func (st *stream) applyFault() bool {
	f := st.rec.t.Fault
	st.rec.t.FaultAfterTokens = st.sent
	if err := st.flush(); err != nil {
		st.end(finishAbort)
		return false
	}
	switch f {
	case FaultMalformed:
		if st.typed() {
			st.buf = st.appendTypedMalformed(st.buf)
		} else {
			st.buf = append(st.buf, st.meta...)
			st.buf = append(st.buf, `,"choices":[{"index":0,"delta":{"content":"`+"\n\n"...)
		}
		if err := st.flush(); err != nil {
			st.end(finishAbort)
			return false
		}
		return true
	case FaultStall:
		stall, stop := st.stallTimer()
		defer stop()
		select {
		case <-stall:
			return true
		case <-st.r.Context().Done():
			st.end(finishAbort)
			return false
		}
	case FaultDisconnect:
		st.begin()
		if conn, _, err := http.NewResponseController(st.w).Hijack(); err == nil {
			_ = conn.Close()
		}
		st.end(finishAbort)
		return false
	case FaultTruncate:
		st.begin()
		st.end(finishAbort)
		return false
	case FaultErrorInStream:
		st.begin()
		if st.typed() {
			if !st.roleSent {
				st.buf = st.appendTypedOpen(st.buf)
			}
			st.buf = st.appendTypedError(st.buf, "simulated engine error mid-stream")
		} else {
			st.buf = append(st.buf, "data: "...)
			st.buf = appendErrorJSON(st.buf, http.StatusInternalServerError, "InternalServerError", "simulated engine error mid-stream")
			st.buf = append(st.buf, "\n\ndata: [DONE]\n\n"...)
		}
		_ = st.flush()
		st.end(finishError)
		return false
	}
	return true
}

func (st *stream) begin() {
	if !st.finishing {
		st.s.beginFinish(st.rec)
		st.finishing = true
	}
}

// end records the request's truth and releases the engine's sequence.
func (st *stream) end(how int) {
	endAt := time.Now() // first, so the bookkeeping below is not counted
	sq := st.sq
	sq.cancelled.Store(true) // no-op for the engine if it already finished
	sq.mu.Lock()
	t := &st.rec.t
	epoch := st.s.epoch
	t.TokenScheduled = make([]time.Time, st.sent)
	for i := range st.sent {
		t.TokenScheduled[i] = epoch.Add(sq.sched[i])
	}
	if len(sq.sched) > 0 {
		t.FirstToken = epoch.Add(sq.sched[0])
	}
	if sq.admitted {
		t.PrefillStart = epoch.Add(sq.prefillStart)
		t.CachedTokens = sq.cached
	}
	t.Queued = sq.queued
	t.Preemptions = sq.preemptions
	t.SpecDrafts, t.SpecDraftTokens, t.SpecAccepted = sq.drafts, sq.draftTokens, sq.accepted
	sq.mu.Unlock()
	if st.keys != nil {
		st.rec.conn, st.rec.txKeys = st.cc, st.keys[:st.flushedTo]
		t.Retransmits = int(st.cc.tx.retransmits() - st.retrans0)
	}
	t.TokenWriteBegan = make([]time.Time, st.flushedTo)
	t.TokenWritten = make([]time.Time, st.flushedTo)
	for i := range st.flushedTo {
		t.TokenWriteBegan[i] = epoch.Add(st.began[i])
		t.TokenWritten[i] = epoch.Add(st.written[i])
	}
	t.OutputTokens = st.sent
	if st.pooled {
		t.OutputTokens = 0
	}
	t.ReasoningTokens = min(st.sent, st.reasoning)
	t.Chunks = st.chunks
	switch how {
	case finishStop, finishLength:
		timeBodyEnd(st.r, st.rec)
		t.FinishReason = finishNames[how]
		st.countLag()
		st.s.m.success[how].Add(1)
		st.s.m.e2e.observe(time.Since(t.Arrival).Seconds())
	case finishError:
		t.FinishReason = "error"
	default:
		t.FinishReason = "abort"
	}
	t.End = endAt
	st.s.finish(st.rec)
}

// serveWhole answers a request that is not streamed once the engine is
// done with it, with the body answer builds: a completion once every token
// is generated (wholeBody), a batch answer (pooled, batch.go) once its
// prefill has run. The configured faults strike the whole answer: a
// disconnect or a stall before it is written, half of it (truncate,
// malformed), or an error body in its place.
func (st *stream) serveWhole(answer func() []byte) {
	st.setup("")
	ctx := st.r.Context()
	if !st.waitDone(ctx) {
		st.end(finishAbort)
		return
	}
	st.begin()
	contentType, how := "application/json", finishIndex(st.finishReason())
	st.sent = st.sq.outputTokens
	if st.pooled {
		// llama-server's charset; a batch answer ends its one step, no
		// finish reason of a completion's.
		contentType, how = "application/json; charset=utf-8", finishStop
		st.sent = 1 // the answer: its write time is the request's last
	}
	body := answer()
	st.rec.t.Status = http.StatusOK
	switch st.rec.t.Fault {
	case FaultDisconnect:
		if conn, _, err := http.NewResponseController(st.w).Hijack(); err == nil {
			_ = conn.Close()
		}
		st.sent = 0
		st.end(finishAbort)
		return
	case FaultStall:
		st.rec.t.FaultAfterTokens = 0
		stall, stop := st.stallTimer()
		defer stop()
		select {
		case <-stall:
		case <-ctx.Done():
			st.sent = 0
			st.end(finishAbort)
			return
		}
	case FaultTruncate, FaultMalformed:
		body = body[:len(body)/2]
	case FaultErrorInStream:
		body = appendErrorJSON(nil, http.StatusInternalServerError, "InternalServerError", "simulated engine error")
	}
	st.w.Header().Set("Content-Type", contentType)
	st.w.Header().Set("X-Request-Id", st.id)
	st.w.WriteHeader(http.StatusOK)
	_, _ = st.w.Write(body)
	_ = st.flush()
	switch st.rec.t.Fault {
	case FaultTruncate, FaultMalformed:
		st.end(finishAbort)
	case FaultErrorInStream:
		st.end(finishError)
	default:
		st.end(how)
	}
}

// waitDone waits until the engine has generated every token of a
// non-streamed request; false when the client went away first.
func (st *stream) waitDone(ctx context.Context) bool {
	for {
		select {
		case <-st.sq.notify:
		case <-ctx.Done():
			return false
		}
		st.sq.mu.Lock()
		done := st.sq.done
		st.sq.mu.Unlock()
		if done {
			return true
		}
		if st.sq.cancelled.Load() {
			return false
		}
	}
}

// wholeBody is a non-streamed response: the whole text, its usage.
func (st *stream) wholeBody() []byte {
	if st.typed() {
		return st.typedWhole()
	}
	total := st.sq.outputTokens
	text := string(st.tokenText(nil, st.reasoning, total))
	usage := map[string]any{"prompt_tokens": st.rec.t.PromptTokens, "completion_tokens": total, "total_tokens": st.rec.t.PromptTokens + total}
	if st.rec.t.Fault == FaultBadUsage {
		usage = map[string]any{"prompt_tokens": badPromptTokens, "completion_tokens": badCompletionTokens, "total_tokens": badPromptTokens + badCompletionTokens}
	}
	if st.s.cfg.PromptTokensDetails {
		st.sq.mu.Lock()
		usage["prompt_tokens_details"] = map[string]int{"cached_tokens": st.sq.cached}
		st.sq.mu.Unlock()
	}
	choice := map[string]any{"index": 0, "logprobs": nil, "finish_reason": st.finishReason(), "stop_reason": nil}
	object := "text_completion"
	if st.chat {
		msg := map[string]any{"role": "assistant", "content": text}
		if st.reasoning > 0 {
			msg[st.s.cfg.ReasoningField] = string(st.tokenText(nil, 0, st.reasoning))
		}
		choice["message"], object = msg, "chat.completion"
	} else {
		choice["text"] = text
	}
	body, _ := json.Marshal(map[string]any{
		"id": st.id, "object": object, "created": st.created, "model": st.s.cfg.Model,
		"choices": []any{choice}, "usage": usage,
	})
	return body
}

// stallTimer fires after the configured stall_ms; with stall_ms 0 it never
// fires, so the stream stalls until the client gives up.
func (st *stream) stallTimer() (<-chan time.Time, func()) {
	ms := st.s.cfg.Faults.StallMs
	if ms <= 0 {
		return nil, func() {}
	}
	t := time.NewTimer(time.Duration(ms * float64(time.Millisecond)))
	return t.C, func() { t.Stop() }
}
