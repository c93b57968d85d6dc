package protocol

import (
	"io"

	"github.com/runnerbench/runner/protocol/sse"
)

// sseDecoder reads an OpenAI-style event stream: each event's data is a
// JSON chunk scanned by sse.Parse, or [DONE]. It allocates nothing per
// chunk: the reader's buffer and the event are reused.
type sseDecoder struct{ rd *sse.Reader }

func newSSEDecoder() *sseDecoder { return &sseDecoder{rd: sse.NewReader(nil)} }

func (d *sseDecoder) Reset(body io.Reader) { d.rd.Reset(body) }

func (d *sseDecoder) Next(ev *Event) error {
	data, err := d.rd.Next()
	if err != nil {
		return err
	}
	if string(data) == "[DONE]" {
		ev.Chunk, ev.Done = sse.Chunk{}, true
		return nil
	}
	ev.Done = false
	if sse.Parse(data, &ev.Chunk) != nil {
		return &MalformedError{Data: data}
	}
	return nil
}

func (d *sseDecoder) Skip() error {
	_, err := d.rd.Next()
	return err
}
