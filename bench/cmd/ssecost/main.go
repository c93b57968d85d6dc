// Command ssecost runs the SSE hot path (sse.Reader framing plus sse.Parse)
// over a fixed number of typical vLLM chat chunks and exits; with -api
// naming a typed-event API (see -api's values), over that API's
// answer-delta events through its parser instead. It exists to be run under
// `valgrind --tool=callgrind --toggle-collect=main.work` (main.workTyped for
// the typed APIs, main.decode for -mode decode), which counts the
// instructions spent per chunk: a figure that, unlike ns/op on a shared
// two-core machine, does not depend on what else the machine is doing.
// Take the difference of two runs (-n 20000 and -n 10000) over 10,000, so
// that the set-up cancels out.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/runnerbench/runner/protocol"
	"github.com/runnerbench/runner/protocol/sse"
)

// vllmChunk is the chunk vLLM streams for one token of a chat completion.
const vllmChunk = `{"id":"chatcmpl-b6f3a5e2c1d04f0e9a8b7c6d5e4f3a2b","object":"chat.completion.chunk","created":1732870000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"delta":{"content":" the"},"logprobs":null,"finish_reason":null}]}`

// chatChunks are the chat chunks -chunk chooses: vLLM's (the default, the
// figure the performance notes quote) and the other shapes a chat stream's
// chunks come in, each one token.
var chatChunks = map[string]string{
	"vllm": vllmChunk,
	// vLLM with stream_options.continuous_usage_stats: usage on every chunk.
	"usage": `{"id":"chatcmpl-b6f3a5e2c1d04f0e9a8b7c6d5e4f3a2b","object":"chat.completion.chunk","created":1732870000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"delta":{"content":" the"},"logprobs":null,"finish_reason":null}],"usage":{"prompt_tokens":12,"total_tokens":13,"completion_tokens":1}}`,
	// SGLang: every delta member there, most of them null.
	"sglang": `{"id":"c0a1b2c3d4e5f60718293a4b5c6d7e8f","object":"chat.completion.chunk","created":1732870000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"delta":{"role":null,"content":" the","reasoning_content":null,"tool_calls":null},"logprobs":null,"finish_reason":null,"matched_stop":null}],"usage":null}`,
	// llama-server: its members in its own order.
	"llama": `{"choices":[{"finish_reason":null,"index":0,"delta":{"content":" the"}}],"created":1732870000,"id":"chatcmpl-wlaLbKTvfeVWw9dsB0mEBXM7jjLe9GjZ","model":"tiny","system_fingerprint":"b0-unknown","object":"chat.completion.chunk"}`,
	// vLLM's delta of a tool call's arguments.
	"tool": `{"id":"chatcmpl-b6f3a5e2c1d04f0e9a8b7c6d5e4f3a2b","object":"chat.completion.chunk","created":1732870000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"ci"}}]},"logprobs":null,"finish_reason":null}]}`,
}

// chatChunk is the chunk -chunk chose.
var chatChunk = vllmChunk

// responsesEvent is the event the OpenAI Responses API streams for one
// token of answer, as OpenAI documents it.
const responsesEvent = `{"type":"response.output_text.delta","sequence_number":5,"item_id":"msg_67c9fdcf37fc8190ba82116e33fb28c5","output_index":0,"content_index":0,"delta":" the","logprobs":[]}`

// messagesEvent is the event the Anthropic Messages API streams for one
// token of answer.
const messagesEvent = `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" the"}}`

// apis are the streams -api chooses: the event's data, its SSE frame, and
// the scanner (the typed ones' Kind dropped; nil for chat: sse.Parse).
var apis = map[string]struct {
	data, frame string
	parse       func([]byte, *sse.Chunk) error
}{
	"chat": {parse: nil}, // data and frame: chatChunk's
	"responses": {responsesEvent, "event: response.output_text.delta\ndata: " + responsesEvent + "\n\n",
		func(d []byte, c *sse.Chunk) error { _, err := sse.ParseResponses(d, c); return err }},
	"messages": {messagesEvent, "event: content_block_delta\ndata: " + messagesEvent + "\n\n",
		func(d []byte, c *sse.Chunk) error { _, err := sse.ParseMessages(d, c); return err }},
}

