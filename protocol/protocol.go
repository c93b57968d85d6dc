// Package protocol is the seam between the load engine and the APIs it
// measures: what differs from one API to the next (the path, the request
// body, how a response is read into events, what its usage means) is one
// Protocol, one file each, found by the plan's api value in Registry. The
// engine sends, times and records; it never asks which API it speaks.
//
// The package is a leaf (it imports only the SSE scanner), so the plan
// loader validates a stage's api against the same list the engine uses.
package protocol

import (
	"io"
	"strings"

	"github.com/runnerbench/runner/protocol/sse"
)

// Protocol is one API a stage may call.
type Protocol interface {
	// Name is the plan's api value ("chat", "completions").
	Name() string
	// Path is the endpoint's path after the base URL ("/chat/completions").
	Path() string
	// MediaType is the content type a successful response must have
	// ("text/event-stream"), sent as Accept; Describe names it for an
	// error ("an event stream").
	MediaType() string
	Describe() string
	// Encode builds a request's body. (r is a value: a pointer through the
	// interface would cost an allocation per request.)
	Encode(r Request) ([]byte, error)
	// Prompt is the body fields that carry a lone prompt text, for counting
	// its tokens on the server (a /tokenize request, a one-token probe).
	Prompt(text string) map[string]any
	// NewDecoder returns a reader of this API's responses; one worker
	// reuses it request after request.
	NewDecoder() Decoder
}

// Conversational is a Protocol whose requests carry a conversation's
// history (chat messages), so a multi-turn stage may use it.
type Conversational interface {
	Protocol
	// Reply is the assistant's text in a captured response body, for the
	// next turn's history.
	Reply(body []byte) string
}

// Prober is a Protocol that can count a prompt's tokens with a real request
// (when the server has no /tokenize): what the probe sends and what the
// server's usage means.
type Prober interface {
	Protocol
	// Probe is a one-token, non-streamed request for text to Path: its
	// body, the value its JSON answer decodes into, and the prompt tokens
	// that decoded answer reports.
	Probe(model, text string) (body map[string]any, answer any, tokens func() (int, error))
}

// Request is what a stage asks of one request, whatever the API.
type Request struct {
	Model       string
	MaxTokens   int
	Temperature float64
	// Pinned asks the server to emit exactly MaxTokens (ignore_eos).
	Pinned bool
	// Extra is the stage's extra_body: fields merged into the body, save
	// those the protocol's measurement depends on.
	Extra map[string]any
	// Messages is the chat history; nil: Text is the prompt.
	Messages []Message
	Text     string
	// Inputs is a batch of texts for an API that takes several in one
	// request (embeddings); nil: Text is the one input.
	Inputs []string
	// Documents are what a rerank scores against its query (Text).
	Documents []string
	// Images are data URLs sent with the prompt (chat: content parts of its
	// last user message).
	Images []string
	// Tools are the functions the model may call (none: no tools sent),
	// and ToolChoice how it is asked to (zero: the API's default); each
	// API writes them in its own form (tools.go).
	Tools      []Tool
	ToolChoice ToolChoice
}

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Event is what a Decoder reads from a response: one streamed chunk, the
// stream's end marker, or the whole of a non-streamed answer. The chunk's
// fields mean what sse.Chunk documents, whatever the API's own names for
// them: Content and Reasoning are tokens for the engine's clock, Usage the
// server's own counts so far (prompt tokens, and the output tokens that
// replace the count of token chunks when positive; a decoder whose API
// reports them in pieces, input first and output later, adds them up), and
// FinishReason and ErrorMessage raw JSON string contents (escapes kept).
type Event struct {
	sse.Chunk
	// Done: the stream's explicit end ([DONE]); the engine drains the rest.
	Done bool
	// Results is how many items a non-streamed answer carries (vectors,
	// scores), for the engine to hold against what was sent.
	Results int
}

// ToolTaker is a Protocol whose requests can carry tools (Request.Tools).
type ToolTaker interface {
	Protocol
	// TakesTools marks the API.
	TakesTools()
}

// NotServedStops is a Protocol whose stage stops with one clear error when
// the endpoint shows it does not serve the API (a 404, 405 or 501 at its path,
// an event stream of another API, or for a whole-answer API an event stream
// or another API's JSON answer) before any request succeeded. Chat and
// completions are not: a level of failed requests, with the base_url hint
// beside it, is what their users have always seen.
type NotServedStops interface {
	Protocol
	// StopsWhenNotServed marks the API.
	StopsWhenNotServed()
}

