package sse

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"
)

// readAll returns every event's data from an SSE stream.
func readAll(t testing.TB, r io.Reader) ([]string, error) {
	t.Helper()
	rd := NewReader(r)
	var out []string
	for {
		d, err := rd.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, string(d))
	}
}

func TestReaderFraming(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		{"lf", "data: {\"a\":1}\n\ndata: [DONE]\n\n", []string{`{"a":1}`, "[DONE]"}},
		{"crlf", "data: {\"a\":1}\r\n\r\ndata: [DONE]\r\n\r\n", []string{`{"a":1}`, "[DONE]"}},
		{"no space", "data:{\"a\":1}\n\n", []string{`{"a":1}`}},
		{"two spaces keeps one", "data:  x\n\n", []string{" x"}},
		{"comments and fields", ": keep-alive\nevent: message\nid: 7\nretry: 10\ndata: x\n\n", []string{"x"}},
		{"multi-line data", "data: a\ndata: b\n\n", []string{"a\nb"}},
		{"no final blank line", "data: x\n", []string{"x"}},
		{"no final newline", "data: x", []string{"x"}},
		{"blank lines only", "\n\n\r\n", nil},
		{"empty data", "data:\n\n", []string{""}},
		{"field without colon", "data\n\n", []string{""}},
		{"comment only event", ": ping\n\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, split := range []struct {
				name string
				r    io.Reader
			}{
				{"whole", strings.NewReader(tt.in)},
				{"one byte", iotest.OneByteReader(strings.NewReader(tt.in))},
				{"half", iotest.HalfReader(strings.NewReader(tt.in))},
			} {
				got, err := readAll(t, split.r)
				if err != nil {
					t.Fatalf("%s: %v", split.name, err)
				}
				if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
					t.Errorf("%s: got %q, want %q", split.name, got, tt.want)
				}
			}
		})
	}
}

func TestReaderLongLine(t *testing.T) {
	long := strings.Repeat("x", 9<<20)
	in := "data: {\"a\":\"" + long + "\"}\n\ndata: [DONE]\n\n"
	got, err := readAll(t, iotest.HalfReader(strings.NewReader(in)))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || len(got[0]) != len(long)+8 || got[1] != "[DONE]" {
		t.Fatalf("got %d events", len(got))
	}
	rd := NewReader(strings.NewReader(in))
	rd.SetMaxLine(1 << 20)
	if _, err := rd.Next(); !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("limit: got %v, want ErrLineTooLong", err)
	}
}

func TestReaderReadError(t *testing.T) {
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader("data: a\n\ndata: b"), iotest.ErrReader(boom))
	rd := NewReader(r)
	if d, err := rd.Next(); err != nil || string(d) != "a" {
		t.Fatalf("first: %q %v", d, err)
	}
	// The partial event "b" is not delivered as complete when the read fails.
	if _, err := rd.Next(); !errors.Is(err, boom) {
		t.Fatalf("got %v, want boom", err)
	}
}

