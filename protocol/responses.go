package protocol

import (
	"errors"
	"io"

	"github.com/runnerbench/runner/protocol/sse"
)

// responses is the OpenAI Responses API, /v1/responses: an input (a string,
// or chat-like messages) in, a stream of typed events out
// (response.created, response.output_text.delta, ..., response.completed
// with the usage). max_output_tokens is the length cap; usage counts
// input_tokens and output_tokens.
type responses struct{}

func (responses) Name() string      { return "responses" }
func (responses) Path() string      { return "/responses" }
func (responses) MediaType() string { return "text/event-stream" }
func (responses) Describe() string  { return "an event stream" }

// responsesReserved are body fields extra_body may not replace.
var responsesReserved = map[string]bool{"stream": true, "input": true}

// Encode is body as JSON (marshalBody).
func (p responses) Encode(r Request) ([]byte, error) { return marshalBody(p.body(&r)) }

// body sends Messages as input messages, or Text as the input string;
// tools in the Responses form (flat: type, name, description, parameters).
func (responses) body(r *Request) map[string]any {
	body := streamedBody(r, responsesReserved, "max_output_tokens")
	setIgnoreEOS(body, r)
	switch {
	case len(r.Images) > 0:
		body["input"] = responsesImages(r)
	case r.Messages == nil:
		body["input"] = r.Text
	default:
		body["input"] = r.Messages // {role, content}: the Responses API's easy input messages
	}
	if len(r.Tools) > 0 {
		tools := make([]any, len(r.Tools))
		for i, t := range r.Tools {
			f := t.fields("parameters")
			f["type"] = "function"
			tools[i] = f
		}
		body["tools"] = tools
		switch c := r.ToolChoice; c.Mode {
		case "":
		case ToolFunction:
			body["tool_choice"] = map[string]any{"type": "function", "name": c.Name}
		default:
			body["tool_choice"] = c.Mode
		}
	}
	return body
}

// setIgnoreEOS asks for exactly max tokens in pinned mode (vLLM's and
// llama.cpp's extension, which both read on every API) and never in natural
// mode, unless extra_body says so itself.
func setIgnoreEOS(body map[string]any, r *Request) {
	if r.Pinned {
		body["ignore_eos"] = true
	} else if _, ok := r.Extra["ignore_eos"]; !ok {
		delete(body, "ignore_eos")
	}
}

// Prompt is a lone prompt as chat messages: what /tokenize counts, and what
// the server's template makes of a Responses input as it does of chat's.
func (responses) Prompt(text string) map[string]any { return chat{}.Prompt(text) }

func (responses) TakesTools() {}

func (responses) StopsWhenNotServed() {}

func (responses) TakesImages() {}

func (responses) NewDecoder() Decoder {
	return &typedDecoder{rd: sse.NewReader(nil), parse: sse.ParseResponses, api: "responses"}
}

// Probe is a 16-token request (OpenAI's least max_output_tokens), not
// streamed: the answer's usage.input_tokens is the prompt's count.
func (responses) Probe(model, text string) (map[string]any, any, func() (int, error)) {
	body := map[string]any{"model": model, "input": text, "max_output_tokens": 16, "temperature": 0, "stream": false}
	out := &struct {
		Usage *struct {
			InputTokens int `json:"input_tokens"`
		} `json:"usage"`
	}{}
	return body, out, func() (int, error) {
		if out.Usage == nil || out.Usage.InputTokens <= 0 {
			return 0, errors.New("probe response carries no usage.input_tokens")
		}
		return out.Usage.InputTokens, nil
	}
}

// typedDecoder reads a typed event stream (Responses, Messages): each
// event's data through the API's scanner. Its terminal event (KindEnd) is
// handed out as it is and then as the end marker, so the engine takes the
// stream's end there; Messages' input tokens, which come in message_start,
// are added to message_delta's output count. An event of another API is an
// *OtherAPIError. It allocates nothing per event.
type typedDecoder struct {
	rd     *sse.Reader
	parse  func([]byte, *sse.Chunk) (sse.Kind, error)
	api    string
	end    bool // the terminal event was handed out: the next is the end marker
	prompt int  // message_start's input tokens
	input  bool // message_start reported usage
	events int
}

func (d *typedDecoder) Reset(body io.Reader) {
	d.rd.Reset(body)
	d.end, d.prompt, d.input, d.events = false, 0, false, 0
}

func (d *typedDecoder) Next(ev *Event) error {
	if d.end {
		d.end = false
		ev.Chunk, ev.Done = sse.Chunk{}, true
		return nil
	}
	data, err := d.rd.Next()
	if err != nil {
		return err
	}
	d.events++
	if string(data) == "[DONE]" {
		ev.Chunk, ev.Done = sse.Chunk{}, true
		return nil
	}
	ev.Done = false
	kind, err := d.parse(data, &ev.Chunk)
	if err != nil {
		return &MalformedError{Data: data}
	}
	c := &ev.Chunk
	switch kind {
	case sse.KindStart:
		if c.Usage {
			// Its output count is a placeholder (Anthropic says 1): only
			// message_delta's is the answer's.
			d.prompt, d.input = c.PromptTokens, true
			c.CompletionTokens = 0
		}
	case sse.KindEnd:
		d.end = true
		if d.api == "messages" {
			// message_stop itself carries nothing: it is the end marker.
			d.end = false
			ev.Chunk, ev.Done = sse.Chunk{}, true
		}
	case sse.KindChat:
		return &OtherAPIError{Want: d.api, Got: "chat"}
	case sse.KindResponses:
		return &OtherAPIError{Want: d.api, Got: "responses"}
	case sse.KindMessages:
		return &OtherAPIError{Want: d.api, Got: "messages"}
	}
	if c.Usage && kind != sse.KindStart && d.input && c.PromptTokens == 0 {
		c.PromptTokens = d.prompt // message_delta: the output count alone
	}
	return nil
}

func (d *typedDecoder) Skip() error {
	if d.end {
		d.end = false
		return nil
	}
	_, err := d.rd.Next()
	return err
}

// responsesPart is a Responses input message's content part: input_text,
// or input_image with its URL (a data URL here) as a string.
type responsesPart struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	ImageURL string `json:"image_url,omitempty"`
}

// responsesImages is r's input with its images added to the last user
// message, whose content becomes parts: its text, then each image.
func responsesImages(r *Request) []any {
	ms := r.Messages
	if ms == nil {
		ms = []Message{{Role: "user", Content: r.Text}}
	}
	return withParts(ms, func(text string) []responsesPart {
		parts := make([]responsesPart, 0, 1+len(r.Images))
		parts = append(parts, responsesPart{Type: "input_text", Text: text})
		for _, u := range r.Images {
			parts = append(parts, responsesPart{Type: "input_image", ImageURL: u})
		}
		return parts
	})
}
