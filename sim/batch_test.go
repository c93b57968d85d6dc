package sim

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// wholeAnswer posts body to path (after the /v1 base) and reads the answer.
func wholeAnswer(t *testing.T, s *Server, path string, body any) (resp *http.Response, data []byte, err error) {
	t.Helper()
	resp, err = post(t.Context(), s.URL()+path, body)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	data, err = io.ReadAll(resp.Body)
	return resp, data, err
}

// TestWholeAnswers: a completion and a batch answer, not streamed, with the
// faults that strike them: each its content type, its finish in the truth
// (a completion's reason; a batch answer always stop, with no output
// tokens), and a stall before the answer recorded as after 0 tokens.
func TestWholeAnswers(t *testing.T) {
	for _, c := range []struct {
		name   string
		f      Faults
		path   string
		body   func(nonce string) map[string]any
		ctype  string
		finish string
		output int
	}{
		{"completion", Faults{}, "/completions", func(n string) map[string]any {
			return map[string]any{"prompt": "[" + n + "] x", "max_tokens": 3, "ignore_eos": true}
		}, "application/json", "length", 3},
		{"embeddings", Faults{}, "/embeddings", func(n string) map[string]any {
			return map[string]any{"input": []string{"[" + n + "] x", "y"}}
		}, "application/json; charset=utf-8", "stop", 0},
		{"completion stall", Faults{Stall: 1, StallMs: 20, AfterTokens: 2}, "/completions", func(n string) map[string]any {
			return map[string]any{"prompt": "[" + n + "] x", "max_tokens": 3, "ignore_eos": true}
		}, "application/json", "length", 3},
		{"rerank stall", Faults{Stall: 1, StallMs: 20}, "/rerank", func(n string) map[string]any {
			return map[string]any{"query": "[" + n + "] q", "documents": []string{"a", "b"}}
		}, "application/json; charset=utf-8", "stop", 0},
		{"score malformed", Faults{Malformed: 1}, "/score", func(n string) map[string]any {
			return map[string]any{"text_1": "[" + n + "] q", "text_2": []string{"a", "b"}}
		}, "application/json; charset=utf-8", "abort", 0},
		{"embeddings error", Faults{ErrorInStream: 1}, "/embeddings", func(n string) map[string]any {
			return map[string]any{"input": "[" + n + "] x"}
		}, "application/json; charset=utf-8", "error", 0},
		{"embeddings truncated", Faults{Truncate: 1}, "/embeddings", func(n string) map[string]any {
			return map[string]any{"input": "[" + n + "] x"}
		}, "application/json; charset=utf-8", "abort", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := faultSim(t, c.f)
			n := nonce()
			start := time.Now()
			resp, data, err := wholeAnswer(t, s, c.path, c.body(n))
			if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != c.ctype {
				t.Fatalf("status %v type %q err %v: %s", resp.StatusCode, resp.Header.Get("Content-Type"), err, data)
			}
			if c.f.Truncate+c.f.Malformed == 0 && !json.Valid(data) || c.f.Truncate+c.f.Malformed > 0 && json.Valid(data) {
				t.Errorf("answer is not JSON: %s", data)
			}
			tr, err := s.TruthByNonce(t.Context(), n)
			if err != nil {
				t.Fatal(err)
			}
			if tr.FinishReason != c.finish || tr.OutputTokens != c.output || tr.Stream {
				t.Errorf("truth finish %q output %d stream %v, want %q %d", tr.FinishReason, tr.OutputTokens, tr.Stream, c.finish, c.output)
			}
			if c.f.Stall > 0 {
				if tr.Fault != FaultStall || tr.FaultAfterTokens != 0 || time.Since(start) < 20*time.Millisecond {
					t.Errorf("stall: fault %q after %d tokens, answered in %v", tr.Fault, tr.FaultAfterTokens, time.Since(start))
				}
			}
			if c.finish == "stop" || c.finish == "length" {
				if want := max(c.output, 1); len(tr.TokenWritten) != want {
					t.Errorf("%d tokens written", len(tr.TokenWritten))
				}
			}
		})
	}
}

