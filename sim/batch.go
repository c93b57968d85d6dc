package sim

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// The batch APIs: POST /v1/embeddings, /v1/rerank and vLLM's /score (at
// the root, and at /v1/score as vLLM keeps it), answered whole. A
// batch request is one prefill in the engine (its prompt tokens are every
// text's), answered when the engine's step ends it, as a pooling model's
// forward pass is: its truth has the arrival, the prefill's start and its
// end (FirstToken), and no output tokens.

// EmbeddingDim is the length of the simulator's embedding vectors (the
// tiny llama.cpp test model's is 64 too).
const EmbeddingDim = 64

// rerankPairTokens is what a rerank server adds to each query-document
// pair: llama.cpp's reranking prompt is BOS query EOS SEP document EOS.
// The simulator's score pairs cost the same.
const rerankPairTokens = 4

// batchKind is the batch API a request calls.
type batchKind int

const (
	batchEmbeddings batchKind = iota
	batchRerank
	batchScore
)

// batchRequest is the part of an embeddings, rerank or score request the
// simulator reads.
type batchRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Query          *string         `json:"query"`
	Documents      []string        `json:"documents"`
	TopN           *int            `json:"top_n"`
	Text1          json.RawMessage `json:"text_1"`
	Text2          json.RawMessage `json:"text_2"`
}

// batchInputs are a batch request's texts and their token counts.
type batchInputs struct {
	texts  []string // nil for token-id inputs; the documents of pairs
	query  []string // the query of each pair (rerank, score)
	tokens []int
	nonce  string // the first text's leading nonce
	noNon  int    // the first text's nonce tokens
	total  int
}

// embeddingInputs reads input: a string, a list of strings, a list of token
// ids or a list of such lists (OpenAI's four forms).
func embeddingInputs(raw json.RawMessage) (batchInputs, error) {
	raw = bytes.TrimSpace(raw)
	var in batchInputs
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return in, errors.New("input is required")
	}
	var one string
	var many []string
	var ids []int
	var idLists [][]int
	switch {
	case json.Unmarshal(raw, &one) == nil:
		in.texts = []string{one}
	case json.Unmarshal(raw, &many) == nil:
		in.texts = many
	case json.Unmarshal(raw, &ids) == nil:
		in.tokens = []int{len(ids)}
	case json.Unmarshal(raw, &idLists) == nil:
		for _, l := range idLists {
			in.tokens = append(in.tokens, len(l))
		}
	default:
		return in, errors.New("input must be a string, a list of strings or token ids")
	}
	if len(in.texts) == 0 && len(in.tokens) == 0 {
		return in, errors.New("input must not be empty")
	}
	for _, t := range in.texts {
		in.tokens = append(in.tokens, CountTokens(t))
	}
	return in, nil
}

// noteTokens sums the counts and takes the first text's nonce.
func (in *batchInputs) noteTokens(extra int) {
	for i := range in.tokens {
		in.tokens[i] += extra
		in.total += in.tokens[i]
	}
	if len(in.texts) > 0 {
		if n, nonce := nonceLen(in.texts[0]); n > 0 {
			in.nonce = nonce
			in.noNon = CountTokens(in.texts[0][:len(nonce)+2])
		}
	}
}

// serveBatch answers POST /v1/embeddings, /v1/rerank or /score.
func (s *Server) serveBatch(w http.ResponseWriter, r *http.Request, kind batchKind) {
	body, err := readBody(w, r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestError", err.Error())
		return
	}
	var req batchRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestError", "invalid JSON body: "+err.Error())
		return
	}
	if req.Model != "" && !s.serves(req.Model) {
		writeError(w, http.StatusNotFound, "NotFoundError", "The model `"+req.Model+"` does not exist.")
		return
	}
	in, err := s.batchInputs(&req, kind)
	if err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestError", err.Error())
		return
	}
	s.arrMu.Lock()
	a := s.arriveBatch(in, kind)
	if s.serveFault(w, a.rec, a.fault) { // unlocks arrMu
		return
	}
	sq := &seq{
		promptTokens: in.total, outputTokens: 1, arrival: a.arrival, rng: a.rng, pooled: true,
		notify: make(chan struct{}, 1), sched: make([]time.Duration, 0, 1), stepEnds: make([]int32, 0, 1),
	}
	ok := s.eng.submit(sq)
	s.arrMu.Unlock()
	if !ok {
		a.rec.t.Status = http.StatusServiceUnavailable
		writeError(w, http.StatusServiceUnavailable, "ServiceUnavailableError", "simulator is shutting down")
		a.rec.t.End = time.Now()
		s.finish(a.rec)
		return
	}
	st := &stream{s: s, w: w, r: r, rec: a.rec, sq: sq, id: a.id, created: time.Now().Unix(), pooled: true}
	st.serveWhole(func() []byte {
		switch kind {
		case batchRerank:
			return s.rerankBody(&req, in, a)
		case batchScore:
			return s.scoreBody(in, a, st.created)
		}
		return s.embeddingsBody(&req, in, a)
	})
}

