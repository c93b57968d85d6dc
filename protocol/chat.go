package protocol

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
)

// chat is /v1/chat/completions: a list of messages in, a stream of
// delta.content (or reasoning) chunks out.
type chat struct{}

func (chat) Name() string      { return "chat" }
func (chat) Path() string      { return "/chat/completions" }
func (chat) MediaType() string { return "text/event-stream" }
func (chat) Describe() string  { return "an event stream" }
func (chat) TakesImages()      {}

// Encode is body as JSON (marshalBody).
func (p chat) Encode(r Request) ([]byte, error) { return marshalBody(p.body(&r)) }

// body sends Messages, or Text as one user message.
func (chat) body(r *Request) map[string]any {
	return openAIBody(r, func(body map[string]any) {
		messages := r.Messages
		if messages == nil {
			messages = []Message{{Role: "user", Content: r.Text}}
		}
		if len(r.Images) > 0 {
			body["messages"] = withImages(messages, r.Images)
			return
		}
		body["messages"] = messages
		setChatTools(body, r)
	})
}

// contentPart is one part of a chat message's content: text, or an image
// by URL (a data URL here).
type contentPart struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	ImageURL *imageURL `json:"image_url,omitempty"`
}

type imageURL struct {
	URL string `json:"url"`
}

// withImages is messages with images added to the last user message, whose
// content becomes a list of parts: its text, then each image.
func withImages(ms []Message, images []string) []any {
	return withParts(ms, func(text string) []contentPart {
		parts := make([]contentPart, 0, 1+len(images))
		parts = append(parts, contentPart{Type: "text", Text: text})
		for _, u := range images {
			parts = append(parts, contentPart{Type: "image_url", ImageURL: &imageURL{URL: u}})
		}
		return parts
	})
}

// withParts is ms with the last user message's content (the last message's,
// without one) made parts(its text), in an API's own part type P.
func withParts[P any](ms []Message, parts func(text string) []P) []any {
	last := len(ms) - 1
	for i := last; i >= 0; i-- {
		if ms[i].Role == "user" {
			last = i
			break
		}
	}
	out := make([]any, len(ms))
	for i, m := range ms {
		if i != last {
			out[i] = m
			continue
		}
		out[i] = struct {
			Role    string `json:"role"`
			Content []P    `json:"content"`
		}{m.Role, parts(m.Content)}
	}
	return out
}

func (chat) Prompt(text string) map[string]any {
	return map[string]any{"messages": []map[string]string{{"role": "user", "content": text}}}
}

func (chat) TakesTools() {}

func (chat) NewDecoder() Decoder { return newSSEDecoder() }

// Probe is the OpenAI probe (openai.go).
func (p chat) Probe(model, text string) (map[string]any, any, func() (int, error)) {
	return openAIProbe(p, model, text)
}

// Reply capture bounds: the longest captured response body a Reply reads,
// and the reply text kept for the history.
const (
	MaxCapture    = 4 << 20
	MaxReplyText  = 64 << 10
	replyLineBuf0 = 64 << 10
)

// Reply extracts the assistant's text from a captured chat stream: the
// delta.content (or completions' text) of every data line, in order, up to
// MaxReplyText bytes. It runs after the request's clock has stopped.
func (chat) Reply(stream []byte) string {
	var (
		out   strings.Builder
		chunk struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
				Text string `json:"text"`
			} `json:"choices"`
		}
	)
	sc := bufio.NewScanner(bytes.NewReader(stream))
	sc.Buffer(make([]byte, 0, replyLineBuf0), MaxCapture)
	for sc.Scan() && out.Len() < MaxReplyText {
		line := sc.Bytes()
		data, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue
		}
		data = bytes.TrimSpace(data)
		if len(data) == 0 || data[0] != '{' {
			continue // [DONE] or junk
		}
		chunk.Choices = nil // a reused element would keep fields this chunk lacks
		if json.Unmarshal(data, &chunk) != nil {
			continue
		}
		for _, c := range chunk.Choices {
			s := c.Delta.Content
			if s == "" {
				s = c.Text
			}
			out.WriteString(s[:min(len(s), MaxReplyText-out.Len())])
		}
	}
	return out.String()
}
