package protocol

// score is vLLM's /score: the cross-encoder's other route beside /rerank,
// which some deployments expose alone. The request pairs text_1 (the query,
// one string) with each text of text_2 (the documents); the answer is one
// JSON document, {"object": "list", "data": [{"index", "object": "score",
// "score"}], "usage": {"prompt_tokens", "total_tokens", ...}}, the data in
// the documents' order (vLLM's pooling/score protocol.py and serving.py).
// vLLM serves it at the server's root, /score; /v1/score is kept beside it
// with a deprecation warning logged for every request, so the path is the
// root's (Rooted). Nothing is streamed.
type score struct{}

func (score) Name() string        { return "score" }
func (score) Path() string        { return "/score" }
func (score) MediaType() string   { return "application/json" }
func (score) Describe() string    { return "a JSON answer" }
func (score) AtRoot()             {}
func (score) ScoresDocuments()    {}
func (score) StopsWhenNotServed() {}

// scoreReserved are the body fields extra_body may not replace.
var scoreReserved = map[string]bool{"text_1": true, "text_2": true, "model": true}

// Encode is body as JSON (marshalBody).
func (p score) Encode(r Request) ([]byte, error) { return marshalBody(p.body(&r)) }

// body sends Text (or the messages flattened) as text_1 and Documents as
// text_2.
func (score) body(r *Request) map[string]any {
	return scoringBody(r, "text_1", "text_2", scoreReserved)
}

// Prompt is vLLM's /tokenize form of a text without a chat template.
func (score) Prompt(text string) map[string]any { return map[string]any{"prompt": text} }

func (score) NewDecoder() Decoder {
	return newWholeDecoder(func(data []byte, ev *Event) error { return parseScores(data, ev, true) })
}