// batchInputs reads and checks the request's texts: embeddings' inputs, or
// the query-document pairs of rerank and score (each counted with the
// query and the pair's tokens).
func (s *Server) batchInputs(req *batchRequest, kind batchKind) (batchInputs, error) {
	var in batchInputs
	var err error
	switch kind {
	case batchRerank:
		if req.Query == nil {
			return in, errors.New("query is required")
		}
		if len(req.Documents) == 0 {
			return in, errors.New("documents must be a non-empty list")
		}
		err = in.pairs([]string{*req.Query}, req.Documents)
	case batchScore:
		var q, d []string
		if q, err = scoreTexts(req.Text1, "text_1"); err == nil {
			if d, err = scoreTexts(req.Text2, "text_2"); err == nil {
				err = in.pairs(q, d)
			}
		}
	default:
		if in, err = embeddingInputs(req.Input); err != nil {
			return in, err
		}
		in.noteTokens(0)
		if f := req.EncodingFormat; f != "" && f != "float" && f != "base64" {
			return in, fmt.Errorf("encoding_format must be float or base64, got %q", f)
		}
	}
	if err != nil {
		return in, err
	}
	for i, n := range in.tokens {
		if n > s.cfg.MaxModelLen {
			return in, fmt.Errorf("input %d has %d tokens, more than the model's maximum context length of %d tokens", i, n, s.cfg.MaxModelLen)
		}
	}
	return in, s.kvTooBig(in.total + 1)
}

// pairs makes the query-document pairs of queries (one for every document,
// or one each) and docs, each pair's tokens its query's, its document's and
// the template's; the nonce is the first query's.
func (in *batchInputs) pairs(queries, docs []string) error {
	if len(queries) != 1 && len(queries) != len(docs) {
		// vLLM's words (validate_score_input), less the capital.
		return errors.New("input lengths must be either 1:1, 1:N or N:N")
	}
	in.texts = docs
	for i, d := range docs {
		q := queries[min(i, len(queries)-1)]
		in.query = append(in.query, q)
		in.tokens = append(in.tokens, CountTokens(q)+CountTokens(d))
	}
	in.noteTokens(rerankPairTokens)
	in.nonce, in.noNon = "", 0
	if n, nonce := nonceLen(queries[0]); n > 0 {
		in.nonce, in.noNon = nonce, CountTokens(queries[0][:len(nonce)+2])
	}
	return nil
}

// scoreTexts reads text_1 or text_2 of a score request: a string, or a
// non-empty list of strings.
func scoreTexts(raw json.RawMessage, field string) ([]string, error) {
	var one string
	var many []string
	switch {
	case len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")):
		return nil, errors.New(field + " is required")
	case json.Unmarshal(raw, &one) == nil:
		return []string{one}, nil
	case json.Unmarshal(raw, &many) == nil && len(many) > 0:
		return many, nil
	}
	return nil, errors.New(field + " must be a string or a non-empty list of strings")
}

// arriveBatch registers a batch request (under arrMu), as arrive does a
// completion.
func (s *Server) arriveBatch(in batchInputs, kind batchKind) arrival {
	rec, idx := s.register(in.nonce)
	a := arrival{rec: rec, arrival: time.Since(s.epoch), rng: rand.New(rand.NewPCG(uint64(s.cfg.Seed), uint64(idx)))}
	a.fault = drawFault(s.cfg.Faults, a.rng.Float64())
	prefix, endpoint := "embd-", "embeddings"
	switch kind {
	case batchRerank:
		prefix, endpoint = "rerank-", "rerank"
	case batchScore:
		prefix, endpoint = "score-", "score"
	}
	a.id = prefix + fmt.Sprintf("%016x", splitmix(uint64(s.cfg.Seed)<<32^uint64(idx)))
	s.setID(rec, a.id)
	t := &rec.t
	t.Endpoint, t.Nonce, t.Stream = endpoint, in.nonce, false
	t.PromptTokens, t.PromptTokensNoNonce = in.total, in.total-in.noNon
	t.Inputs = len(in.tokens)
	t.Fault = a.fault
	t.Arrival = s.at(a.arrival)
	return a
}