// vLLM's typical chat chunk.
const vllmChunk = `{"id":"chatcmpl-b6f3a5e2c1d04f0e9a8b7c6d5e4f3a2b","object":"chat.completion.chunk","created":1732870000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"delta":{"content":" the"},"logprobs":null,"finish_reason":null}]}`

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Chunk
		err  bool
	}{
		{"vllm content", vllmChunk, Chunk{Content: true}, false},
		{"role only", `{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`, Chunk{}, false},
		{"role every chunk", `{"choices":[{"delta":{"role":"assistant","content":"hi"}}]}`, Chunk{Content: true}, false},
		{"null content", `{"choices":[{"delta":{"content":null}}]}`, Chunk{}, false},
		{"reasoning", `{"choices":[{"delta":{"reasoning":"hm"}}]}`, Chunk{Reasoning: true}, false},
		{"reasoning_content", `{"choices":[{"delta":{"content":null,"reasoning_content":"x"}}]}`, Chunk{Reasoning: true}, false},
		{"completions text", `{"choices":[{"text":"abc","index":0,"finish_reason":null}]}`, Chunk{Content: true}, false},
		{"escaped quote", `{"choices":[{"delta":{"content":"\""}}]}`, Chunk{Content: true}, false},
		{"escaped nul", `{"choices":[{"delta":{"content":"\u0000"}}]}`, Chunk{Content: true}, false},
		{"backslash then quote", `{"choices":[{"delta":{"content":"a\\"}}],"x":"\\\""}`, Chunk{Content: true}, false},
		{"keys in strings", `{"id":"\"content\":\"x\"","choices":[{"delta":{"role":"assistant","content":"","x":"\"finish_reason\":\"stop\""}}]}`, Chunk{}, false},
		{"logprobs content", `{"choices":[{"delta":{"content":""},"logprobs":{"content":[{"token":"a","logprob":-0.1}]},"finish_reason":null}]}`, Chunk{}, false},
		// Tool-call arguments are answer tokens; the element that names the call opens one.
		{"tool call arguments", `{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"{\"content\":\"x\"}"}}],"content":null}}]}`, Chunk{Content: true}, false},
		{"tool call opened", `{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]}}]}`, Chunk{ToolCall: true}, false},
		// llm-d-inference-sim repeats the id on every argument delta: only
		// the name opens a call.
		{"tool call id repeated", `{"choices":[{"delta":{"tool_calls":[{"function":{"name":null,"arguments":"\""},"id":"chatcmpl-tool-1","type":"function","index":0}]}}]}`, Chunk{Content: true}, false},
		// Within a delta and within a choice a repeated key's last value wins
		// (as encoding/json has it); across choices any counts.
		{"tool calls repeated", `{"choices":[{"delta":{"tool_calls":[{"id":"c","function":{"arguments":"x"}}],"tool_calls":[{"function":{"arguments":""}}]}}]}`, Chunk{}, false},
		{"tool calls then null", `{"choices":[{"delta":{"content":"a","tool_calls":[{"id":"c"}],"tool_calls":null}}]}`, Chunk{Content: true}, false},
		{"delta repeated", `{"choices":[{"delta":{"tool_calls":[{"id":"c","function":{"arguments":"x"}}]},"delta":{"reasoning":"r"}}]}`, Chunk{Reasoning: true}, false},
		{"reasoning repeated", `{"choices":[{"delta":{"reasoning":"r","reasoning_content":"","reasoning":""}}]}`, Chunk{}, false},
		{"tool call in one choice", `{"choices":[{"delta":{"tool_calls":[{"function":{"name":"f"}}]}},{"delta":{"content":"x"}}]}`, Chunk{Content: true, ToolCall: true}, false},
		{"empty objects", `{"choices":[{},{"delta":{}}]}`, Chunk{}, false},
		{"whitespace and order", " {\n \"choices\" : [ { \"finish_reason\" : \"length\" , \"delta\" : { \"content\" : \"x\" } } ] } ", Chunk{Content: true, Finish: true, FinishReason: []byte("length")}, false},
		{"finish with usage", `{"choices":[{"delta":{"content":"."},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"total_tokens":20,"completion_tokens":8}}`,
			Chunk{Content: true, Finish: true, FinishReason: []byte("stop"), Usage: true, PromptTokens: 12, CompletionTokens: 8}, false},
		{"usage own chunk", `{"choices":[],"usage":{"prompt_tokens":1024,"completion_tokens":256,"prompt_tokens_details":{"cached_tokens":0}}}`,
			Chunk{Usage: true, PromptTokens: 1024, CompletionTokens: 256}, false},
		{"usage null", `{"choices":[{"delta":{"content":"a"}}],"usage":null}`, Chunk{Content: true}, false},
		// A server that lies: a negative count is an integer (the runner
		// judges it); 2^62 is beyond what a count is read as, a fraction or a
		// string no count at all.
		{"usage negative and huge", `{"choices":[],"usage":{"prompt_tokens":-5,"completion_tokens":4611686018427387904}}`,
			Chunk{Usage: true, UsageInvalid: true, PromptTokens: -5}, false},
		{"usage fraction", `{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2.5}}`,
			Chunk{Usage: true, UsageInvalid: true, PromptTokens: 3}, false},
		{"usage string", `{"choices":[],"usage":{"prompt_tokens":"3","completion_tokens":2}}`,
			Chunk{Usage: true, UsageInvalid: true, CompletionTokens: 2}, false},
		{"usage null counts", `{"choices":[],"usage":{"prompt_tokens":null,"completion_tokens":2}}`,
			Chunk{Usage: true, CompletionTokens: 2}, false},
		{"several choices", `{"choices":[{"delta":{"content":""}},{"delta":{"reasoning":"r"}}]}`, Chunk{Reasoning: true}, false},
		{"error object", `{"error":{"message":"boom \"x\"","type":"InternalServerError","code":500}}`, Chunk{Error: true, ErrorMessage: []byte(`boom \"x\"`)}, false},
		{"object error", `{"object":"error","message":"bad","type":"BadRequestError","code":400}`, Chunk{Error: true, ErrorMessage: []byte("bad")}, false},
		{"error null", `{"error":null,"choices":[]}`, Chunk{}, false},
		{"escaped key", `{"choices":[{"delta":{"cont\u0065nt":"a"}}]}`, Chunk{Content: true}, false},
		{"llama.cpp chat usage and timings", llamaUsageChunk,
			Chunk{Usage: true, PromptTokens: 6, CompletionTokens: 40, HasTimings: true, Timings: Timings{
				PromptN: 6, PromptMs: 5.417, PredictedN: 40, PredictedMs: 180.501, DraftN: 29, DraftNAccepted: 29}}, false},
		{"llama.cpp completions finish", `{"choices":[{"text":"","index":0,"logprobs":null,"finish_reason":"length"}],"created":1796077267,"model":"tiny","object":"text_completion","usage":{"completion_tokens":3,"prompt_tokens":3,"total_tokens":6},"id":"chatcmpl-m","timings":{"cache_n":1,"prompt_n":2,"prompt_ms":2.959,"prompt_per_token_ms":1.4795,"predicted_n":3,"predicted_ms":1.129}}`,
			Chunk{Finish: true, FinishReason: []byte("length"), Usage: true, PromptTokens: 3, CompletionTokens: 3, HasTimings: true, Timings: Timings{
				PromptN: 2, PromptMs: 2.959, PredictedN: 3, PredictedMs: 1.129, CacheN: 1}}, false},
		{"timings exponent and odd values", `{"timings":{"prompt_ms":1.5e3,"predicted_ms":-0,"prompt_n":"x","cache_n":null,"draft_n":{"a":[1]},"predicted_n":7}}`,
			Chunk{HasTimings: true, Timings: Timings{PromptMs: 1500, PredictedN: 7}}, false},
		{"timings null", `{"choices":[],"timings":null}`, Chunk{}, false},
		{"timings bad number", `{"timings":{"prompt_ms":1.}}`, Chunk{}, true},
		{"not json", `[DONE`, Chunk{}, true},
		{"array", `[1,2]`, Chunk{}, true},
		{"truncated", `{"choices":[{"delta":{"content":"a`, Chunk{}, true},
		{"trailing", `{"a":1} x`, Chunk{}, true},
		{"empty", ``, Chunk{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Chunk
			err := Parse([]byte(tt.in), &c)
			if (err != nil) != tt.err {
				t.Fatalf("err = %v, want error %v", err, tt.err)
			}
			if err != nil {
				return
			}
			if !chunkEqual(c, tt.want) {
				t.Errorf("got %+v, want %+v", c, tt.want)
			}
			checkAgainstOracle(t, []byte(tt.in))
		})
	}
}

