package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/runnerbench/runner/protocol/sse"
)

// The non-streamed APIs (NameStreams false) answer with one JSON document:
// their decoder reads the whole body and turns it into one event, which
// finishes the request (so it has an E2E, and neither a first token nor
// output tokens) and carries the server's usage.

// MaxAnswer is the largest non-streamed answer a decoder reads: 8 inputs of
// 4096-dimension float embeddings are about 700 KB; a server sending more
// than this is not believed, and its answer is not held in memory.
const MaxAnswer = 64 << 20

// Streams reports whether p's answers are event streams (whose token chunks
// the engine times), rather than one JSON document.
func Streams(p Protocol) bool { return p.MediaType() == "text/event-stream" }

// NameStreams is Streams for the API named api (a plan's or a report's);
// an API nobody registered counts as streamed, as chat, the default, is.
func NameStreams(api string) bool {
	p, ok := Lookup(api)
	return !ok || Streams(p)
}

// wholeDecoder reads one JSON answer per body through parse, which fills the
// event from the body's bytes (or returns a *MalformedError).
type wholeDecoder struct {
	body  io.Reader
	buf   bytes.Buffer
	done  bool
	limit int64 // MaxAnswer (smaller in tests)
	parse func(data []byte, ev *Event) error
}

func newWholeDecoder(parse func([]byte, *Event) error) *wholeDecoder {
	return &wholeDecoder{parse: parse, limit: MaxAnswer}
}

func (d *wholeDecoder) Reset(body io.Reader) { d.body, d.done = body, false; d.buf.Reset() }

// errTooLarge is an answer past MaxAnswer (an ErrLineTooLong: the engine
// classifies it as malformed).
var errTooLarge = fmt.Errorf("%w: answer larger than %d bytes", ErrLineTooLong, MaxAnswer)

func (d *wholeDecoder) Next(ev *Event) error {
	if d.done {
		return io.EOF
	}
	d.done = true
	if _, err := d.buf.ReadFrom(io.LimitReader(d.body, d.limit+1)); err != nil {
		return err
	}
	if int64(d.buf.Len()) > d.limit {
		return errTooLarge
	}
	ev.Chunk, ev.Done, ev.Results = sse.Chunk{}, false, 0
	data := d.buf.Bytes()
	if err := d.parse(data, ev); err != nil {
		return err
	}
	return nil
}

// Skip reads past the answer (the engine skips only after an end marker,
// which a JSON answer never sends).
func (d *wholeDecoder) Skip() error {
	if d.done {
		return io.EOF
	}
	d.done = true
	_, err := io.Copy(io.Discard, io.LimitReader(d.body, d.limit))
	if err == nil {
		err = io.EOF
	}
	return err
}

// wholeUsage is the usage object of a non-streamed answer: prompt_tokens,
// or total_tokens where an engine reports only that (vLLM's rerank).
type wholeUsage struct {
	PromptTokens *json.Number `json:"prompt_tokens"`
	TotalTokens  *json.Number `json:"total_tokens"`
}

// wholeError is an error answer sent with status 200: {"error": ...} or
// {"object": "error", "message": ...}.
type wholeError struct {
	Object  string          `json:"object"`
	Message json.RawMessage `json:"message"`
	Error   json.RawMessage `json:"error"`
}

// note fills ev from a decoded answer: an error, or the finish and usage.
// The error message is kept raw (escaped), as the engine expects.
func (u *wholeUsage) note(e *wholeError, ev *Event) {
	if len(e.Error) > 0 && !bytes.Equal(e.Error, []byte("null")) || e.Object == "error" {
		ev.Error = true
		ev.ErrorMessage = errorMessage(e)
		return
	}
	ev.Finish = true
	n := u.PromptTokens
	if n == nil {
		n = u.TotalTokens
	}
	if n == nil {
		return
	}
	ev.Usage = true
	v, err := n.Int64()
	if err != nil || v > 1<<50 || v < -(1<<50) {
		ev.UsageInvalid = true
		return
	}
	ev.PromptTokens = int(v)
}

// errorMessage is the raw string contents of an error answer's message.
func errorMessage(e *wholeError) []byte {
	raw := e.Message
	if len(e.Error) > 0 && e.Error[0] == '{' {
		var inner struct {
			Message json.RawMessage `json:"message"`
		}
		if json.Unmarshal(e.Error, &inner) == nil {
			raw = inner.Message
		}
	} else if len(e.Error) > 0 && e.Error[0] == '"' {
		raw = e.Error
	}
	if len(raw) >= 2 && raw[0] == '"' {
		return raw[1 : len(raw)-1]
	}
	return nil
}

// errNoResults is an answer without the list its API promises.
var errNoResults = errors.New("answer carries no results")

// noResults is the error of an answer to api without the list its API
// promises: an *OtherAPIError when it is another API's answer (the endpoint
// does not serve api at this path: a proxy or router sent it elsewhere),
// else malformed.
func noResults(data []byte, api string) error { return badItem(data, api, errNoResults) }

// badItem is the error of an answer to api whose list lacks what api's
// items carry (why): another API's answer, else malformed.
func badItem(data []byte, api string, why error) error {
	if got := otherAnswer(data, api); got != "" {
		return &OtherAPIError{Want: api, Got: got, Whole: true}
	}
	return malformed(data, why)
}

// otherAnswer names the API whose JSON answer data is, when it is not api's
// (whose list the caller found missing or empty): one with choices (an
// OpenAI-compatible answer), an object or type naming another API (a
// typed-event API's), or another whole-answer API's list. "" when it is
// none of these.
func otherAnswer(data []byte, api string) string {
	var a struct {
		Object  string          `json:"object"`
		Type    string          `json:"type"`
		Choices json.RawMessage `json:"choices"`
		Results json.RawMessage `json:"results"`
		Data    []struct {
			Object    string          `json:"object"`
			Embedding json.RawMessage `json:"embedding"`
			Score     json.RawMessage `json:"score"`
		} `json:"data"`
	}
	if json.Unmarshal(data, &a) != nil {
		return ""
	}
	var got string
	switch {
	case len(a.Choices) > 0 && a.Choices[0] == '[':
		got = "chat"
		if a.Object == "text_completion" {
			got = "completions"
		}
	case a.Object == "response":
		got = "responses"
	case a.Type == "message":
		got = "messages"
	case len(a.Results) > 0 && a.Results[0] == '[':
		got = "rerank"
	case len(a.Data) > 0 && (a.Data[0].Embedding != nil || a.Data[0].Object == "embedding"):
		got = "embeddings"
	case len(a.Data) > 0 && a.Data[0].Score != nil:
		got = "score"
	}
	if got == api {
		return ""
	}
	return got
}

// malformed is a *MalformedError for data, prefixed with why when the
// bytes alone would not say.
func malformed(data []byte, why error) error {
	if why == nil {
		return &MalformedError{Data: data}
	}
	return &MalformedError{Data: append([]byte(why.Error()+": "), data[:min(len(data), 256)]...)}
}
