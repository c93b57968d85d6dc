package protocol

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// awkward is text with everything encoding/json escapes or replaces:
// quotes, backslashes, HTML's <, > and &, control bytes with and without a
// short escape, non-ASCII, U+2028/U+2029 and invalid UTF-8; long enough
// that the 8-byte skip runs over plain stretches and stops in them.
const awkward = "Say \"hi\" & <b>bye</b>\\n\b\f\n\r\t\x00\x01\x1f\x7f é 日本語 😀 \u2028\u2029 bad:\xff\xfe\xc3( end" +
	" plain ascii text long enough for several words... then <tail>"

// extraYAML is an extra_body as a plan writes it; yaml.v3 decodes it into
// map[string]any as the plan loader does (scenario/decode.go), so the test
// sees the value types a real plan puts in a body: nested maps and lists,
// ints, big ints, floats, bools, nulls and strings.
const extraYAML = `
top_p: 0.95
top_k: 40
seed: 18446744073709551615
min_p: 1.0e-7
presence_penalty: -0.5
huge: 1.5e300
frac: 0.1
repetition_penalty: 1.0
logit_bias: {"50256": -100, "11": 2.5}
stop: ["</s>", "\n\nUser:", "<|im_end|>"]
chat_template_kwargs: {enable_thinking: false, note: "a \"quoted\" <tag> & more"}
guided_json:
  type: object
  properties:
    answer: {type: string, description: "ünïcödé\ttab"}
    n: {type: integer, minimum: 0}
  required: [answer]
nothing: null
stream_options: {continuous_usage_stats: true}
empty_map: {}
empty_list: []
`

// bodyRequests are realistic requests: a bare prompt, multi-turn messages
// with awkward text, extra_body from YAML, tools with a choice.
func bodyRequests(t testing.TB) map[string]Request {
	var extra map[string]any
	if err := yaml.Unmarshal([]byte(extraYAML), &extra); err != nil {
		t.Fatal(err)
	}
	strict := true
	tools := []Tool{
		{Name: "get_weather", Description: "The weather in a <city> & its \"state\"",
			Parameters: map[string]any{"type": "object", "properties": map[string]any{
				"city": map[string]any{"type": "string"}, "days": map[string]any{"type": "integer", "maximum": 14}}},
			Strict: &strict},
		{Name: "noop"},
	}
	conv := []Message{
		{Role: "system", Content: "You are terse. " + awkward},
		{Role: "user", Content: "First question? " + awkward},
		{Role: "assistant", Content: "An answer with \"quotes\"\nand lines."},
		{Role: "user", Content: strings.Repeat("the quick brown fox ", 400) + awkward},
	}
	return map[string]Request{
		"bare": {Model: "m", MaxTokens: 16, Temperature: 0, Text: "hello"},
		"conversation": {Model: "Qwen/Qwen3-0.6B", MaxTokens: 256, Temperature: 0.7, Pinned: true,
			Extra: extra, Messages: conv, Inputs: []string{"a", awkward}, Documents: []string{awkward, "doc <2>"}},
		"tools": {Model: "m", MaxTokens: 64, Temperature: 1e-7, Text: awkward, Extra: extra,
			Tools: tools, ToolChoice: ToolChoice{Mode: ToolFunction, Name: "get_weather"}},
		"tools-required": {Model: "m", MaxTokens: 64, Text: "x", Tools: tools, ToolChoice: ToolChoice{Mode: ToolRequired}},
		"no-documents":   {Model: "m", MaxTokens: 1, Text: "q", Extra: map[string]any{"temperature": 1.5e21, "ignore_eos": false}},
		// Go values a caller may set: every type the fast path takes, nil
		// slices and maps (null) among them.
		"go-values": {Model: "m", MaxTokens: 1, Text: "q", Extra: map[string]any{
			"maps": []map[string]any{{"b": int64(-3), "a": []string{"x", awkward}}, nil}, "nil_strings": []string(nil),
			"nil_list": []any(nil), "nil_map": map[string]any(nil), "nil_maps": []map[string]any(nil),
			"msg": Message{Role: "user", Content: awkward}, "msgs": []Message(nil), "big": uint64(1 << 63)}},
	}
}

// bodyBuilder is every protocol: its body map is what Encode writes.
type bodyBuilder interface {
	Protocol
	body(r *Request) map[string]any
}