// TestScore: /score (and /v1/score) answers in vLLM's shape, a score per
// query-document pair in the documents' order, the pairs counted as
// rerank's are; text_1 is one query for every document or one each.
func TestScore(t *testing.T) {
	s := startSim(t, FastConfig())
	root := strings.TrimSuffix(s.URL(), "/v1")
	n := nonce()
	query, docs := "["+n+"] which harbour", []string{"the boats return", "nets and crates", "low cloud"}
	var answers [][]byte
	for _, url := range []string{root + "/score", s.URL() + "/score"} {
		resp, err := post(t.Context(), url, map[string]any{"model": "sim", "text_1": query, "text_2": docs})
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json; charset=utf-8" {
			t.Fatalf("%s: status %d type %q: %s", url, resp.StatusCode, resp.Header.Get("Content-Type"), data)
		}
		answers = append(answers, data)
	}
	var a struct {
		ID, Object, Model string
		Created           int64
		Data              []struct {
			Index  int
			Object string
			Score  float64
		}
		Usage map[string]any
	}
	if err := json.Unmarshal(answers[0], &a); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(a.ID, "score-") || a.Object != "list" || a.Model != "sim" || a.Created == 0 || len(a.Data) != 3 {
		t.Fatalf("answer %s", answers[0])
	}
	for i, d := range a.Data {
		if d.Index != i || d.Object != "score" || d.Score <= 0 || d.Score >= 1 {
			t.Errorf("data[%d] = %+v", i, d)
		}
	}
	var second struct {
		ID   string
		Data any
	}
	if err := json.Unmarshal(answers[1], &second); err != nil || second.ID == a.ID || !strings.Contains(string(answers[1]), `"data":[{"index":0,"object":"score","score":`) {
		t.Errorf("/v1/score: %s", answers[1])
	}
	tr, err := s.TruthByNonce(t.Context(), n) // the second request's
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, d := range docs {
		want += CountTokens(query) + CountTokens(d) + rerankPairTokens
	}
	if tr.Endpoint != "score" || tr.Inputs != 3 || tr.PromptTokens != want || tr.ID != second.ID || tr.OutputTokens != 0 {
		t.Errorf("truth %s inputs %d prompt tokens %d id %s output %d; want 3 pairs of %d tokens", tr.Endpoint, tr.Inputs, tr.PromptTokens, tr.ID, tr.OutputTokens, want)
	}
	if a.Usage["prompt_tokens"] != float64(want) || a.Usage["total_tokens"] != float64(want) || a.Usage["completion_tokens"] != 0.0 {
		t.Errorf("usage %v, want %d prompt tokens", a.Usage, want)
	}
	// The same pair scores the same on rerank.
	_, rr, err := wholeAnswer(t, s, "/rerank", map[string]any{"query": query, "documents": docs[:1]})
	var r struct {
		Results []struct {
			RelevanceScore float64 `json:"relevance_score"`
		}
	}
	if err != nil || json.Unmarshal(rr, &r) != nil || len(r.Results) != 1 || r.Results[0].RelevanceScore != a.Data[0].Score {
		t.Errorf("rerank of the first pair: %s, score %v", rr, a.Data[0].Score)
	}

	for _, c := range []struct {
		body  string
		code  int
		pairs int
	}{
		{`{"text_1": ["q"], "text_2": ["a", "b"]}`, 200, 2},
		{`{"text_1": ["q1", "q2"], "text_2": ["a", "b"]}`, 200, 2},
		{`{"text_1": "q", "text_2": "a"}`, 200, 1},
		{`{"text_1": ["q1", "q2"], "text_2": ["a", "b", "c"]}`, 400, 0},
		{`{"text_2": ["a"]}`, 400, 0},
		{`{"text_1": "q", "text_2": []}`, 400, 0},
		{`{"text_1": "q", "text_2": [1]}`, 400, 0},
		{`{"query": "q", "documents": ["a"]}`, 400, 0},
		{`{"model": "other", "text_1": "q", "text_2": ["a"]}`, 404, 0},
	} {
		resp, err := http.Post(root+"/score", "application/json", strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var got struct {
			Data  []any
			Error *struct{ Message string }
		}
		_ = json.Unmarshal(data, &got)
		if resp.StatusCode != c.code || len(got.Data) != c.pairs || (c.code != 200 && (got.Error == nil || got.Error.Message == "")) {
			t.Errorf("%s: status %d: %s; want %d with %d pairs", c.body, resp.StatusCode, data, c.code, c.pairs)
		}
	}
}
