package protocol

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestReplyText(t *testing.T) {
	stream := "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n" +
		"data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n" +
		": keep-alive\n" +
		"data:{\"choices\":[{\"delta\":{\"content\":\"lo \\\"x\\\"\"}}]}\n\n" +
		"data: {\"choices\":[{\"text\":\"!\"}]}\n\n" +
		"data: {\"choices\":[],\"usage\":{\"completion_tokens\":3}}\n\n" +
		"data: [DONE]\n\n"
	if got := (chat{}).Reply([]byte(stream)); got != `Hello "x"!` {
		t.Fatalf("Reply = %q", got)
	}
	big := "data: {\"choices\":[{\"delta\":{\"content\":\"" + strings.Repeat("a", MaxReplyText) + "\"}}]}\n" +
		"data: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n"
	if got := (chat{}).Reply([]byte(big)); len(got) != MaxReplyText || strings.Contains(got, "b") {
		t.Fatalf("reply of %d bytes not cut at %d", len(got), MaxReplyText)
	}
}

// TestEncode: each API's body, byte for byte (json.Marshal sorts keys), with
// extra_body merged and the measurement's own fields kept.
func TestEncode(t *testing.T) {
	extra := map[string]any{"top_p": 0.5, "stream": false, "prompt": "no", "stream_options": map[string]any{"x": 1}}
	r := &Request{Model: "m", MaxTokens: 7, Temperature: 0.2, Pinned: true, Extra: extra, Text: "hi"}
	cases := []struct {
		p    Protocol
		r    Request
		want string
	}{
		{chat{}, *r, `{"ignore_eos":true,"max_tokens":7,"messages":[{"role":"user","content":"hi"}],"model":"m","stream":true,"stream_options":{"include_usage":true,"x":1},"temperature":0.2,"top_p":0.5}`},
		{completions{}, *r, `{"ignore_eos":true,"max_tokens":7,"model":"m","prompt":"hi","stream":true,"stream_options":{"include_usage":true,"x":1},"temperature":0.2,"top_p":0.5}`},
		{completions{}, Request{Model: "m", MaxTokens: 1, Messages: []Message{{"system", "a"}, {"user", "b"}}},
			`{"max_tokens":1,"model":"m","prompt":"a\nb","stream":true,"stream_options":{"include_usage":true},"temperature":0}`},
	}
	for _, c := range cases {
		got, err := c.p.Encode(c.r)
		if err != nil || string(got) != c.want {
			t.Errorf("%s: Encode = %s, %v\nwant %s", c.p.Name(), got, err, c.want)
		}
	}
}

// TestRegistry: every name is found, once, and only chat keeps a history.
func TestRegistry(t *testing.T) {
	if got := strings.Join(Names(), ","); got != "chat,completions,responses,messages,embeddings,rerank,score" {
		t.Fatalf("Names = %s", got)
	}
	for _, n := range Names() {
		p, ok := Lookup(n)
		if !ok || p.Name() != n || p.Path() == "" || p.MediaType() == "" {
			t.Errorf("Lookup(%s) = %v, %v", n, p, ok)
		}
		_, conv := p.(Conversational)
		if conv != (n == "chat") {
			t.Errorf("%s: conversational %v", n, conv)
		}
	}
	if _, ok := Lookup("no-such-api"); ok {
		t.Fatal("Lookup found an API nobody registered")
	}
}

