package sim

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzTokenize checks the tokenizer's invariants on any input: tokens are
// non-empty, contiguous, cover the whole string, never split a rune, and the
// count is stable under concatenation at a token boundary made by punctuation.
func FuzzTokenize(f *testing.F) {
	for _, s := range []string{"", "the quick", "[a1b2c3d4e5f6] hello, world!", "  \n\t x", "日本語のテキスト", "\xff\xfeabc", "1234567890"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		next := 0
		n := 0
		tokenize(s, func(a, b int) {
			if a != next || b <= a || b > len(s) {
				t.Fatalf("token [%d,%d) after %d in %q", a, b, next, s)
			}
			if utf8.ValidString(s) && (!utf8.RuneStart(s[a]) || (b < len(s) && !utf8.RuneStart(s[b]))) {
				t.Fatalf("token [%d,%d) splits a rune in %q", a, b, s)
			}
			next = b
			n++
		})
		if next != len(s) {
			t.Fatalf("tokens cover %d of %d bytes of %q", next, len(s), s)
		}
		if got := CountTokens(s + "," + s); got != 2*n+1 {
			t.Fatalf("CountTokens(s+\",\"+s) = %d, want %d for %q", got, 2*n+1, s)
		}
	})
}

func TestBadRequests(t *testing.T) {
	s := startSim(t, FastConfig())
	base := strings.TrimSuffix(s.URL(), "/v1")
	for _, c := range []struct {
		path, body string
		code       int
	}{
		{"/v1/chat/completions", `{`, 400},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":42}]}`, 400},
		{"/v1/chat/completions", `{"messages":"hi"}`, 400},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"n":2}`, 400},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"max_tokens":-5}`, 400},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"stream":"yes"}`, 400},
		{"/v1/completions", `{}`, 400},
		{"/v1/completions", `{"prompt":7}`, 400},
		{"/v1/completions", `{"prompt":["a","b"]}`, 400},
		{"/v1/completions", `{"prompt":[1,2,3],"max_tokens":1}`, 200},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"max_tokens":1}`, 200},
		{"/tokenize", `{"prompt":5}`, 400},
		{"/v1/nope", `{}`, 404},
	} {
		resp, err := http.Post(base+c.path, "application/json", strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		var e struct {
			Error *struct{ Message string } `json:"error"`
		}
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(resp.Body)
		resp.Body.Close()
		_ = json.Unmarshal(buf.Bytes(), &e)
		if resp.StatusCode != c.code || (c.code != 200 && (e.Error == nil || e.Error.Message == "")) {
			t.Errorf("%s %s: status %d body %s, want %d", c.path, c.body, resp.StatusCode, buf.String(), c.code)
		}
	}
}

func TestTruthEndpoint(t *testing.T) {
	s := startSim(t, FastConfig())
	n := nonce()
	doStream(t, t.Context(), s, "/chat/completions", chatBody("["+n+"] hi", 3, map[string]any{"ignore_eos": true}))
	doStream(t, t.Context(), s, "/chat/completions", chatBody("["+nonce()+"] hi", 2, nil))
	resp, err := http.Get(strings.TrimSuffix(s.URL(), "/v1") + "/sim/truth?nonce=" + n)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ts []RequestTruth
	if err := json.NewDecoder(resp.Body).Decode(&ts); err != nil {
		t.Fatal(err)
	}
	if len(ts) != 1 || ts[0].Nonce != n || ts[0].OutputTokens != 3 || len(ts[0].TokenWritten) != 3 {
		t.Errorf("truth over HTTP: %+v", ts)
	}
}

// TestHandlerWithHTTPTest serves New's handler with httptest instead of Start.
func TestHandlerWithHTTPTest(t *testing.T) {
	s, err := New(FastConfig())
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	defer s.Close()
	if s.URL() != "" {
		t.Errorf("URL of an unstarted server: %q", s.URL())
	}
	resp, err := http.Post(ts.URL+"/v1/completions", "application/json",
		strings.NewReader(`{"prompt":"[feedfacecafe] hi","max_tokens":4,"ignore_eos":true}`))
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		}
	}
	_ = json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	tr, err := s.TruthByNonce(t.Context(), "feedfacecafe")
	if err != nil || out.Usage.CompletionTokens != 4 || tr.OutputTokens != 4 || tr.Stream {
		t.Errorf("usage %+v truth %+v err %v", out, tr, err)
	}
	if _, err := New(Config{MaxNumSeqs: -3}); err == nil {
		t.Error("New accepted max_num_seqs -3")
	}
}

func TestTruthLimit(t *testing.T) {
	cfg := FastConfig()
	cfg.TruthLimit = 5
	cfg.ITLMs = 0.1
	s := startSim(t, cfg)
	var nonces []string
	for range 30 {
		n := nonce()
		nonces = append(nonces, n)
		doStream(t, t.Context(), s, "/completions", map[string]any{"prompt": "[" + n + "] x", "max_tokens": 1, "stream": true})
	}
	got := s.Truth()
	if len(got) < 5 || len(got) > 5+1+16 {
		t.Errorf("%d records kept with truth_limit 5", len(got))
	}
	if got[len(got)-1].Nonce != nonces[29] {
		t.Errorf("newest record %q, want %q", got[len(got)-1].Nonce, nonces[29])
	}
	if _, err := s.TruthByNonce(t.Context(), nonces[0]); err == nil {
		t.Error("oldest record still found")
	}
}

func TestPromptTokensDetails(t *testing.T) {
	cfg := FastConfig()
	cfg.PromptTokensDetails = true
	s := startSim(t, cfg)
	prompt := strings.Repeat("the quick brown fox jumps ", 10)
	var cached []float64
	for range 2 {
		res := doStream(t, t.Context(), s, "/chat/completions", chatBody(prompt, 1, nil))
		u, _ := res.chunks[len(res.chunks)-1]["usage"].(map[string]any)
		d, _ := u["prompt_tokens_details"].(map[string]any)
		c, ok := d["cached_tokens"].(float64)
		if !ok {
			t.Fatalf("no cached_tokens in usage %v", u)
		}
		cached = append(cached, c)
	}
	if cached[0] != 0 || cached[1] < 16 {
		t.Errorf("cached_tokens %v, want 0 then at least one block", cached)
	}
}