func main() {
	n := flag.Int("n", 10000, "chunks to process")
	mode := flag.String("mode", "parse", "parse (sse.Parse alone), read (Reader framing plus Parse) or decode (the protocol's decoder: the engine's path)")
	chunk := flag.String("chunk", "vllm", "with -api chat, the chunk: vllm, usage (vLLM's with continuous usage), sglang, llama or tool (a tool call's arguments)")
	api := flag.String("api", "chat", "chat (vLLM chat chunks through sse.Parse), responses (output_text deltas through sse.ParseResponses) or messages (text_delta events through sse.ParseMessages)")
	flag.Parse()
	a, ok := apis[*api]
	if !ok {
		fmt.Fprintln(os.Stderr, "ssecost: -api is chat, responses or messages")
		os.Exit(2)
	}
	if chatChunk, ok = chatChunks[*chunk]; !ok || (*api != "chat" && *chunk != "vllm") {
		fmt.Fprintln(os.Stderr, "ssecost: -chunk is vllm, usage, sglang, llama or tool, with -api chat")
		os.Exit(2)
	}
	if *api == "chat" {
		a.data, a.frame = chatChunk, "data: "+chatChunk+"\n\n"
	}
	var got int
	switch {
	case *mode == "parse" && a.parse == nil:
		got = work(*n, nil)
	case *mode == "read" && a.parse == nil:
		got = work(*n, []byte(strings.Repeat(a.frame, *n)))
	case *mode == "parse":
		got = workTyped(*n, []byte(a.data), nil, a.parse)
	case *mode == "read":
		got = workTyped(*n, nil, []byte(strings.Repeat(a.frame, *n)), a.parse)
	case *mode == "decode":
		got = decode(*n, []byte(strings.Repeat(a.frame, *n)), *api)
	default:
		fmt.Fprintln(os.Stderr, "ssecost: -mode is parse, read or decode")
		os.Exit(2)
	}
	if got != *n {
		fmt.Fprintf(os.Stderr, "ssecost: %d of %d chunks parsed as content\n", got, *n)
		os.Exit(1)
	}
	fmt.Println(got)
}

// work is the measured region (callgrind's toggle-collect target): n chunks
// parsed from memory, or framed from stream and parsed when stream is set.
//
//go:noinline
func work(n int, stream []byte) int {
	var c sse.Chunk
	content := 0
	if stream == nil {
		data := []byte(chatChunk)
		for range n {
			if sse.Parse(data, &c) == nil && c.Content {
				content++
			}
		}
		return content
	}
	rd := sse.NewReader(bytes.NewReader(stream))
	for {
		d, err := rd.Next()
		if err == io.EOF {
			return content
		}
		if err != nil || sse.Parse(d, &c) != nil {
			return -1
		}
		if c.Content {
			content++
		}
	}
}

// workTyped is work for a typed API (toggle-collect=main.workTyped): the
// same loops through parse, its data the event's.
//
//go:noinline
func workTyped(n int, data, stream []byte, parse func([]byte, *sse.Chunk) error) int {
	var c sse.Chunk
	content := 0
	if stream == nil {
		for range n {
			if parse(data, &c) == nil && c.Content {
				content++
			}
		}
		return content
	}
	rd := sse.NewReader(bytes.NewReader(stream))
	for {
		d, err := rd.Next()
		if err == io.EOF {
			return content
		}
		if err != nil || parse(d, &c) != nil {
			return -1
		}
		if c.Content {
			content++
		}
	}
}

// decode is work's framing and parsing as the engine does it since the
// protocol seam: through the API's Decoder, an interface call a chunk.
//
//go:noinline
func decode(n int, stream []byte, api string) int {
	p, _ := protocol.Lookup(api)
	dec := p.NewDecoder()
	dec.Reset(bytes.NewReader(stream))
	var ev protocol.Event
	content := 0
	for {
		err := dec.Next(&ev)
		if err == io.EOF {
			return content
		}
		if err != nil {
			return -1
		}
		if ev.Content {
			content++
		}
	}
}
