package protocol

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTypedEncode: the Responses and Messages bodies, byte for byte
// (json.Marshal sorts keys): the length cap under each API's name, the
// input in each API's form (Messages' system prompt apart), ignore_eos
// only when pinned, and the tools and tool choice translated from chat's
// form.
func TestTypedEncode(t *testing.T) {
	tools := []Tool{{Name: "get_weather", Description: "d", Parameters: map[string]any{"type": "object"}}, {Name: "noargs"}}
	conv := []Message{{"system", "be brief"}, {"user", "hi"}}
	cases := []struct {
		name string
		p    Protocol
		r    Request
		want string
	}{
		{"responses text pinned", responses{}, Request{Model: "m", MaxTokens: 7, Pinned: true, Text: "hi", Extra: map[string]any{"input": "no", "store": false}},
			`{"ignore_eos":true,"input":"hi","max_output_tokens":7,"model":"m","store":false,"stream":true,"temperature":0}`},
		{"responses messages tools", responses{}, Request{Model: "m", MaxTokens: 7, Messages: conv, Tools: tools, ToolChoice: ToolChoice{Mode: ToolFunction, Name: "noargs"}},
			`{"input":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}],"max_output_tokens":7,"model":"m","stream":true,"temperature":0,` +
				`"tool_choice":{"name":"noargs","type":"function"},"tools":[{"description":"d","name":"get_weather","parameters":{"type":"object"},"type":"function"},{"name":"noargs","type":"function"}]}`},
		{"messages text natural", messages{}, Request{Model: "m", MaxTokens: 7, Text: "hi", Temperature: 0.5, Extra: map[string]any{"stream": false, "top_k": 5}},
			`{"max_tokens":7,"messages":[{"role":"user","content":"hi"}],"model":"m","stream":true,"temperature":0.5,"top_k":5}`},
		{"messages system tools", messages{}, Request{Model: "m", MaxTokens: 7, Pinned: true, Messages: conv, Tools: tools, ToolChoice: ToolChoice{Mode: ToolRequired}},
			`{"ignore_eos":true,"max_tokens":7,"messages":[{"role":"user","content":"hi"}],"model":"m","stream":true,"system":"be brief","temperature":0,` +
				`"tool_choice":{"type":"any"},"tools":[{"description":"d","input_schema":{"type":"object"},"name":"get_weather"},{"input_schema":{"type":"object"},"name":"noargs"}]}`},
		{"messages named tool", messages{}, Request{Model: "m", MaxTokens: 1, Text: "x", Tools: tools[:1], ToolChoice: ToolChoice{Mode: ToolFunction, Name: "get_weather"}},
			`{"max_tokens":1,"messages":[{"role":"user","content":"x"}],"model":"m","stream":true,"temperature":0,"tool_choice":{"name":"get_weather","type":"tool"},"tools":[{"description":"d","input_schema":{"type":"object"},"name":"get_weather"}]}`},
		{"chat tools", chat{}, Request{Model: "m", MaxTokens: 1, Text: "x", Tools: tools[:1], ToolChoice: ToolChoice{Mode: ToolAuto}},
			`{"max_tokens":1,"messages":[{"role":"user","content":"x"}],"model":"m","stream":true,"stream_options":{"include_usage":true},"temperature":0,"tool_choice":"auto","tools":[{"function":{"description":"d","name":"get_weather","parameters":{"type":"object"}},"type":"function"}]}`},
	}
	for _, c := range cases {
		got, err := c.p.Encode(c.r)
		if err != nil || string(got) != c.want {
			t.Errorf("%s: Encode = %s, %v\nwant %s", c.name, got, err, c.want)
		}
	}
}

