package protocol

// completions is /v1/completions: one prompt string in, a stream of text
// chunks out. It has no conversation history.
type completions struct{}

func (completions) Name() string      { return "completions" }
func (completions) Path() string      { return "/completions" }
func (completions) MediaType() string { return "text/event-stream" }
func (completions) Describe() string  { return "an event stream" }

// Encode is body as JSON (marshalBody).
func (p completions) Encode(r Request) ([]byte, error) { return marshalBody(p.body(&r)) }

// body sends Text, or chat messages flattened into one prompt.
func (completions) body(r *Request) map[string]any {
	return openAIBody(r, func(body map[string]any) {
		text := r.Text
		if r.Messages != nil {
			text = Flatten(r.Messages)
		}
		body["prompt"] = text
	})
}

func (completions) Prompt(text string) map[string]any { return map[string]any{"prompt": text} }

func (completions) NewDecoder() Decoder { return newSSEDecoder() }

// Probe is the OpenAI probe (openai.go).
func (p completions) Probe(model, text string) (map[string]any, any, func() (int, error)) {
	return openAIProbe(p, model, text)
}

// Flatten is chat messages as one text, their contents a line each: the
// prompt of an API that takes text, not messages (completions, an
// embeddings input, a rerank query).
func Flatten(ms []Message) string {
	var b []byte
	for i, m := range ms {
		if i > 0 {
			b = append(b, '\n')
		}
		b = append(b, m.Content...)
	}
	return string(b)
}