func chunkEqual(a, b Chunk) bool {
	return a.Content == b.Content && a.Reasoning == b.Reasoning && a.Finish == b.Finish && a.ToolCall == b.ToolCall &&
		bytes.Equal(a.FinishReason, b.FinishReason) && a.Usage == b.Usage && a.UsageInvalid == b.UsageInvalid &&
		a.PromptTokens == b.PromptTokens && a.CompletionTokens == b.CompletionTokens &&
		a.Error == b.Error && bytes.Equal(a.ErrorMessage, b.ErrorMessage) &&
		a.HasTimings == b.HasTimings && a.Timings == b.Timings
}

// llamaUsageChunk is llama-server's last chat chunk (with a draft model):
// usage and timings after the finish chunk, with no choices.
const llamaUsageChunk = `{"choices":[],"created":1796077347,"id":"chatcmpl-wlaLbKTvfeVWw9dsB0mEBXM7jjLe9GjZ","model":"tiny","system_fingerprint":"b0-unknown","object":"chat.completion.chunk","usage":{"completion_tokens":40,"prompt_tokens":6,"total_tokens":46,"prompt_tokens_details":{"cached_tokens":0}},"timings":{"cache_n":0,"prompt_n":6,"prompt_ms":5.417,"prompt_per_token_ms":0.9028333333333333,"prompt_per_second":1107.6241462063874,"predicted_n":40,"predicted_ms":180.501,"predicted_per_token_ms":4.512525,"predicted_per_second":221.60542046858467,"draft_n":29,"draft_n_accepted":29}}`

