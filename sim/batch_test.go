package sim

import (
	"encoding/json"
	"io"
	"net/http"
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
			if c.f.Truncate == 0 && !json.Valid(data) {
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
