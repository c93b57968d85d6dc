package protocol

import (
	"encoding/json"
	"fmt"
)

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

func (score) Name() string      { return "score" }
func (score) Path() string      { return "/score" }
func (score) MediaType() string { return "application/json" }
func (score) Describe() string  { return "a JSON answer" }
func (score) AtRoot()           {}
func (score) ScoresDocuments()  {}

// scoreReserved are the body fields extra_body may not replace.
var scoreReserved = map[string]bool{"text_1": true, "text_2": true, "model": true}

// Encode sends Text (or the messages flattened) as text_1 and Documents as
// text_2.
func (score) Encode(r Request) ([]byte, error) {
	body := make(map[string]any, 3+len(r.Extra))
	for k, v := range r.Extra {
		if !scoreReserved[k] {
			body[k] = v
		}
	}
	query := r.Text
	if r.Messages != nil {
		query = flatten(r.Messages)
	}
	docs := r.Documents
	if docs == nil {
		docs = []string{}
	}
	body["model"], body["text_1"], body["text_2"] = r.Model, query, docs
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encoding request body (extra_body?): %w", err)
	}
	return b, nil
}

// Prompt is vLLM's /tokenize form of a text without a chat template.
func (score) Prompt(text string) map[string]any { return map[string]any{"prompt": text} }

func (score) NewDecoder() Decoder { return newWholeDecoder(parseScore) }

// parseScore reads a score answer: each item of data must carry an index
// and a score; Results is how many.
func parseScore(data []byte, ev *Event) error {
	var a struct {
		wholeError
		Data *[]struct {
			Index *int     `json:"index"`
			Score *float64 `json:"score"`
		} `json:"data"`
		Usage wholeUsage `json:"usage"`
	}
	if err := json.Unmarshal(data, &a); err != nil {
		return malformed(data, nil)
	}
	if a.Usage.note(&a.wholeError, ev); ev.Error {
		return nil
	}
	if a.Data == nil || len(*a.Data) == 0 {
		return malformed(data, errNoResults)
	}
	for i, d := range *a.Data {
		if d.Index == nil || d.Score == nil {
			return malformed(data, fmt.Errorf("data[%d] has no index or score", i))
		}
	}
	ev.Results = len(*a.Data)
	return nil
}