// oracle computes the Chunk facts with encoding/json. Raw strings are
// compared decoded, so it fills FinishReason and ErrorMessage with Parse's
// raw bytes only when they decode to the same text.
func oracle(t testing.TB, data []byte) Chunk {
	var top map[string]any
	var c Chunk
	// Numbers as json.Number: a number beyond float64's range (1e700) is
	// valid JSON, which a float64 would make an error of the whole event.
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&top); err != nil {
		return Chunk{Error: true} // not an object: Parse must fail (checked by caller)
	}
	nonEmpty := func(v any) bool { s, ok := v.(string); return ok && s != "" }
	if ch, ok := top["choices"].([]any); ok {
		for _, e := range ch {
			m, ok := e.(map[string]any)
			if !ok {
				continue
			}
			if d, ok := m["delta"].(map[string]any); ok {
				c.Content = c.Content || nonEmpty(d["content"])
				c.Reasoning = c.Reasoning || nonEmpty(d["reasoning"]) || nonEmpty(d["reasoning_content"])
				if calls, ok := d["tool_calls"].([]any); ok {
					for _, tc := range calls {
						call, _ := tc.(map[string]any)
						fn, _ := call["function"].(map[string]any)
						c.Content = c.Content || nonEmpty(fn["arguments"])
						c.ToolCall = c.ToolCall || nonEmpty(fn["name"])
					}
				}
			}
			c.Content = c.Content || nonEmpty(m["text"])
			if fr, present := m["finish_reason"]; present && fr != nil {
				if s, isStr := fr.(string); !isStr || s != "" {
					c.Finish = true
				}
			}
		}
	}
	// A number's value as a float64, as encoding/json would decode it
	// (false: not a number, or beyond float64's range, which Parse reads as 0).
	num := func(v any) (float64, bool) {
		n, ok := v.(json.Number)
		if !ok {
			return 0, false
		}
		f, err := n.Float64()
		if err != nil {
			return 0, false
		}
		return f, true
	}
	intOf := func(v any) int {
		f, ok := num(v)
		if !ok || f != float64(int64(f)) || f > 1e17 || f < -1e17 {
			return 0
		}
		return int(f)
	}
	if id, ok := top["id"].(string); ok {
		c.ID = []byte(id)
	}
	if u, ok := top["usage"].(map[string]any); ok {
		c.Usage = true
		c.PromptTokens = intOf(u["prompt_tokens"])
		c.CompletionTokens = intOf(u["completion_tokens"])
	}
	if tm, ok := top["timings"].(map[string]any); ok {
		floatOf := func(v any) float64 { f, _ := num(v); return f }
		c.HasTimings = true
		c.Timings = Timings{
			PromptN: intOf(tm["prompt_n"]), PromptMs: floatOf(tm["prompt_ms"]),
			PredictedN: intOf(tm["predicted_n"]), PredictedMs: floatOf(tm["predicted_ms"]),
			CacheN: intOf(tm["cache_n"]), DraftN: intOf(tm["draft_n"]), DraftNAccepted: intOf(tm["draft_n_accepted"]),
		}
	}
	if e, present := top["error"]; present && e != nil && e != false {
		c.Error = true
	}
	if top["object"] == "error" {
		c.Error = true
	}
	return c
}

