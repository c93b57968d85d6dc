package wire

import (
	"mime"
	"testing"
)

// TestIsMediaType: isMediaType agrees with mime.ParseMediaType's media type
// on the values servers send and on awkward ones.
func TestIsMediaType(t *testing.T) {
	for _, ct := range []string{
		"text/event-stream", "text/event-stream; charset=utf-8", "Text/Event-Stream", " text/event-stream ;charset=utf-8",
		"\ttext/event-stream\t", "text/event-stream;", "text/event-stream; bad", "text/event-ſtream", "text/event-stream\u212a",
		"text/event stream", "text/plain", "", ";", "application/json", "application/json; charset=utf-8", "APPLICATION/JSON",
		"application/jsonl", "text/event-streamx", "text/event-stream\x00", "text/event-stream\f", "\u00a0text/event-stream", "\vapplication/json\u0085",
	} {
		for _, want := range []string{"text/event-stream", "application/json"} {
			mt, _, _ := mime.ParseMediaType(ct)
			if got := isMediaType(ct, want); got != (mt == want) {
				t.Errorf("isMediaType(%q, %q) = %v; mime.ParseMediaType's media type %q", ct, want, got, mt)
			}
		}
	}
}
