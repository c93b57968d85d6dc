package sim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// startSim starts a simulator for one test and closes it at the end.
func startSim(t testing.TB, cfg Config) *Server {
	t.Helper()
	s, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// sseResult is a parsed response: status, every data line, the decoded chunks.
type sseResult struct {
	status      int
	contentType string
	lines       []string // data payloads, in order, including [DONE]
	chunks      []map[string]any
	body        []byte
	err         error // read error (a cut connection)
	times       []time.Time
}

func post(ctx context.Context, url string, body any) (*http.Response, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return http.DefaultClient.Do(req)
}

// doStream posts body to path (relative to the /v1 base) and reads the whole SSE response.
func doStream(t testing.TB, ctx context.Context, s *Server, path string, body any) sseResult {
	t.Helper()
	resp, err := post(ctx, s.URL()+path, body)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	res := sseResult{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type")}
	if !strings.HasPrefix(res.contentType, "text/event-stream") {
		res.body, res.err = io.ReadAll(resp.Body)
		return res
	}
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			if err != io.EOF {
				res.err = err
			}
			return res
		}
		line = strings.TrimRight(line, "\n")
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("line without data prefix: %q", line)
		}
		res.lines = append(res.lines, data)
		res.times = append(res.times, time.Now())
		if data == "[DONE]" {
			continue
		}
		var m map[string]any
		if json.Unmarshal([]byte(data), &m) == nil {
			res.chunks = append(res.chunks, m)
		}
	}
}

func chatBody(content string, maxTokens int, extra map[string]any) map[string]any {
	b := map[string]any{
		"model":          "sim",
		"messages":       []map[string]any{{"role": "user", "content": content}},
		"max_tokens":     maxTokens,
		"stream":         true,
		"stream_options": map[string]any{"include_usage": true},
	}
	for k, v := range extra {
		b[k] = v
	}
	return b
}

// deltaText returns the content (or text) and reasoning of a chunk's first choice.
func deltaText(c map[string]any) (content, reasoning string, finish any, ok bool) {
	choices, _ := c["choices"].([]any)
	if len(choices) == 0 {
		return "", "", nil, false
	}
	ch := choices[0].(map[string]any)
	finish = ch["finish_reason"]
	if txt, ok := ch["text"].(string); ok {
		return txt, "", finish, true
	}
	d, _ := ch["delta"].(map[string]any)
	content, _ = d["content"].(string)
	reasoning, _ = d["reasoning_content"].(string)
	if r, ok := d["reasoning"].(string); ok {
		reasoning = r
	}
	return content, reasoning, finish, true
}

func usageOf(c map[string]any) (prompt, completion int, ok bool) {
	u, ok := c["usage"].(map[string]any)
	if !ok {
		return 0, 0, false
	}
	return int(u["prompt_tokens"].(float64)), int(u["completion_tokens"].(float64)), true
}

var nonceSeq atomic.Uint64

// nonce returns a fresh 12-hex-digit nonce, like the runner's.
func nonce() string {
	return fmt.Sprintf("%012x", splitmix(nonceSeq.Add(1))>>16)
}