// checkAgainstOracle cross-checks Parse with encoding/json on valid JSON.
func checkAgainstOracle(t *testing.T, data []byte) {
	var c Chunk
	err := Parse(data, &c)
	if !json.Valid(data) || !utf8.Valid(data) {
		return // Parse may be lenient or strict; it only must not panic
	}
	var top any
	_ = json.Unmarshal(data, &top)
	if _, isObj := top.(map[string]any); !isObj {
		if err == nil {
			t.Fatalf("Parse accepted non-object %q", data)
		}
		return
	}
	if err != nil {
		t.Fatalf("Parse(%q) = %v on valid JSON", data, err)
	}
	o := oracle(t, data)
	if c.Content != o.Content || c.Reasoning != o.Reasoning || c.Finish != o.Finish || c.ToolCall != o.ToolCall ||
		c.Usage != o.Usage || c.Error != o.Error ||
		(o.Usage && (c.PromptTokens != o.PromptTokens || c.CompletionTokens != o.CompletionTokens)) ||
		c.HasTimings != o.HasTimings || c.Timings != o.Timings {
		t.Fatalf("Parse(%q) = %+v, encoding/json says %+v", data, c, o)
	}
	if id, _ := Unescape(c.ID); id != string(o.ID) || (c.ID == nil) != (o.ID == nil) {
		t.Fatalf("Parse(%q) id %q, encoding/json says %q", data, c.ID, o.ID)
	}
	if c.Finish && c.FinishReason != nil {
		if _, ok := Unescape(c.FinishReason); !ok {
			t.Fatalf("finish reason %q does not unescape", c.FinishReason)
		}
	}
}

func FuzzReader(f *testing.F) {
	f.Add([]byte("data: " + vllmChunk + "\n\ndata: [DONE]\n\n"))
	f.Add([]byte("data:{\"choices\":[{\"delta\":{\"reasoning\":\"x\"},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1}}\r\n\r\n"))
	f.Add([]byte(": ping\nevent: x\ndata: {\"error\":{\"message\":\"e\"}}\n\n"))
	f.Add([]byte("data: {\"object\":\"error\",\"message\":\"bad\"}\ndata: {}\n\n"))
	f.Add([]byte("data: " + llamaUsageChunk + "\n\ndata: [DONE]\n\n"))
	f.Add([]byte(`data: {"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":""}}]},"delta":{"content":"x"}}]}` + "\n\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		whole, err1 := readAll(t, bytes.NewReader(in))
		split, err2 := readAll(t, iotest.OneByteReader(bytes.NewReader(in)))
		if err1 != nil || err2 != nil {
			t.Fatalf("errors: %v, %v", err1, err2)
		}
		if len(whole) != len(split) {
			t.Fatalf("whole read gave %d events, one-byte reads %d", len(whole), len(split))
		}
		for i := range whole {
			if whole[i] != split[i] {
				t.Fatalf("event %d differs: %q vs %q", i, whole[i], split[i])
			}
			checkAgainstOracle(t, []byte(whole[i]))
		}
		// The raw input as one chunk too, so the JSON scanner sees arbitrary bytes.
		checkAgainstOracle(t, in)
	})
}