// TestURL: a path goes after the API root, a Rooted one after the server's
// root (base_url less its trailing /v1).
func TestURL(t *testing.T) {
	for _, c := range []struct {
		p          Protocol
		base, want string
	}{
		{rerank{}, "http://h:8000/v1", "http://h:8000/v1/rerank"},
		{score{}, "http://h:8000/v1", "http://h:8000/score"},
		{score{}, "http://h:8000", "http://h:8000/score"},
		{score{}, "https://gw/llm/v1", "https://gw/llm/score"},
		{score{}, "http://h/v1beta", "http://h/v1beta/score"},
		{chat{}, "http://h:8000/v1", "http://h:8000/v1/chat/completions"},
	} {
		if got := URL(c.p, c.base); got != c.want {
			t.Errorf("URL(%s, %s) = %s, want %s", c.p.Name(), c.base, got, c.want)
		}
	}
	for _, p := range Registry {
		_, rooted := p.(Rooted)
		_, scores := p.(DocumentScorer)
		if rooted != (p.Name() == "score") || scores != (p.Name() == "rerank" || p.Name() == "score") {
			t.Errorf("%s: rooted %v, scores documents %v", p.Name(), rooted, scores)
		}
	}
}

// TestSSEDecoder: chunks, a malformed chunk with its bytes, [DONE], and the
// drain after it.
func TestSSEDecoder(t *testing.T) {
	d := newSSEDecoder()
	d.Reset(strings.NewReader("data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: {oops\n\ndata: [DONE]\n\ndata: junk\n\n"))
	var ev Event
	if err := d.Next(&ev); err != nil || !ev.Content || ev.Done {
		t.Fatalf("first event %+v, %v", ev, err)
	}
	err := d.Next(&ev)
	var bad *MalformedError
	if !errors.As(err, &bad) || string(bad.Data) != "{oops" {
		t.Fatalf("malformed chunk: %v", err)
	}
	if err := d.Next(&ev); err != nil || !ev.Done || ev.Content {
		t.Fatalf("[DONE]: %+v, %v", ev, err)
	}
	if err := d.Skip(); err != nil {
		t.Fatalf("skip: %v", err)
	}
	if err := d.Skip(); err != io.EOF {
		t.Fatalf("end: %v", err)
	}
}

// TestProbe: the OpenAI probe's body and what its answer's usage means.
func TestProbe(t *testing.T) {
	for _, p := range []Prober{chat{}, completions{}} {
		body, answer, tokens := p.Probe("m", "hi")
		if body["max_tokens"] != 1 || body["stream"] != false || body["model"] != "m" {
			t.Errorf("%s: probe body %v", p.Name(), body)
		}
		if err := json.Unmarshal([]byte(`{"usage":{"prompt_tokens":12,"completion_tokens":1}}`), answer); err != nil {
			t.Fatal(err)
		}
		if n, err := tokens(); n != 12 || err != nil {
			t.Errorf("%s: tokens %d, %v", p.Name(), n, err)
		}
		_, answer, tokens = p.Probe("m", "hi")
		_ = json.Unmarshal([]byte(`{"choices":[]}`), answer)
		if _, err := tokens(); err == nil {
			t.Errorf("%s: an answer without usage counted", p.Name())
		}
	}
}

// TestModelNotFound: the answers real servers give for a model they do not
// serve are told from a 404 of a path they do not serve.
func TestModelNotFound(t *testing.T) {
	for _, c := range []struct {
		name, body string
		want       bool
	}{
		// vLLM and llm-d-inference-sim v0.10.2 (seen on loopback), the
		// built-in simulator.
		{"vllm", `{"error":{"message":"The model ` + "`tiny`" + ` does not exist.","type":"NotFoundError","param":null,"code":404}}`, true},
		{"openai", `{"error":{"message":"The model ` + "`tiny`" + ` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`, true},
		{"ollama", `{"error":"model \"tiny\" not found, try pulling it first"}`, true},
		// A path the server does not serve: Go's mux, llama-server.
		{"go mux", "404 page not found", false},
		{"llama-server", `{"error":{"code":404,"message":"File Not Found","type":"not_found_error"}}`, false},
		// Another model's name: not the request's.
		{"other model", `{"error":{"message":"The model ` + "`big`" + ` does not exist."}}`, false},
	} {
		if got := ModelNotFound(c.body, "tiny"); got != c.want {
			t.Errorf("%s: ModelNotFound = %v, want %v", c.name, got, c.want)
		}
	}
}