// DocumentScorer is a Protocol whose request scores Documents against a
// query (the prompt): its stage has documents_per_request and
// document_tokens.
type DocumentScorer interface {
	Protocol
	// ScoresDocuments marks the API.
	ScoresDocuments()
}

// InputBatcher is a Protocol whose request carries several inputs
// (embeddings): its stage has inputs_per_request.
type InputBatcher interface {
	Protocol
	// BatchesInputs marks the API.
	BatchesInputs()
}

// ImageTaker is a Protocol whose request content can carry images (chat,
// Responses): a stage whose prompt set has images must speak one.
type ImageTaker interface {
	Protocol
	// TakesImages marks the API.
	TakesImages()
}

// Rooted is a Protocol whose Path is at the server's root rather than
// under the API root base_url names (vLLM's /score): URL drops base_url's
// trailing /v1.
type Rooted interface {
	Protocol
	// AtRoot marks the API.
	AtRoot()
}

// URL is where p's requests go for an endpoint whose API root (base_url,
// without a trailing slash or query) is base: base + Path, or, for a
// Rooted protocol, base without its trailing /v1 + Path.
func URL(p Protocol, base string) string {
	if _, ok := p.(Rooted); ok {
		base = strings.TrimSuffix(base, "/v1")
	}
	return base + p.Path()
}

// Authenticator is a Protocol whose API carries the endpoint's API key
// in headers of its own instead of "Authorization: Bearer" (Anthropic's
// x-api-key), and asks for headers every request must have.
type Authenticator interface {
	Protocol
	// Headers are the headers for an endpoint whose API key is key ("":
	// none); Bearer false: no Authorization header is made from the key.
	Headers(key string) (h map[string]string, bearer bool)
}

// OtherAPIError is a response of another API than the one asked for: an
// endpoint that serves chat chunks at the Responses path, say. The engine
// stops the stage on it (the endpoint does not serve the stage's API there)
// instead of failing every request as malformed.
type OtherAPIError struct {
	// Want is the API asked for, Got the one the events belong to.
	Want, Got string
	// Whole: the response is one JSON answer (to an API that answers
	// whole, whole.go), not an event stream.
	Whole bool
}

func (e *OtherAPIError) Error() string {
	return "the response is " + e.Form() + " of api " + e.Got + ", not of api " + e.Want
}

// Form says what the response was: "an event stream" or "a JSON answer".
func (e *OtherAPIError) Form() string {
	if e.Whole {
		return "a JSON answer"
	}
	return "an event stream"
}

// Decoder reads one response body after another into events.
type Decoder interface {
	// Reset starts reading body.
	Reset(body io.Reader)
	// Next reads the next event into ev. It returns io.EOF at the end of
	// the body, a *MalformedError for an event it cannot read, and a read
	// error (ErrLineTooLong included) as it is.
	Next(ev *Event) error
	// Skip reads past the next event without decoding it (the engine
	// drains a stream after its end so the connection can be reused).
	Skip() error
}

// MalformedError is an event a Decoder could not read.
type MalformedError struct {
	// Data is the event's bytes, valid until the decoder's next call.
	Data []byte
}

func (m *MalformedError) Error() string { return "unparseable chunk" }

// ErrLineTooLong is a response line longer than the decoder accepts.
var ErrLineTooLong = sse.ErrLineTooLong

// Registry is every API a plan may name, in the order messages and the
// schema list them. Adding an API is one file and one entry here.
var Registry = []Protocol{chat{}, completions{}, responses{}, messages{}, embeddings{}, rerank{}, score{}}

// Lookup returns the protocol of the plan's api value.
func Lookup(name string) (Protocol, bool) {
	for _, p := range Registry {
		if p.Name() == name {
			return p, true
		}
	}
	return nil, false
}

// Names is the registry's api values, in order.
func Names() []string {
	out := make([]string, len(Registry))
	for i, p := range Registry {
		out[i] = p.Name()
	}
	return out
}

// ModelNotFound reports whether body, a server's answer to a request for
// model, says the server does not serve that model, as vLLM and
// llm-d-inference-sim say it (404, "The model `m` does not exist."), OpenAI
// (404, "code": "model_not_found") and Ollama (404, "model \"m\" not found,
// try pulling it first"). Such a 404 is the model's, not the API path's:
// the endpoint serves the API.
func ModelNotFound(body, model string) bool {
	l := strings.ToLower(body)
	if strings.Contains(l, "model_not_found") {
		return true
	}
	return model != "" && strings.Contains(body, model) && strings.Contains(l, "model") &&
		(strings.Contains(l, "does not exist") || strings.Contains(l, "not found"))
}