func TestParseNoAlloc(t *testing.T) {
	for _, in := range []string{vllmChunk, llamaUsageChunk,
		`{"id":"x","choices":[{"index":0,"delta":{"role":null,"content":null,"reasoning_content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\""}}]},"finish_reason":null}],"usage":null}`} {
		data := []byte(in)
		var c Chunk
		allocs := testing.AllocsPerRun(100, func() { _ = Parse(data, &c) })
		if allocs != 0 {
			t.Fatalf("Parse allocates %.1f times per chunk of %.40s…", allocs, in)
		}
	}
}

func BenchmarkParse(b *testing.B) {
	data := []byte(vllmChunk)
	var c Chunk
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if err := Parse(data, &c); err != nil || !c.Content {
			b.Fatal("bad parse")
		}
	}
}

// BenchmarkReadParse is the whole per-chunk path: framing plus scanning.
func BenchmarkReadParse(b *testing.B) {
	const n = 1000
	var sb strings.Builder
	for range n {
		sb.WriteString("data: " + vllmChunk + "\n\n")
	}
	stream := []byte(sb.String())
	rd := NewReader(nil)
	var c Chunk
	b.SetBytes(int64(len(stream) / n))
	b.ReportAllocs()
	r := bytes.NewReader(stream)
	for b.Loop() {
		r.Reset(stream)
		rd.Reset(r)
		for {
			d, err := rd.Next()
			if err != nil {
				break
			}
			if err := Parse(d, &c); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/chunk")
}

func BenchmarkReaderLongLine(b *testing.B) {
	stream := []byte("data: \"" + strings.Repeat("x", 8<<20) + "\"\n\n")
	rd := NewReader(nil)
	b.SetBytes(int64(len(stream)))
	r := bytes.NewReader(stream)
	for b.Loop() {
		r.Reset(stream)
		rd.Reset(iotest.HalfReader(r))
		if _, err := rd.Next(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseStdlib decodes the same chunk with encoding/json into the
// smallest struct that answers the same questions, for scale: Parse's figure
// is meaningful against this one on the same (shared, noisy) machine.
func BenchmarkParseStdlib(b *testing.B) {
	data := []byte(vllmChunk)
	type chunk struct {
		Choices []struct {
			Delta struct {
				Content          *string `json:"content"`
				Reasoning        *string `json:"reasoning"`
				ReasoningContent *string `json:"reasoning_content"`
			} `json:"delta"`
			Text         *string `json:"text"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Usage *struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
		Error json.RawMessage `json:"error"`
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var c chunk
		if err := json.Unmarshal(data, &c); err != nil || len(c.Choices) != 1 {
			b.Fatal("bad decode")
		}
	}
}

// TestReaderNoCopy: a one-line event whose blank line arrived in the same
// read is handed out in place, as a slice of the reader's buffer (the copy
// into the event buffer is only for multi-line or split events).
func TestReaderNoCopy(t *testing.T) {
	in := "data: " + vllmChunk + "\n\ndata: a\ndata: b\n\n"
	rd := NewReader(strings.NewReader(in))
	d, err := rd.Next()
	if err != nil || string(d) != vllmChunk {
		t.Fatalf("first: %q %v", d, err)
	}
	inBuf := func(d []byte) bool {
		b := rd.buf[:cap(rd.buf)]
		return len(d) > 0 && &d[0] == &b[6] // right after "data: "
	}
	if !inBuf(d) {
		t.Error("single-line event was copied")
	}
	d, err = rd.Next()
	if err != nil || string(d) != "a\nb" {
		t.Fatalf("second: %q %v", d, err)
	}
}