// TestMessagesHeaders: the key goes in x-api-key, never as a bearer token,
// and anthropic-version is always sent.
func TestMessagesHeaders(t *testing.T) {
	h, bearer := messages{}.Headers("k-1")
	if bearer || h["x-api-key"] != "k-1" || h["anthropic-version"] != AnthropicVersion || len(h) != 2 {
		t.Fatalf("headers %v, bearer %v", h, bearer)
	}
	if h, _ := (messages{}).Headers(""); len(h) != 1 || h["x-api-key"] != "" {
		t.Fatalf("headers without a key: %v", h)
	}
	var p Protocol = responses{}
	if _, ok := p.(Authenticator); ok {
		t.Fatal("responses carries the key as a bearer token, like chat")
	}
}

// decoded is what a decoder made of a whole stream.
type decoded struct {
	content, reasoning, toolCalls int
	usage                         bool
	prompt, completion            int
	finish                        string
	done                          bool
	errMsg                        string
	err                           error
}

// decodeAll reads body through d as the engine does: events until the end
// marker, then the rest skipped. Usage is the last event's that carries one.
func decodeAll(d Decoder, body []byte) decoded {
	var out decoded
	d.Reset(bytes.NewReader(body))
	var ev Event
	for {
		if out.done {
			if err := d.Skip(); err != nil {
				return out
			}
			continue
		}
		err := d.Next(&ev)
		if err == io.EOF {
			return out
		}
		if err != nil {
			out.err = err
			return out
		}
		if ev.Done {
			out.done = true
			continue
		}
		c := &ev.Chunk
		if c.Content {
			out.content++
		}
		if c.Reasoning {
			out.reasoning++
		}
		if c.ToolCall {
			out.toolCalls++
		}
		if c.Usage {
			out.usage, out.prompt, out.completion = true, c.PromptTokens, c.CompletionTokens
		}
		if c.Finish {
			out.finish = string(c.FinishReason)
		}
		if c.Error {
			out.errMsg = string(c.ErrorMessage)
			return out
		}
	}
}

// oracle is what encoding/json makes of the same stream: an independent
// reading of every event by the APIs' documentation.
func oracle(t *testing.T, api string, body []byte) decoded {
	t.Helper()
	var out decoded
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data:")
		if !ok {
			continue
		}
		data = strings.TrimSpace(data)
		if data == "[DONE]" {
			out.done = true
			continue
		}
		var ev struct {
			Type     string          `json:"type"`
			Delta    json.RawMessage `json:"delta"`
			Item     struct{ Type string }
			Block    struct{ Type string } `json:"content_block"`
			Message  struct{ Usage map[string]any }
			Usage    map[string]any
			Response struct {
				Status            string
				Usage             map[string]any
				IncompleteDetails *struct{ Reason string } `json:"incomplete_details"`
			}
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("oracle: %q: %v", data, err)
		}
		switch api + " " + ev.Type {
		case "responses response.output_text.delta", "responses response.function_call_arguments.delta":
			var s string
			if json.Unmarshal(ev.Delta, &s) == nil && s != "" {
				out.content++
			}
		case "responses response.reasoning_text.delta", "responses response.reasoning_summary_text.delta":
			var s string
			if json.Unmarshal(ev.Delta, &s) == nil && s != "" {
				out.reasoning++
			}
		case "responses response.output_item.added":
			if ev.Item.Type == "function_call" {
				out.toolCalls++
			}
		case "responses response.completed", "responses response.incomplete":
			out.usage = true
			out.prompt, out.completion = num(ev.Response.Usage["input_tokens"]), num(ev.Response.Usage["output_tokens"])
			if d := ev.Response.IncompleteDetails; d != nil && d.Reason == "max_output_tokens" {
				out.finish = "length" // response.completed gives no reason: the engines send it on a cut too
			}
			out.done = true
		case "messages message_start":
			u := ev.Message.Usage
			out.usage, out.prompt = true, num(u["input_tokens"])+num(u["cache_creation_input_tokens"])+num(u["cache_read_input_tokens"])
		case "messages content_block_start":
			if ev.Block.Type == "tool_use" {
				out.toolCalls++
			}
		case "messages content_block_delta":
			var d struct {
				Type, Text, Thinking string
				PartialJSON          string `json:"partial_json"`
			}
			_ = json.Unmarshal(ev.Delta, &d)
			switch {
			case d.Type == "text_delta" && d.Text != "", d.Type == "input_json_delta" && d.PartialJSON != "":
				out.content++
			case d.Type == "thinking_delta" && d.Thinking != "":
				out.reasoning++
			}
		case "messages message_delta":
			var d struct {
				StopReason string `json:"stop_reason"`
			}
			_ = json.Unmarshal(ev.Delta, &d)
			out.finish = map[string]string{"end_turn": "stop", "max_tokens": "length", "tool_use": "tool_calls", "stop_sequence": "stop"}[d.StopReason]
			out.completion = num(ev.Usage["output_tokens"])
			if in, ok := ev.Usage["input_tokens"]; ok {
				out.prompt = num(in) + num(ev.Usage["cache_creation_input_tokens"]) + num(ev.Usage["cache_read_input_tokens"])
			}
		case "messages message_stop":
			out.done = true
		}
	}
	return out
}

