package protocol

import (
	"bytes"
	"strings"
	"testing"
)

// templateTexts are prompts a template must write as Encode does.
var templateTexts = []string{"", "hello", awkward, templateMark, strings.Repeat("the quick brown fox ", 300) + awkward, "\xe2\x80", "12345678<"}

// TestTextTemplate: for every API and every request with a prompt text
// alone, a template is made, and its body for each text is Encode's, byte
// for byte; a request with messages, inputs, documents or images gets none.
func TestTextTemplate(t *testing.T) {
	for _, p := range Registry {
		for name, r := range bodyRequests(t) {
			tm, ok := NewTextTemplate(p, r)
			plain := r.Messages == nil && r.Inputs == nil && r.Documents == nil && r.Images == nil
			if ok != plain {
				t.Errorf("%s/%s: template made: %v, want %v", p.Name(), name, ok, plain)
			}
			if !ok {
				continue
			}
			for _, text := range templateTexts {
				r.Text = text
				want, err := p.Encode(r)
				if err != nil {
					t.Fatalf("%s/%s: Encode: %v", p.Name(), name, err)
				}
				if got := tm.Body(text); !bytes.Equal(got, want) {
					t.Errorf("%s/%s, text %.20q: template\n%s\nEncode\n%s", p.Name(), name, text, got, want)
				}
			}
		}
	}
}

// TestTextTemplateRefused: no template where the text is not written once
// as is: extra_body holding the mark (the text's place is then ambiguous),
// and an API that writes the text twice.
func TestTextTemplateRefused(t *testing.T) {
	r := Request{Model: "m", MaxTokens: 4, Extra: map[string]any{"note": templateMark}}
	if _, ok := NewTextTemplate(chat{}, r); ok {
		t.Error("a template was made with the mark in extra_body")
	}
	if _, ok := NewTextTemplate(twice{}, Request{Model: "m", MaxTokens: 4}); ok {
		t.Error("a template was made for an API that writes the text twice")
	}
	if _, ok := NewTextTemplate(upper{}, Request{Model: "m", MaxTokens: 4}); ok {
		t.Error("a template was made for an API that changes the text (the probe should refuse it)")
	}
}

// twice is chat writing the prompt twice.
type twice struct{ chat }

func (twice) Encode(r Request) ([]byte, error) {
	b, err := chat{}.Encode(r)
	return append(b, appendJSONString(nil, r.Text)...), err
}

// upper is chat that upper-cases "probe" in the prompt: the mark comes
// through unchanged, the probe does not.
type upper struct{ chat }

func (upper) Encode(r Request) ([]byte, error) {
	r.Text = strings.ReplaceAll(r.Text, "probe", "PROBE")
	return chat{}.Encode(r)
}