// TestBodyMatchesMarshal: each protocol's body, for each request, is
// written byte for byte as json.Marshal writes the same map, and by the
// fast path rather than its fallback.
func TestBodyMatchesMarshal(t *testing.T) {
	for _, p := range Registry {
		bb, ok := p.(bodyBuilder)
		if !ok {
			t.Fatalf("%s builds no body map", p.Name())
		}
		for name, r := range bodyRequests(t) {
			m := bb.body(&r)
			want, err := json.Marshal(m)
			if err != nil {
				t.Fatalf("%s/%s: json.Marshal: %v", p.Name(), name, err)
			}
			fast, ok := appendJSON(nil, m, 0)
			if !ok {
				t.Errorf("%s/%s: the fast path refused the body", p.Name(), name)
			} else if !bytes.Equal(fast, want) {
				t.Errorf("%s/%s: fast path\n%s\njson.Marshal\n%s", p.Name(), name, fast, want)
			}
			got, err := p.Encode(r)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s/%s: Encode = %s, %v\nwant %s", p.Name(), name, got, err, want)
			}
		}
	}
}

// TestBodyFallback: a value the fast path does not know (image parts, a
// YAML map with non-string keys, a type YAML never yields) or cannot write
// (NaN) goes to json.Marshal: the same bytes, or json.Marshal's error.
func TestBodyFallback(t *testing.T) {
	images := Request{Model: "m", MaxTokens: 4, Text: "look", Images: []string{"data:image/png;base64,AAAA"}}
	for _, p := range []bodyBuilder{chat{}, responses{}} {
		m := p.body(&images)
		if _, ok := appendJSON(nil, m, 0); ok {
			t.Errorf("%s: the fast path took image parts it does not know", p.Name())
		}
		want, _ := json.Marshal(m)
		if got, err := p.Encode(images); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: Encode = %s, %v\nwant %s", p.Name(), got, err, want)
		}
	}
	var anyKeys map[string]any
	if err := yaml.Unmarshal([]byte("bias: {1: 2}"), &anyKeys); err != nil {
		t.Fatal(err)
	}
	deep := map[string]any{}
	for m, i := deep, 0; i < maxBodyDepth+5; i++ {
		next := map[string]any{}
		m["x"] = next
		m = next
	}
	for name, c := range map[string]struct {
		extra   map[string]any
		wantErr bool
	}{
		"nan":            {map[string]any{"top_p": math.NaN()}, true},
		"inf in list":    {map[string]any{"x": []any{1, math.Inf(-1)}}, true},
		"non-string key": {anyKeys, true},
		"int32":          {map[string]any{"n": int32(7), "f": float32(0.1)}, false},
		"too deep":       {deep, false},
	} {
		r := Request{Model: "m", MaxTokens: 1, Text: "t", Extra: c.extra}
		want, wantErr := json.Marshal(chat{}.body(&r))
		got, err := chat{}.Encode(r)
		if (err != nil) != c.wantErr || (wantErr != nil) != c.wantErr || !bytes.Equal(got, want) {
			t.Errorf("%s: Encode = %s, %v; json.Marshal = %s, %v", name, got, err, want, wantErr)
		}
		if c.wantErr && (err == nil || !strings.Contains(err.Error(), "extra_body")) {
			t.Errorf("%s: error %v does not point at extra_body", name, err)
		}
	}
}

// FuzzBodyString: a string, and a float64 from the same bits, are written
// as json.Marshal writes them.
func FuzzBodyString(f *testing.F) {
	for _, s := range []string{"", "plain", awkward, "\u2028", "\xe2\x80", "<>&\"\\", "12345678<", "1234567\x80abc"} {
		f.Add(s, 0.0)
	}
	for _, x := range []float64{1, math.Copysign(0, -1), 1e-7, 1e20, 1e21, 123456789.125, 5e-324, math.MaxFloat64, 1e-6, 0.000001234} {
		f.Add("", x)
	}
	tmpl, ok := NewTextTemplate(chat{}, Request{Model: "m", MaxTokens: 8})
	if !ok {
		f.Fatal("no template for a plain chat request")
	}
	f.Fuzz(func(t *testing.T, s string, x float64) {
		want, _ := json.Marshal(s)
		if got := appendJSONString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("string %q: got %s, want %s", s, got, want)
		}
		r := Request{Model: "m", MaxTokens: 8, Text: s}
		if body, err := (chat{}).Encode(r); err != nil || !bytes.Equal(tmpl.Body(s), body) {
			t.Fatalf("text %q: template %s, Encode %s (%v)", s, tmpl.Body(s), body, err)
		}
		want, err := json.Marshal(x)
		got, ok := appendJSONFloat(nil, x)
		if ok != (err == nil) || ok && !bytes.Equal(got, want) {
			t.Fatalf("float %v: got %s, %v; json.Marshal %s, %v", x, got, ok, want, err)
		}
	})
}
