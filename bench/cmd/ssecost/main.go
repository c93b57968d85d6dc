// Command ssecost runs the SSE hot path (sse.Reader framing plus sse.Parse)
// over a fixed number of typical vLLM chat chunks and exits. It exists to be
// run under `valgrind --tool=callgrind --toggle-collect=main.work`, which
// counts the instructions spent per chunk: a figure that, unlike ns/op on a
// shared two-core machine, does not depend on what else the machine is doing.
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

func main() {
	n := flag.Int("n", 10000, "chunks to process")
	mode := flag.String("mode", "parse", "parse (sse.Parse alone), read (Reader framing plus Parse) or decode (the chat protocol's decoder: the engine's path)")
	flag.Parse()
	var got int
	switch *mode {
	case "parse":
		got = work(*n, nil)
	case "read":
		stream := []byte(strings.Repeat("data: "+vllmChunk+"\n\n", *n))
		got = work(*n, stream)
	case "decode":
		stream := []byte(strings.Repeat("data: "+vllmChunk+"\n\n", *n))
		got = decode(*n, stream)
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
		data := []byte(vllmChunk)
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

// decode is work's framing and parsing as the engine does it since the
// protocol seam: through the chat protocol's Decoder, an interface call a
// chunk.
//
//go:noinline
func decode(n int, stream []byte) int {
	p, _ := protocol.Lookup("chat")
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
