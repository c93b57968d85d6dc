package protocol

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBatchEncode: the embeddings, rerank and score bodies, byte for byte, with
// extra_body merged and the measured fields kept.
func TestBatchEncode(t *testing.T) {
	extra := map[string]any{"encoding_format": "float", "input": "no", "query": "no", "documents": "no", "model": "x", "top_n": 2}
	scoreExtra := map[string]any{"text_1": "no", "text_2": "no", "model": "x", "truncate_prompt_tokens": -1}
	cases := []struct {
		p    Protocol
		r    Request
		want string
	}{
		{embeddings{}, Request{Model: "m", Text: "hi", MaxTokens: 5, Pinned: true}, `{"input":"hi","model":"m"}`},
		{embeddings{}, Request{Model: "m", Inputs: []string{"a", "b"}, Extra: extra}, `{"documents":"no","encoding_format":"float","input":["a","b"],"model":"m","query":"no","top_n":2}`},
		{rerank{}, Request{Model: "m", Text: "q", Documents: []string{"d1", "d2"}, Extra: extra}, `{"documents":["d1","d2"],"encoding_format":"float","input":"no","model":"m","query":"q","top_n":2}`},
		{score{}, Request{Model: "m", Text: "q", Documents: []string{"d1", "d2"}, Extra: scoreExtra, MaxTokens: 5, Pinned: true}, `{"model":"m","text_1":"q","text_2":["d1","d2"],"truncate_prompt_tokens":-1}`},
		{score{}, Request{Model: "m", Messages: []Message{{"system", "s"}, {"user", "u"}}}, `{"model":"m","text_1":"s\nu","text_2":[]}`},
		{chat{}, Request{Model: "m", MaxTokens: 1, Text: "look", Images: []string{"data:image/png;base64,AA=="}},
			`{"max_tokens":1,"messages":[{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AA=="}}]}],"model":"m","stream":true,"stream_options":{"include_usage":true},"temperature":0}`},
		{chat{}, Request{Model: "m", MaxTokens: 1, Messages: []Message{{"system", "s"}, {"user", "u"}}, Images: []string{"data:x"}},
			`{"max_tokens":1,"messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"u"},{"type":"image_url","image_url":{"url":"data:x"}}]}],"model":"m","stream":true,"stream_options":{"include_usage":true},"temperature":0}`},
	}
	resp, err := responses{}.Encode(Request{Model: "m", MaxTokens: 2, Text: "look", Images: []string{"data:image/png;base64,AA=="}})
	if want := `"input":[{"role":"user","content":[{"type":"input_text","text":"look"},{"type":"input_image","image_url":"data:image/png;base64,AA=="}]}]`; err != nil || !strings.Contains(string(resp), want) {
		t.Errorf("responses with an image: %s, %v\nwant %s in it", resp, err, want)
	}
	for _, c := range cases {
		got, err := c.p.Encode(c.r)
		if err != nil || string(got) != c.want {
			t.Errorf("%s: Encode = %s, %v\nwant %s", c.p.Name(), got, err, c.want)
		}
	}
}

// decodeOne reads body with p's decoder: its one event, then io.EOF.
func decodeOne(t *testing.T, p Protocol, body string) (Event, error) {
	t.Helper()
	d := p.NewDecoder()
	d.Reset(strings.NewReader(body))
	var ev Event
	err := d.Next(&ev)
	if err == nil {
		if err2 := d.Next(&Event{}); err2 != io.EOF {
			t.Errorf("second Next = %v, want io.EOF", err2)
		}
	}
	return ev, err
}