// num is a JSON number as an int (0 for anything else).
func num(v any) int {
	f, _ := v.(float64)
	return int(f)
}

// TestRecordedStreams decodes the streams recorded from the real engines
// (testdata/README.md says which engine, version and request made each)
// and compares each with the oracle's reading: every answer, reasoning and
// tool-argument delta, the usage, the finish and the end.
func TestRecordedStreams(t *testing.T) {
	files, err := filepath.Glob("testdata/*.sse")
	if err != nil || len(files) < 4 {
		t.Fatalf("recorded streams: %v, %v (want at least one per engine and API)", files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			body, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			api := strings.SplitN(filepath.Base(f), "-", 3)[1] // ENGINE-API-what.sse
			p, ok := Lookup(api)
			if !ok {
				t.Fatalf("no api %q", api)
			}
			got, want := decodeAll(p.NewDecoder(), body), oracle(t, api, body)
			if got.err != nil || got.errMsg != "" {
				t.Fatalf("decode: %v %s", got.err, got.errMsg)
			}
			if got != want {
				t.Errorf("decoded %+v\noracle  %+v", got, want)
			}
			if !got.done || !got.usage || got.content+got.reasoning == 0 || (api == "messages" && got.finish == "") {
				t.Errorf("incomplete reading %+v", got)
			}
		})
	}
}

// TestTypedFailures: the error events are errors with their messages, an
// event stream of another API is an *OtherAPIError naming both, and a
// broken event is malformed with its bytes.
func TestTypedFailures(t *testing.T) {
	cases := []struct {
		p         Protocol
		stream    string
		errMsg    string
		otherAPI  string
		malformed bool
	}{
		{responses{}, "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r\",\"usage\":null}}\n\n" +
			"event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"boom \\\"x\\\"\"}}}\n\n", `boom \"x\"`, "", false},
		{responses{}, "event: error\ndata: {\"type\":\"error\",\"code\":\"ERR\",\"message\":\"bad thing\",\"param\":null,\"sequence_number\":1}\n\n", "bad thing", "", false},
		{messages{}, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3}}}\n\n" +
			"event: ping\ndata: {\"type\": \"ping\"}\n\nevent: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n", "Overloaded", "", false},
		{responses{}, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n", "", "chat", false},
		{messages{}, "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{}}\n\n", "", "responses", false},
		{responses{}, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n", "", "messages", false},
		{messages{}, "data: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"\n\n", "", "", true},
	}
	for i, c := range cases {
		got := decodeAll(c.p.NewDecoder(), []byte(c.stream))
		var other *OtherAPIError
		var bad *MalformedError
		switch {
		case c.errMsg != "" && got.errMsg != c.errMsg:
			t.Errorf("case %d (%s): error message %q, want %q (%+v)", i, c.p.Name(), got.errMsg, c.errMsg, got)
		case c.otherAPI != "" && (!errors.As(got.err, &other) || other.Got != c.otherAPI || other.Want != c.p.Name()):
			t.Errorf("case %d (%s): err %v, want an event stream of %s", i, c.p.Name(), got.err, c.otherAPI)
		case c.malformed && !errors.As(got.err, &bad):
			t.Errorf("case %d (%s): err %v, want malformed", i, c.p.Name(), got.err)
		}
	}
}

// TestMessagesUsagePieces: message_start's input count is kept and joined
// to message_delta's output count; message_start's placeholder output
// count (Anthropic says 1) is no output; cached input is input.
func TestMessagesUsagePieces(t *testing.T) {
	stream := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":5,\"cache_read_input_tokens\":7,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hm\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"abc\"}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"f\",\"input\":{}}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\\\":1}\"}}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":9}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	got := decodeAll(messages{}.NewDecoder(), []byte(stream))
	want := decoded{content: 1, reasoning: 1, toolCalls: 1, usage: true, prompt: 12, completion: 9, finish: "tool_calls", done: true}
	if got != want {
		t.Fatalf("decoded %+v\nwant    %+v", got, want)
	}
	if o := oracle(t, "messages", []byte(stream)); o != want {
		t.Fatalf("oracle %+v", o)
	}
}

