package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// apiRequest is the part of an OpenAI request the simulator understands.
type apiRequest struct {
	Model               string          `json:"model"`
	Messages            []apiMessage    `json:"messages"`
	Prompt              json.RawMessage `json:"prompt"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Stream              bool            `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	IgnoreEOS bool `json:"ignore_eos"`
	N         *int `json:"n"`

	// The Responses API: input (a string or messages), max_output_tokens.
	Input           json.RawMessage `json:"input"`
	MaxOutputTokens *int            `json:"max_output_tokens"`
	// The Messages API: the system prompt (a string or text blocks).
	System json.RawMessage `json:"system"`
	// Tools and the tool choice, in any API's form: only whether and how
	// they ask for a call matters here (see toolCall).
	Tools      []apiTool       `json:"tools"`
	ToolChoice json.RawMessage `json:"tool_choice"`
}

// apiKind is the API a request came in on.
type apiKind uint8

const (
	apiCompletions apiKind = iota
	apiChat
	apiResponses
	apiMessages
)

// endpointNames are RequestTruth.Endpoint's values, by apiKind.
var endpointNames = [...]string{apiCompletions: "completions", apiChat: "chat", apiResponses: "responses", apiMessages: "messages"}

type apiMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

const maxBodyBytes = 64 << 20

// writeError writes an error body in OpenAI's shape.
func writeError(w http.ResponseWriter, code int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	b := make([]byte, 0, 128+len(msg))
	b = appendErrorJSON(b, code, typ, msg)
	_, _ = w.Write(b)
}

func appendErrorJSON(b []byte, code int, typ, msg string) []byte {
	b = append(b, `{"error":{"message":`...)
	b = strconv.AppendQuote(b, msg)
	b = append(b, `,"type":`...)
	b = strconv.AppendQuote(b, typ)
	b = append(b, `,"param":null,"code":`...)
	b = strconv.AppendInt(b, int64(code), 10)
	return append(b, "}}"...)
}

// promptText returns the text the request's prompt tokens are counted on:
// for chat, the messages' text contents joined by "\n" (the simulator has no
// chat template, so /tokenize with the same messages gives the same count);
// for completions, the prompt string. A prompt of token ids gives ids >= 0.
func promptText(req *apiRequest, api apiKind) (string, int, error) {
	text, ids, _, err := promptParts(req, api)
	return text, ids, err
}

// promptParts is promptText and the tokens of the prompt's images (chat
// image_url parts: see imageTokens).
func promptParts(req *apiRequest, api apiKind) (string, int, int, error) {
	switch api {
	case apiResponses:
		return responsesParts(req)
	case apiMessages:
		t, n, err := messagesInput(req)
		return t, n, 0, err
	}
	if api == apiChat {
		if len(req.Messages) == 0 {
			return "", -1, 0, errors.New("messages must be a non-empty array")
		}
		var sb strings.Builder
		images := 0
		for i, m := range req.Messages {
			txt, img, err := contentImages(m.Content)
			if err != nil {
				return "", -1, 0, fmt.Errorf("messages[%d].content: %w", i, err)
			}
			images += img
			if i > 0 {
				sb.WriteByte('\n')
			}
			sb.WriteString(txt)
		}
		return sb.String(), -1, images, nil
	}
	text, ids, err := completionPrompt(req)
	return text, ids, 0, err
}

// completionPrompt is a completions request's prompt text, or its count of
// token ids.
func completionPrompt(req *apiRequest) (string, int, error) {
	p := bytes.TrimSpace(req.Prompt)
	if len(p) == 0 || bytes.Equal(p, []byte("null")) {
		return "", -1, errors.New("prompt is required")
	}
	switch p[0] {
	case '"':
		var s string
		if err := json.Unmarshal(p, &s); err != nil {
			return "", -1, fmt.Errorf("prompt: %w", err)
		}
		return s, -1, nil
	case '[':
		var ss []string
		if err := json.Unmarshal(p, &ss); err == nil {
			if len(ss) != 1 {
				return "", -1, errors.New("prompt: the simulator takes exactly one prompt per request")
			}
			return ss[0], -1, nil
		}
		var ids []int
		if err := json.Unmarshal(p, &ids); err != nil {
			return "", -1, errors.New("prompt must be a string, [string] or an array of token ids")
		}
		return "", len(ids), nil
	}
	return "", -1, errors.New("prompt must be a string, [string] or an array of token ids")
}

