package protocol

import "bytes"

// TextTemplate is a request body's encoding around its prompt text, made
// once for requests that differ in nothing else (a synthetic prompt set's:
// same model, output bound, temperature, extra_body and tools), so each of
// them costs one copy and the text's escaping rather than a whole body
// built and encoded: at 16,384 streams the bodies were 0.09 s of a level's
// CPU. Body writes exactly what Encode would.
type TextTemplate struct{ prefix, suffix []byte }

// templateMark is the text a template is made with: NUL bytes, which no
// plan's prompt holds and which JSON escapes, so its escaped form is found
// where the text went and nowhere else.
const templateMark = "\x00runner:prompt\x00"

// templateProbe is the text a new template is checked with: every kind of
// escape appendJSONString writes, beside plain words.
const templateProbe = "probe \"quoted\" \\ <a&b> \n\t\r\b\f \x01 é \u2028\u2029 \xff end"

// NewTextTemplate is the template of API p's bodies for r with any prompt
// text (r.Text is not used); false when there is none: r carries messages,
// inputs, documents or images, or the API's body does not hold the text
// once, as one JSON string, written as is (then each body is encoded
// whole). A template is checked against Encode on a probe text before it
// is used.
func NewTextTemplate(p Protocol, r Request) (*TextTemplate, bool) {
	if r.Messages != nil || r.Inputs != nil || r.Documents != nil || r.Images != nil {
		return nil, false
	}
	r.Text = templateMark
	b, err := p.Encode(r)
	if err != nil {
		return nil, false
	}
	mark := appendJSONString(nil, templateMark)
	i := bytes.Index(b, mark)
	if i < 0 || bytes.Contains(b[i+len(mark):], mark) {
		return nil, false
	}
	t := &TextTemplate{prefix: b[:i:i], suffix: b[i+len(mark):]}
	r.Text = templateProbe
	want, err := p.Encode(r)
	if err != nil || !bytes.Equal(t.Body(templateProbe), want) {
		return nil, false
	}
	return t, true
}

// Body is the request body with text as its prompt.
func (t *TextTemplate) Body(text string) []byte {
	b := make([]byte, 0, len(t.prefix)+len(text)+len(t.suffix)+8)
	b = append(b, t.prefix...)
	b = appendJSONString(b, text)
	return append(b, t.suffix...)
}