// TestTypedNoAlloc: a delta event costs no allocation on either API.
func TestTypedNoAlloc(t *testing.T) {
	for _, c := range []struct {
		p     Protocol
		event string
	}{{responses{}, responsesDelta}, {messages{}, messagesDelta}, {chat{}, chatDelta}} {
		stream := []byte(strings.Repeat(c.event, 64))
		d := c.p.NewDecoder()
		r := bytes.NewReader(stream)
		var ev Event
		allocs := testing.AllocsPerRun(20, func() {
			r.Reset(stream)
			d.Reset(r)
			for d.Next(&ev) == nil {
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %.1f allocations per 64 events", c.p.Name(), allocs)
		}
	}
}

// One delta event of each API as the engines send it (llama-server's
// shapes; see testdata), for the benchmarks and TestTypedNoAlloc.
const (
	chatDelta      = "data: {\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":{\"content\":\" jumps\"}}],\"created\":1764630000,\"id\":\"chatcmpl-8d1f2b6c0a9e4d7f\",\"model\":\"tiny\",\"system_fingerprint\":\"b1-84f7129\",\"object\":\"chat.completion.chunk\"}\n\n"
	responsesDelta = "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":12,\"item_id\":\"msg_8d1f2b6c0a9e4d7f\",\"output_index\":0,\"content_index\":0,\"delta\":\" jumps\",\"logprobs\":[]}\n\n"
	messagesDelta  = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" jumps\"}}\n\n"
)

// benchDecode is the whole per-event path of an API (framing, scanning,
// the decoder's bookkeeping) over 1000 delta events, in ns per event.
func benchDecode(b *testing.B, p Protocol, event string) {
	const n = 1000
	stream := []byte(strings.Repeat(event, n))
	d := p.NewDecoder()
	r := bytes.NewReader(stream)
	var ev Event
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(stream)
		d.Reset(r)
		for k := 0; ; k++ {
			err := d.Next(&ev)
			if err == io.EOF {
				if k != n {
					b.Fatalf("%d events of %d", k, n)
				}
				break
			}
			if err != nil || !ev.Content {
				b.Fatalf("event %d: %v %+v", k, err, ev)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
}

// BenchmarkDecodeChat, BenchmarkDecodeResponses and BenchmarkDecodeMessages
// are each API's cost per streamed event, to be read against each other on
// the same machine: the typed APIs must cost what chat costs.
func BenchmarkDecodeChat(b *testing.B)      { benchDecode(b, chat{}, chatDelta) }
func BenchmarkDecodeResponses(b *testing.B) { benchDecode(b, responses{}, responsesDelta) }
func BenchmarkDecodeMessages(b *testing.B)  { benchDecode(b, messages{}, messagesDelta) }
