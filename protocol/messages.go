package protocol

import (
	"errors"
	"strings"

	"github.com/runnerbench/runner/protocol/sse"
)

// messages is the Anthropic Messages API, /v1/messages: messages (the
// system prompt apart) in, a stream of typed events out (message_start with
// the input usage, content_block_delta with text_delta, thinking_delta or
// input_json_delta, message_delta with the stop reason and output usage,
// message_stop; ping in between). max_tokens is required.
type messages struct{}

func (messages) Name() string      { return "messages" }
func (messages) Path() string      { return "/messages" }
func (messages) MediaType() string { return "text/event-stream" }
func (messages) Describe() string  { return "an event stream" }

// AnthropicVersion is the anthropic-version header sent with every request
// (the API's only version to date); a plan header of the same name wins.
const AnthropicVersion = "2023-06-01"

// messagesReserved are body fields extra_body may not replace.
var messagesReserved = map[string]bool{"stream": true, "messages": true, "system": true}

// Headers: the key goes in x-api-key, not in a bearer token, and every
// request names the API's version.
func (messages) Headers(key string) (map[string]string, bool) {
	h := map[string]string{"anthropic-version": AnthropicVersion}
	if key != "" {
		h["x-api-key"] = key
	}
	return h, false
}

// Encode is body as JSON (marshalBody).
func (p messages) Encode(r Request) ([]byte, error) { return marshalBody(p.body(&r)) }

// body sends the conversation: system messages joined into the system
// prompt (Messages has no system role), the rest as user and assistant
// messages; Text as one user message. Tools in Anthropic's form (name,
// description, input_schema), tool_choice as {"type": auto|any|none|tool}.
func (messages) body(r *Request) map[string]any {
	body := streamedBody(r, messagesReserved, "max_tokens")
	setIgnoreEOS(body, r)
	msgs := r.Messages
	if msgs == nil {
		msgs = []Message{{Role: "user", Content: r.Text}}
	}
	var system []string
	conv := make([]Message, 0, len(msgs))
	for _, m := range msgs {
		if m.Role == "system" || m.Role == "developer" {
			system = append(system, m.Content)
			continue
		}
		conv = append(conv, m)
	}
	if len(system) > 0 {
		body["system"] = strings.Join(system, "\n\n")
	}
	body["messages"] = conv
	if len(r.Tools) > 0 {
		tools := make([]any, len(r.Tools))
		for i, t := range r.Tools {
			f := t.fields("input_schema")
			if t.Parameters == nil {
				f["input_schema"] = map[string]any{"type": "object"} // required by the API
			}
			tools[i] = f
		}
		body["tools"] = tools
		switch c := r.ToolChoice; c.Mode {
		case "":
		case ToolFunction:
			body["tool_choice"] = map[string]any{"type": "tool", "name": c.Name}
		case ToolRequired:
			body["tool_choice"] = map[string]any{"type": "any"}
		default:
			body["tool_choice"] = map[string]any{"type": c.Mode}
		}
	}
	return body
}

// Prompt is a lone prompt as chat messages, for /tokenize.
func (messages) Prompt(text string) map[string]any { return chat{}.Prompt(text) }

func (messages) TakesTools() {}

func (messages) StopsWhenNotServed() {}

func (messages) NewDecoder() Decoder {
	return &typedDecoder{rd: sse.NewReader(nil), parse: sse.ParseMessages, api: "messages"}
}

// Probe is a one-token request, not streamed: usage.input_tokens (with the
// cache's tokens) is the prompt's count.
func (messages) Probe(model, text string) (map[string]any, any, func() (int, error)) {
	body := map[string]any{"model": model, "max_tokens": 1, "temperature": 0, "stream": false,
		"messages": []map[string]string{{"role": "user", "content": text}}}
	out := &struct {
		Usage *struct {
			InputTokens   int `json:"input_tokens"`
			CacheCreation int `json:"cache_creation_input_tokens"`
			CacheRead     int `json:"cache_read_input_tokens"`
		} `json:"usage"`
	}{}
	return body, out, func() (int, error) {
		if out.Usage == nil || out.Usage.InputTokens+out.Usage.CacheCreation+out.Usage.CacheRead <= 0 {
			return 0, errors.New("probe response carries no usage.input_tokens")
		}
		return out.Usage.InputTokens + out.Usage.CacheCreation + out.Usage.CacheRead, nil
	}
}
