package protocol

import (
	"encoding/json"
	"fmt"
)

// rerank is /v1/rerank: a query and documents in, a relevance score per
// document out, in one JSON answer. vLLM and llama.cpp's server take the
// same request ({"model", "query", "documents"}) and answer nearly alike:
// {"results": [{"index", "relevance_score"}], "usage": ...}, where
// llama.cpp's usage has prompt_tokens and total_tokens and vLLM's only
// total_tokens (vLLM also echoes each document). Nothing is streamed.
type rerank struct{}

func (rerank) Name() string      { return "rerank" }
func (rerank) Path() string      { return "/rerank" }
func (rerank) MediaType() string { return "application/json" }
func (rerank) Describe() string  { return "a JSON answer" }
func (rerank) ScoresDocuments()  {}

// rerankReserved are the body fields extra_body may not replace.
var rerankReserved = map[string]bool{"query": true, "documents": true, "model": true}

// Encode sends Text (or the messages flattened) as the query and Documents.
func (rerank) Encode(r Request) ([]byte, error) {
	body := make(map[string]any, 3+len(r.Extra))
	for k, v := range r.Extra {
		if !rerankReserved[k] {
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
	body["model"], body["query"], body["documents"] = r.Model, query, docs
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encoding request body (extra_body?): %w", err)
	}
	return b, nil
}

// Prompt is vLLM's /tokenize form of a text without a chat template.
func (rerank) Prompt(text string) map[string]any { return map[string]any{"prompt": text} }

func (rerank) NewDecoder() Decoder { return newWholeDecoder(parseRerank) }

// parseRerank reads a rerank answer: each result must carry an index and a
// relevance_score; Results is how many.
func parseRerank(data []byte, ev *Event) error {
	var a struct {
		wholeError
		Results *[]struct {
			Index *int     `json:"index"`
			Score *float64 `json:"relevance_score"`
		} `json:"results"`
		Usage wholeUsage `json:"usage"`
	}
	if err := json.Unmarshal(data, &a); err != nil {
		return malformed(data, nil)
	}
	if a.Usage.note(&a.wholeError, ev); ev.Error {
		return nil
	}
	if a.Results == nil || len(*a.Results) == 0 {
		return malformed(data, errNoResults)
	}
	for i, r := range *a.Results {
		if r.Index == nil || r.Score == nil {
			return malformed(data, fmt.Errorf("results[%d] has no index or relevance_score", i))
		}
	}
	ev.Results = len(*a.Results)
	return nil
}