// usageJSON is a batch answer's usage, as llama.cpp and vLLM send it for
// embeddings (prompt and total tokens; FaultBadUsage: impossible ones),
// with more fields before its end.
func usageJSON(b []byte, prompt int, fault Fault, more string) []byte {
	if fault == FaultBadUsage {
		prompt = badPromptTokens
	}
	b = append(b, `"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	b = append(b, more...)
	return append(b, '}')
}

// embeddingsBody is the answer: one unit vector per input, drawn from the
// input's text (the same text always gets the same vector).
func (s *Server) embeddingsBody(req *batchRequest, in batchInputs, a arrival) []byte {
	b := make([]byte, 0, 64+len(in.tokens)*(EmbeddingDim*12+48))
	b = append(b, `{"object":"list","data":[`...)
	vec := make([]float32, EmbeddingDim)
	raw := make([]byte, 4*EmbeddingDim)
	for i := range in.tokens {
		if i > 0 {
			b = append(b, ',')
		}
		seed := uint64(i)
		if in.texts != nil {
			seed = fnv64(in.texts[i])
		}
		unitVector(vec, seed)
		b = append(b, `{"object":"embedding","index":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `,"embedding":`...)
		if req.EncodingFormat == "base64" {
			for k, v := range vec {
				binary.LittleEndian.PutUint32(raw[4*k:], math.Float32bits(v))
			}
			b = append(b, '"')
			b = base64.StdEncoding.AppendEncode(b, raw)
			b = append(b, '"')
		} else {
			b = append(b, '[')
			for k, v := range vec {
				if k > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendFloat(b, float64(v), 'g', 7, 32)
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	b = append(b, `],"model":`...)
	b = strconv.AppendQuote(b, s.cfg.Model)
	b = append(b, ',')
	b = usageJSON(b, in.total, a.fault, "")
	return append(b, '}')
}

// rerankBody is the answer in llama.cpp's shape: a relevance score per
// document, sorted best first as llama-server sorts them (not in the
// documents' order), top_n of them when asked.
func (s *Server) rerankBody(req *batchRequest, in batchInputs, a arrival) []byte {
	type result struct {
		index int
		score float64
	}
	rs := make([]result, len(req.Documents))
	for i := range req.Documents {
		rs[i] = result{i, in.pairScore(i)}
	}
	slices.SortStableFunc(rs, func(x, y result) int {
		if x.score > y.score {
			return -1
		} else if x.score < y.score {
			return 1
		}
		return 0
	})
	if req.TopN != nil && *req.TopN > 0 && *req.TopN < len(rs) {
		rs = rs[:*req.TopN]
	}
	b := make([]byte, 0, 96+len(rs)*48)
	b = append(b, `{"model":`...)
	b = strconv.AppendQuote(b, s.cfg.Model)
	b = append(b, `,"object":"list",`...)
	b = usageJSON(b, in.total, a.fault, "")
	b = append(b, `,"results":[`...)
	for i, r := range rs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"index":`...)
		b = strconv.AppendInt(b, int64(r.index), 10)
		b = append(b, `,"relevance_score":`...)
		b = strconv.AppendFloat(b, r.score, 'g', 8, 64)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// pairScore is pair i's score: in (0, 1), drawn from the pair's texts (the
// same pair always gets the same score).
func (in *batchInputs) pairScore(i int) float64 {
	return float64(splitmix(fnv64(in.query[i])^fnv64(in.texts[i]))>>11) / (1 << 53)
}

// scoreBody is the answer in vLLM's /score shape: a score per pair, in the
// pairs' order, and vLLM's usage (prompt and total tokens, no completion).
func (s *Server) scoreBody(in batchInputs, a arrival, created int64) []byte {
	b := make([]byte, 0, 160+len(in.texts)*48)
	b = append(b, `{"id":`...)
	b = strconv.AppendQuote(b, a.id)
	b = append(b, `,"object":"list","created":`...)
	b = strconv.AppendInt(b, created, 10)
	b = append(b, `,"model":`...)
	b = strconv.AppendQuote(b, s.cfg.Model)
	b = append(b, `,"data":[`...)
	for i := range in.texts {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"index":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `,"object":"score","score":`...)
		b = strconv.AppendFloat(b, in.pairScore(i), 'g', 8, 64)
		b = append(b, '}')
	}
	b = append(b, `],`...)
	b = usageJSON(b, in.total, a.fault, `,"completion_tokens":0,"prompt_tokens_details":null`)
	return append(b, '}')
}

// fnv64 is FNV-1a of s.
func fnv64(s string) uint64 {
	var h uint64 = 14695981039346656037
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// unitVector fills v with a vector of length 1 drawn from seed.
func unitVector(v []float32, seed uint64) {
	var norm float64
	x := seed
	f := make([]float64, len(v))
	for i := range f {
		x = splitmix(x)
		f[i] = float64(int64(x>>11)-(1<<52)) / (1 << 52)
		norm += f[i] * f[i]
	}
	norm = math.Sqrt(norm)
	if norm == 0 {
		norm = 1
	}
	for i := range v {
		v[i] = float32(f[i] / norm)
	}
}