// contentText is a message content's text.
func contentText(raw json.RawMessage) (string, error) {
	s, _, err := contentImages(raw)
	return s, err
}

// contentImages is a message content's text, and the tokens of its images.
func contentImages(raw json.RawMessage) (string, int, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", 0, nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, 0, err
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
		// chat: {"url": ...}; Responses' input_image: the URL itself.
		ImageURL json.RawMessage `json:"image_url"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", 0, errors.New("must be a string or an array of content parts")
	}
	var sb strings.Builder
	images := 0
	for i, p := range parts {
		switch p.Type {
		case "text", "input_text":
			sb.WriteString(p.Text)
		case "image_url", "input_image":
			var u struct {
				URL string `json:"url"`
			}
			if len(p.ImageURL) > 0 && p.ImageURL[0] == '"' {
				_ = json.Unmarshal(p.ImageURL, &u.URL)
			} else if len(p.ImageURL) > 0 {
				_ = json.Unmarshal(p.ImageURL, &u)
			}
			if u.URL == "" {
				return "", 0, fmt.Errorf("part %d: %s part without image_url", i, p.Type)
			}
			n, err := imageTokens(u.URL)
			if err != nil {
				return "", 0, fmt.Errorf("part %d: %w", i, err)
			}
			images += n
		}
	}
	return sb.String(), images, nil
}

// promptInfo is the tokenized prompt.
type promptInfo struct {
	tokens      int
	images      int // of tokens, the images'
	nonce       string
	nonceTokens int
	blockHashes []uint64
}

// analyzePrompt counts tokens and computes the chained block hashes the
// prefix cache keys on (FNV-1a over each token's text, chained block to block,
// so a block's hash depends on everything before it).
func analyzePrompt(text string, idCount int, blockSize int) promptInfo {
	if idCount >= 0 {
		return promptInfo{tokens: idCount}
	}
	var pi promptInfo
	if n, nonce := nonceLen(text); n > 0 {
		pi.nonce = nonce
		pi.nonceTokens = CountTokens(text[:len(nonce)+2])
	}
	const prime = 1099511628211
	var h uint64 = 14695981039346656037
	inBlock := 0
	tokenize(text, func(a, b int) {
		pi.tokens++
		for i := a; i < b; i++ {
			h ^= uint64(text[i])
			h *= prime
		}
		h ^= 0xff // token boundary
		h *= prime
		inBlock++
		if inBlock == blockSize {
			pi.blockHashes = append(pi.blockHashes, h)
			inBlock = 0
		}
	})
	return pi
}

// drawFault picks at most one fault with the configured probabilities.
func drawFault(f Faults, u float64) Fault {
	for _, c := range []struct {
		p float64
		f Fault
	}{
		{f.HTTP429, FaultHTTP429}, {f.HTTP500, FaultHTTP500}, {f.HTTP503, FaultHTTP503},
		{f.Disconnect, FaultDisconnect}, {f.Malformed, FaultMalformed}, {f.Stall, FaultStall},
		{f.Truncate, FaultTruncate}, {f.ErrorInStream, FaultErrorInStream}, {f.HTML, FaultHTML},
		{f.BadUsage, FaultBadUsage},
	} {
		if u < c.p {
			return c.f
		}
		u -= c.p
	}
	return FaultNone
}

// naturalLength draws a natural stop: normal(mean, stdev), rounded, clamped to [1, max].
func naturalLength(rng *rand.Rand, mean, stdev float64, hi int) int {
	n := int(math.Round(mean + stdev*rng.NormFloat64()))
	return min(max(n, 1), hi)
}

func (s *Server) serveCompletion(w http.ResponseWriter, r *http.Request, api apiKind) {
	req, ok := s.decodeRequest(w, r)
	if !ok {
		return
	}
	pi, maxTokens, ok := s.checkRequest(w, &req, api)
	if !ok {
		return
	}
	if api == apiMessages && s.cfg.MessagesDropIgnoreEOS {
		req.IgnoreEOS = false // llama-server's: the field is not passed on
	}
	// Arrival index, random draws and the engine's FIFO queue are taken in
	// one critical section, so arrival order is queue order and a rerun with
	// the same arrival order draws the same lengths, faults and acceptances.
	s.arrMu.Lock()
	a := s.arrive(&req, pi, maxTokens, api)
	t := &a.rec.t
	t.Model, t.Traceparent = req.Model, traceparent(r.Header)
	if s.serveFault(w, a.rec, a.fault) { // unlocks arrMu
		return
	}
	sq := &seq{
		promptTokens: pi.tokens,
		blockHashes:  pi.blockHashes,
		outputTokens: t.TargetTokens,
		arrival:      a.arrival,
		rng:          a.rng,
		notify:       make(chan struct{}, 1),
		// Sized up front (bounded) so the hot path does not grow slices per token.
		sched:    make([]time.Duration, 0, min(t.TargetTokens, 4096)),
		stepEnds: make([]int32, 0, min(t.TargetTokens, 4096)),
	}
	ok = s.eng.submit(sq)
	s.arrMu.Unlock()
	if !ok {
		t.Status = http.StatusServiceUnavailable
		writeError(w, http.StatusServiceUnavailable, "ServiceUnavailableError", "simulator is shutting down")
		t.End = time.Now()
		s.finish(a.rec)
		return
	}
	st := &stream{
		s: s, w: w, r: r, rec: a.rec, sq: sq, chat: api == apiChat, api: api, id: a.id,
		created:      time.Now().Unix(),
		includeUsage: req.StreamOptions != nil && req.StreamOptions.IncludeUsage,
		tool:         t.ToolCall,
		toolName:     calledTool(&req),
	}
	if api != apiCompletions && !st.tool {
		st.reasoning = min(s.cfg.ReasoningTokens, t.TargetTokens)
	}
	if req.Stream {
		st.serveStream()
		if s.cfg.CloseAfterStream {
			markClosed(r)
		}
	} else {
		st.serveWhole(st.wholeBody)
	}
}

// checkRequest refuses what vLLM refuses (n != 1, max_tokens < 1, a prompt
// and completion past the context length) with a 400, and returns the
// prompt's analysis and the request's max_tokens.
func (s *Server) checkRequest(w http.ResponseWriter, req *apiRequest, api apiKind) (promptInfo, int, bool) {
	if req.N != nil && *req.N != 1 {
		writeError(w, http.StatusBadRequest, "BadRequestError", "the simulator supports only n = 1")
		return promptInfo{}, 0, false
	}
	if api == apiMessages && req.MaxTokens == nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "max_tokens: Field required") // Anthropic requires it
		return promptInfo{}, 0, false
	}
	if api == apiResponses {
		req.MaxTokens = req.MaxOutputTokens // Responses' own name; max_tokens means nothing there
	}
	text, idCount, images, err := promptParts(req, api)
	if err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestError", err.Error())
		return promptInfo{}, 0, false
	}
	maxTokens := s.cfg.DefaultMaxTokens
	if req.MaxCompletionTokens != nil {
		maxTokens = *req.MaxCompletionTokens
	}
	if req.MaxTokens != nil {
		maxTokens = *req.MaxTokens
	}
	if maxTokens < 1 {
		writeError(w, http.StatusBadRequest, "BadRequestError", "max_tokens must be at least 1, got "+strconv.Itoa(maxTokens))
		return promptInfo{}, 0, false
	}
	pi := analyzePrompt(text, idCount, s.cfg.BlockSize)
	// Image tokens count in the prompt (as a vision model's usage counts
	// them) and in its prefill, not in the text's prefix-cache blocks.
	pi.tokens += images
	pi.images = images
	if pi.tokens+maxTokens > s.cfg.MaxModelLen {
		writeError(w, http.StatusBadRequest, "BadRequestError", fmt.Sprintf(
			"This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion).",
			s.cfg.MaxModelLen, pi.tokens+maxTokens, pi.tokens, maxTokens))
		return promptInfo{}, 0, false
	}
	if err := s.kvTooBig(pi.tokens + maxTokens); err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestError", err.Error())
		return promptInfo{}, 0, false
	}
	return pi, maxTokens, true
}

// traceparent is a request's W3C traceparent header, bounded (the truth
// keeps what a client sent, not arbitrary bytes).
func traceparent(h http.Header) string {
	v := h.Get("Traceparent")
	return v[:min(len(v), 64)]
}

// kvTooBig is the error for a request of tokens (prompt and max_tokens)
// that needs more blocks than the KV cache holds, which it could never
// finish in; nil otherwise.
func (s *Server) kvTooBig(tokens int) error {
	c := s.cfg.KVCacheBlocks
	if need := (tokens + s.cfg.BlockSize - 1) / s.cfg.BlockSize; c > 0 && need > c {
		return fmt.Errorf("the request needs %d KV-cache blocks (%d tokens), more than the cache's %d", need, tokens, c)
	}
	return nil
}

// arrival is a request as registered: its record and its random draws.
type arrival struct {
	rec     *record
	id      string
	arrival time.Duration
	rng     *rand.Rand
	fault   Fault
}

// arrive registers a request (under arrMu): its arrival index, its own
// generator seeded by (seed, arrival index), so the same arrival order gives
// the same lengths, faults and acceptances however requests are batched,
// and its ground-truth record.
func (s *Server) arrive(req *apiRequest, pi promptInfo, maxTokens int, api apiKind) arrival {
	rec, idx := s.register(pi.nonce)
	a := arrival{rec: rec, arrival: time.Since(s.epoch), rng: rand.New(rand.NewPCG(uint64(s.cfg.Seed), uint64(idx)))}
	a.fault = drawFault(s.cfg.Faults, a.rng.Float64())
	target := maxTokens
	if !req.IgnoreEOS {
		target = naturalLength(a.rng, s.cfg.OutputMean, s.cfg.OutputStdev, maxTokens)
	}
	prefix := [...]string{apiCompletions: "cmpl-", apiChat: "chatcmpl-", apiResponses: "resp_", apiMessages: "msg_"}[api]
	endpoint := endpointNames[api]
	a.id = prefix + fmt.Sprintf("%016x", splitmix(uint64(s.cfg.Seed)<<32^uint64(idx)))
	// A tool call, drawn after the fault (the draw order is part of the
	// seed's meaning): required and named choices always call, auto with
	// the configured probability, none never.
	rec.t.ToolCall = toolCall(req, a.rng, s.cfg.ToolCallRate) && api != apiCompletions
	s.setID(rec, a.id)
	t := &rec.t
	t.Endpoint = endpoint
	t.Nonce = pi.nonce
	t.Stream = req.Stream
	t.PromptTokens = pi.tokens
	t.PromptTokensNoNonce = pi.tokens - pi.nonceTokens
	t.ImageTokens = pi.images
	t.MaxTokens = maxTokens
	t.IgnoreEOS = req.IgnoreEOS
	t.TargetTokens = target
	t.Fault = a.fault
	t.Arrival = s.at(a.arrival)
	return a
}

// serveFault answers a request whose fault strikes before any stream (an
// HTTP error, a proxy's HTML page): it unlocks arrMu and returns true. Other
// requests are left to the caller, arrMu still held.
func (s *Server) serveFault(w http.ResponseWriter, rec *record, fault Fault) bool {
	t := &rec.t
	switch fault {
	case FaultHTTP429, FaultHTTP500, FaultHTTP503:
		s.arrMu.Unlock()
		code := map[Fault]int{FaultHTTP429: 429, FaultHTTP500: 500, FaultHTTP503: 503}[fault]
		typ := map[Fault]string{FaultHTTP429: "RateLimitError", FaultHTTP500: "InternalServerError", FaultHTTP503: "ServiceUnavailableError"}[fault]
		t.Status = code
		s.beginFinish(rec)
		writeError(w, code, typ, "simulated "+http.StatusText(code))
	case FaultHTML:
		s.arrMu.Unlock()
		t.Status = http.StatusOK
		s.beginFinish(rec)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head><body><h1>Bad Gateway</h1><p>simulated proxy error page</p></body></html>\n"))
	default:
		return false
	}
	t.End = time.Now()
	s.finish(rec)
	return true
}

func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	var buf bytes.Buffer
	if r.ContentLength > 0 && r.ContentLength < maxBodyBytes {
		buf.Grow(int(r.ContentLength))
	}
	if _, err := buf.ReadFrom(r.Body); err != nil {
		return nil, fmt.Errorf("reading body: %w", err)
	}
	return buf.Bytes(), nil
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func (s *Server) serveModels(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	b := []byte(`{"object":"list","data":[`)
	b = s.appendModel(b, s.cfg.Model, "")
	for _, m := range s.cfg.LoRAModules {
		b = s.appendModel(append(b, ','), m, s.cfg.Model) // as vLLM lists an adapter
	}
	b = append(b, "]}"...)
	_, _ = w.Write(b)
}

// appendModel appends /v1/models' entry of model id, an adapter of parent
// ("": the base model).
func (s *Server) appendModel(b []byte, id, parent string) []byte {
	b = append(b, `{"id":`...)
	b = strconv.AppendQuote(b, id)
	b = append(b, `,"object":"model","created":`...)
	b = strconv.AppendInt(b, s.epoch.Unix(), 10)
	b = append(b, `,"owned_by":"runner-sim","root":`...)
	b = strconv.AppendQuote(b, id)
	b = append(b, `,"parent":`...)
	if parent == "" {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendQuote(b, parent)
	}
	b = append(b, `,"max_model_len":`...)
	b = strconv.AppendInt(b, int64(s.cfg.MaxModelLen), 10)
	return append(b, '}')
}

// serves reports whether model names a model the simulator serves: its
// own or one of its adapters.
func (s *Server) serves(model string) bool {
	return model == s.cfg.Model || slices.Contains(s.cfg.LoRAModules, model)
}

func (s *Server) serveTokenize(w http.ResponseWriter, r *http.Request) {
	req, ok := s.decodeRequest(w, r)
	if !ok {
		return
	}
	api := apiCompletions
	if len(req.Messages) > 0 {
		api = apiChat
	}
	text, idCount, err := promptText(&req, api)
	if err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestError", err.Error())
		return
	}
	var ids []int
	if idCount >= 0 {
		_ = json.Unmarshal(req.Prompt, &ids)
	} else {
		ids = tokenIDs(text)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(struct {
		Count       int   `json:"count"`
		MaxModelLen int   `json:"max_model_len"`
		Tokens      []int `json:"tokens"`
	}{len(ids), s.cfg.MaxModelLen, ids})
}

func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	if s.cfg.NoMetrics {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = w.Write(s.m.appendText(make([]byte, 0, 8192), s.cfg.Model))
}

// decodeRequest reads and decodes a request body for this server's model,
// answering with an OpenAI-shaped error (and ok false) when it cannot.
func (s *Server) decodeRequest(w http.ResponseWriter, r *http.Request) (req apiRequest, ok bool) {
	body, err := readBody(w, r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestError", err.Error())
		return req, false
	}
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestError", "invalid JSON body: "+err.Error())
		return req, false
	}
	if req.Model != "" && !s.serves(req.Model) {
		writeError(w, http.StatusNotFound, "NotFoundError", "The model `"+req.Model+"` does not exist.")
		return req, false
	}
	return req, true
}
