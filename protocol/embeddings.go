package protocol

import (
	"encoding/json"
	"fmt"
)

// embeddings is /v1/embeddings: a batch of texts in, one vector per text
// out, in one JSON answer (OpenAI's shape, which vLLM, llama.cpp's server
// and llm-d-inference-sim all send: {"data": [{"index", "embedding"}],
// "usage": {"prompt_tokens", "total_tokens"}}). Nothing is streamed.
type embeddings struct{}

func (embeddings) Name() string        { return "embeddings" }
func (embeddings) Path() string        { return "/embeddings" }
func (embeddings) MediaType() string   { return "application/json" }
func (embeddings) Describe() string    { return "a JSON answer" }
func (embeddings) BatchesInputs()      {}
func (embeddings) StopsWhenNotServed() {}

// embeddingsReserved are the body fields extra_body may not replace.
var embeddingsReserved = map[string]bool{"input": true, "model": true}

// Encode is body as JSON (marshalBody).
func (p embeddings) Encode(r Request) ([]byte, error) { return marshalBody(p.body(&r)) }

// body sends Inputs as the batch, or Text as the lone input (a string, as
// the OpenAI clients send one text).
func (embeddings) body(r *Request) map[string]any {
	body := baseBody(r, embeddingsReserved, 2)
	switch {
	case len(r.Inputs) > 0:
		body["input"] = r.Inputs
	case r.Messages != nil:
		body["input"] = Flatten(r.Messages)
	default:
		body["input"] = r.Text
	}
	return body
}

// Prompt is vLLM's /tokenize form of a text without a chat template.
func (embeddings) Prompt(text string) map[string]any { return map[string]any{"prompt": text} }

func (embeddings) NewDecoder() Decoder { return newWholeDecoder(parseEmbeddings) }

// Probe counts a text's tokens with one embedding of it: its usage.
func (embeddings) Probe(model, text string) (map[string]any, any, func() (int, error)) {
	body := map[string]any{"model": model, "input": text}
	out := &struct {
		Usage *wholeUsage `json:"usage"`
	}{}
	return body, out, func() (int, error) {
		var ev Event
		if out.Usage != nil {
			out.Usage.note(&wholeError{}, &ev)
		}
		if !ev.Usage || ev.UsageInvalid || ev.PromptTokens <= 0 {
			return 0, fmt.Errorf("probe answer carries no usage.prompt_tokens")
		}
		return ev.PromptTokens, nil
	}
}

// parseEmbeddings reads an embeddings answer: each item of data must carry
// an embedding (an array of numbers, or a base64 string when the request
// asked for encoding_format base64); Results is how many.
func parseEmbeddings(data []byte, ev *Event) error {
	var a struct {
		wholeError
		Data *[]struct {
			Embedding json.RawMessage `json:"embedding"`
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
		return noResults(data, "embeddings")
	}
	for i, d := range *a.Data {
		if len(d.Embedding) < 2 || (d.Embedding[0] != '[' && d.Embedding[0] != '"') || string(d.Embedding) == "[]" {
			return badItem(data, "embeddings", fmt.Errorf("data[%d] has no embedding", i))
		}
	}
	ev.Results = len(*a.Data)
	return nil
}
