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

func (rerank) Name() string        { return "rerank" }
func (rerank) Path() string        { return "/rerank" }
func (rerank) MediaType() string   { return "application/json" }
func (rerank) Describe() string    { return "a JSON answer" }
func (rerank) ScoresDocuments()    {}
func (rerank) StopsWhenNotServed() {}

// rerankReserved are the body fields extra_body may not replace.
var rerankReserved = map[string]bool{"query": true, "documents": true, "model": true}

// Encode is body as JSON (marshalBody).
func (p rerank) Encode(r Request) ([]byte, error) { return marshalBody(p.body(&r)) }

// body sends Text (or the messages flattened) as the query and Documents.
func (rerank) body(r *Request) map[string]any {
	return scoringBody(r, "query", "documents", rerankReserved)
}

// Prompt is vLLM's /tokenize form of a text without a chat template.
func (rerank) Prompt(text string) map[string]any { return map[string]any{"prompt": text} }

func (rerank) NewDecoder() Decoder {
	return newWholeDecoder(func(data []byte, ev *Event) error { return parseScores(data, ev, false) })
}

// scoringBody is the body of an API that scores documents against a
// query: extra_body (less reserved), the model, Text (or the messages
// flattened) as field query and Documents as field docs.
func scoringBody(r *Request, query, docs string, reserved map[string]bool) map[string]any {
	body := baseBody(r, reserved, 3)
	q := r.Text
	if r.Messages != nil {
		q = Flatten(r.Messages)
	}
	d := r.Documents
	if d == nil {
		d = []string{}
	}
	body[query], body[docs] = q, d
	return body
}

// scoreItem is one document's score in an answer: rerank's result (index,
// relevance_score) or score's data item (index, score).
type scoreItem struct {
	Index     *int     `json:"index"`
	Relevance *float64 `json:"relevance_score"`
	Score     *float64 `json:"score"`
}

// parseScores reads a scoring answer: rerank's results (each with an index
// and a relevance_score), or with asScore score's data (each with an index
// and a score); Results is how many. The other API's list is not read.
func parseScores(data []byte, ev *Event, asScore bool) error {
	var a struct {
		wholeError
		Results json.RawMessage `json:"results"`
		Data    json.RawMessage `json:"data"`
		Usage   wholeUsage      `json:"usage"`
	}
	if err := json.Unmarshal(data, &a); err != nil {
		return malformed(data, nil)
	}
	if a.Usage.note(&a.wholeError, ev); ev.Error {
		return nil
	}
	raw, list, field := a.Results, "results", "relevance_score"
	if asScore {
		raw, list, field = a.Data, "data", "score"
	}
	var items []scoreItem
	if len(raw) > 0 && json.Unmarshal(raw, &items) != nil {
		return malformed(data, nil)
	}
	if len(items) == 0 {
		return noResults(data, scoringAPI(asScore))
	}
	for i, it := range items {
		score := it.Relevance
		if asScore {
			score = it.Score
		}
		if it.Index == nil || score == nil {
			return badItem(data, scoringAPI(asScore), fmt.Errorf("%s[%d] has no index or %s", list, i, field))
		}
	}
	ev.Results = len(items)
	return nil
}

// scoringAPI names the API parseScores reads for.
func scoringAPI(asScore bool) string {
	if asScore {
		return "score"
	}
	return "rerank"
}