// TestBatchDecoders: answers as each engine sends them (testdata/answers,
// captured from the real servers: see each file's name) and as hostile
// servers might.
func TestBatchDecoders(t *testing.T) {
	files, _ := filepath.Glob("testdata/answers/*.json")
	if len(files) < 3 {
		t.Fatalf("%d captured answers in testdata/answers", len(files))
	}
	for _, f := range files {
		name := filepath.Base(f)
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var p Protocol = embeddings{}
		if strings.Contains(name, "rerank") {
			p = rerank{}
		}
		ev, err := decodeOne(t, p, string(b))
		want := answerWant[name]
		if want.results == 0 {
			t.Errorf("%s: no expectation for this file", name)
			continue
		}
		if err != nil || !ev.Finish || !ev.Usage || ev.PromptTokens != want.tokens || ev.Results != want.results || ev.Error || ev.Content {
			t.Errorf("%s: event %+v, %v; want %d tokens, %d results", name, ev, err, want.tokens, want.results)
		}
	}
	for _, c := range []struct {
		p    Protocol
		body string
		want string // "" ok; "error": an error event; "other:API": an OtherAPIError of API; else a MalformedError containing it
	}{
		{embeddings{}, `{"data":[{"embedding":"AAAAAA=="}],"usage":{"prompt_tokens":3}}`, ""},
		{embeddings{}, `{"data":[],"usage":{"prompt_tokens":3}}`, "answer carries no results"},
		{embeddings{}, `{"data":[{"embedding":[]}]}`, "data[0] has no embedding"},
		{embeddings{}, `{"data":[{"embedding":[1]}`, "{"},
		{embeddings{}, `{"error":{"message":"bad \"x\"","code":400}}`, "error"},
		{embeddings{}, `{"object":"error","message":"nope"}`, "error"},
		{rerank{}, `{"results":[{"index":0}],"usage":{"total_tokens":3}}`, "results[0] has no index or relevance_score"},
		{rerank{}, `{"results":[{"index":0,"relevance_score":-2.5}],"usage":{"total_tokens":7}}`, ""},
		// vLLM's shape (from its source): usage has total_tokens only, each
		// result echoes its document.
		{rerank{}, `{"id":"rerank-1","model":"m","usage":{"total_tokens":12},"results":[{"index":1,"document":{"text":"b"},"relevance_score":0.9},{"index":0,"document":{"text":"a"},"relevance_score":0.1}]}`, ""},
		{rerank{}, `<html>`, "<html>"},
		// vLLM's /score (from its source, pooling/score protocol.py and
		// serving.py): data in the documents' order, usage with
		// prompt_tokens, total_tokens and a zero completion_tokens.
		{score{}, `{"id":"score-1","object":"list","created":1,"model":"m","data":[{"index":0,"object":"score","score":0.25},{"index":1,"object":"score","score":-3.5}],"usage":{"prompt_tokens":40,"total_tokens":40,"completion_tokens":0,"prompt_tokens_details":null}}`, ""},
		{score{}, `{"data":[{"index":0}],"usage":{"prompt_tokens":3}}`, "data[0] has no index or score"},
		{score{}, `{"data":[],"usage":{"prompt_tokens":3}}`, "answer carries no results"},
		// Another API's answer: the endpoint does not serve this one here.
		{score{}, `{"results":[{"index":0,"relevance_score":0.5}]}`, "other:rerank"},
		{embeddings{}, `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"x"}}],"usage":{"prompt_tokens":3}}`, "other:chat"},
		{rerank{}, `{"id":"c","object":"text_completion","choices":[{"index":0,"text":"x"}]}`, "other:completions"},
		{score{}, `{"id":"r","object":"response","status":"completed","output":[]}`, "other:responses"},
		{embeddings{}, `{"id":"m","type":"message","role":"assistant","content":[{"type":"text","text":"x"}]}`, "other:messages"},
		{rerank{}, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1]}],"usage":{"prompt_tokens":3}}`, "other:embeddings"},
		{embeddings{}, `{"object":"list","data":[{"object":"score","index":0,"score":0.5}]}`, "other:score"},
		{embeddings{}, `{"results":[{"index":0,"relevance_score":0.5}]}`, "other:rerank"},
		{score{}, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1]}]}`, "other:embeddings"},
		// Not another API's: this API's list, empty.
		{rerank{}, `{"results":[],"usage":{"total_tokens":3}}`, "answer carries no results"},
		{embeddings{}, `{"object":"list","data":[],"choices":null}`, "answer carries no results"},
		{score{}, `{"data":[{"index":0,"relevance_score":0.5}]}`, "data[0] has no index or score"},
		{rerank{}, `{"data":[{"index":0,"score":0.5}]}`, "other:score"},
		{rerank{}, `{"results":[{"index":0,"score":0.5}]}`, "results[0] has no index or relevance_score"},
		{rerank{}, `{"results":[{"index":0,"relevance_score":0.5}],"data":"another server's","usage":{"prompt_tokens":3}}`, ""},
		{rerank{}, `{"results":{"index":0}}`, `{"results"`},
		{score{}, `{"object":"error","message":"The model does not support Score API","type":"BadRequestError","code":400}`, "error"},
	} {
		ev, err := decodeOne(t, c.p, c.body)
		var bad *MalformedError
		var other *OtherAPIError
		switch {
		case strings.HasPrefix(c.want, "other:"):
			if !errors.As(err, &other) || other.Got != strings.TrimPrefix(c.want, "other:") || other.Want != c.p.Name() || !other.Whole ||
				other.Error() != "the response is a JSON answer of api "+other.Got+", not of api "+c.p.Name() {
				t.Errorf("%s %s: %v, want the answer of api %s", c.p.Name(), c.body, err, c.want)
			}
		case c.want == "":
			if err != nil || !ev.Finish {
				t.Errorf("%s %s: %+v %v", c.p.Name(), c.body, ev, err)
			}
		case c.want == "error":
			if err != nil || !ev.Error || ev.Finish {
				t.Errorf("%s %s: %+v %v, want an error event", c.p.Name(), c.body, ev, err)
			}
		case !errors.As(err, &bad) || !strings.Contains(string(bad.Data), c.want):
			t.Errorf("%s %s: %v, want malformed with %q", c.p.Name(), c.body, err, c.want)
		}
	}
	ev, err := decodeOne(t, score{}, `{"object":"list","data":[{"index":0,"object":"score","score":0.5},{"index":1,"object":"score","score":0.1}],"usage":{"prompt_tokens":40,"total_tokens":40,"completion_tokens":0}}`)
	if err != nil || !ev.Usage || ev.PromptTokens != 40 || ev.Results != 2 || ev.Content || ev.CompletionTokens != 0 {
		t.Errorf("score answer: %+v, %v", ev, err)
	}
	ev, _ = decodeOne(t, embeddings{}, `{"error":{"message":"bad \"x\"","code":400}}`)
	if string(ev.ErrorMessage) != `bad \"x\"` {
		t.Errorf("error message %q", ev.ErrorMessage)
	}
	d := embeddings{}.NewDecoder().(*wholeDecoder)
	d.limit = 1 << 10
	d.Reset(io.MultiReader(strings.NewReader(`{"data":[`), strings.NewReader(strings.Repeat(" ", 1<<10))))
	if err := d.Next(&Event{}); !errors.Is(err, ErrLineTooLong) {
		t.Errorf("answer past the limit: %v", err)
	}
}

// answerWant is what each captured answer holds.
var answerWant = map[string]struct{ tokens, results int }{
	"llama.cpp-84f7129-embeddings-base64.json":           {2, 1},
	"llama.cpp-84f7129-embeddings-batch.json":            {23, 2},
	"llama.cpp-84f7129-embeddings-one.json":              {14, 1},
	"llama.cpp-84f7129-rerank-top-n.json":                {9, 2},
	"llama.cpp-84f7129-rerank.json":                      {61, 3},
	"llm-d-inference-sim-v0.10.2-embeddings-base64.json": {1, 1},
	"llm-d-inference-sim-v0.10.2-embeddings-batch.json":  {13, 2},
	"llm-d-inference-sim-v0.10.2-embeddings-one.json":    {9, 1},
}
