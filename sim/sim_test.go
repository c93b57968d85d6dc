package sim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/runnerbench/runner/internal/rxtime"
)

func TestChatStreamFormat(t *testing.T) {
	s := startSim(t, FastConfig())
	n := nonce()
	res := doStream(t, t.Context(), s, "/chat/completions",
		chatBody("["+n+"] the quick brown fox", 5, map[string]any{"ignore_eos": true}))
	if res.status != 200 || res.err != nil {
		t.Fatalf("status %d err %v body %s", res.status, res.err, res.body)
	}
	// role chunk, 5 token chunks (the last with finish_reason), usage chunk, [DONE]
	if got, want := len(res.lines), 1+5+1+1; got != want {
		t.Fatalf("got %d data lines, want %d:\n%s", got, want, strings.Join(res.lines, "\n"))
	}
	if res.lines[len(res.lines)-1] != "[DONE]" {
		t.Fatalf("last line %q, want [DONE]", res.lines[len(res.lines)-1])
	}
	if len(res.chunks) != len(res.lines)-1 {
		t.Fatalf("%d of %d chunks are valid JSON", len(res.chunks), len(res.lines)-1)
	}
	var id string
	for i, c := range res.chunks {
		if c["object"] != "chat.completion.chunk" || c["model"] != "sim" {
			t.Errorf("chunk %d: object %v model %v", i, c["object"], c["model"])
		}
		if _, ok := c["created"].(float64); !ok {
			t.Errorf("chunk %d: created missing", i)
		}
		cid, _ := c["id"].(string)
		if !strings.HasPrefix(cid, "chatcmpl-") || (id != "" && cid != id) {
			t.Errorf("chunk %d: id %q (first %q)", i, cid, id)
		}
		id = cid
	}
	// Opening chunk: role + empty content, no finish.
	first := res.chunks[0]["choices"].([]any)[0].(map[string]any)
	d := first["delta"].(map[string]any)
	if d["role"] != "assistant" || d["content"] != "" || first["finish_reason"] != nil {
		t.Errorf("opening chunk %s", res.lines[0])
	}
	if _, ok := first["logprobs"]; !ok {
		t.Errorf("opening chunk lacks logprobs: %s", res.lines[0])
	}
	var text strings.Builder
	for i, c := range res.chunks[1:6] {
		content, _, finish, _ := deltaText(c)
		if content == "" {
			t.Errorf("token chunk %d has no content: %s", i, res.lines[i+1])
		}
		text.WriteString(content)
		if (i == 4) != (finish != nil) {
			t.Errorf("token chunk %d finish_reason %v", i, finish)
		}
		if i == 4 && finish != "length" {
			t.Errorf("finish_reason %v, want length (ignore_eos)", finish)
		}
	}
	if CountTokens(text.String()) != 5 {
		t.Errorf("output text %q is not 5 tokens", text.String())
	}
	last := res.chunks[len(res.chunks)-1]
	if ch := last["choices"].([]any); len(ch) != 0 {
		t.Errorf("usage chunk has choices: %v", ch)
	}
	p, c, ok := usageOf(last)
	if !ok || c != 5 || p != CountTokens("["+n+"] the quick brown fox") {
		t.Errorf("usage prompt %d completion %d ok %v", p, c, ok)
	}
	tr, err := s.TruthByNonce(t.Context(), n)
	if err != nil {
		t.Fatal(err)
	}
	if tr.ID != id || tr.OutputTokens != 5 || tr.Chunks != 5 || tr.FinishReason != "length" || tr.Status != 200 {
		t.Errorf("truth %+v", tr)
	}
	if tr.PromptTokensNoNonce != CountTokens(" the quick brown fox") {
		t.Errorf("nonce-free prompt tokens %d, want %d", tr.PromptTokensNoNonce, CountTokens(" the quick brown fox"))
	}
	if len(tr.TokenScheduled) != 5 || len(tr.TokenWritten) != 5 || len(tr.TokenWriteBegan) != 5 {
		t.Fatalf("token times %d/%d", len(tr.TokenScheduled), len(tr.TokenWritten))
	}
	for i := range 5 {
		if tr.TokenWritten[i].Before(tr.TokenScheduled[i]) {
			t.Errorf("token %d written %v before scheduled %v", i, tr.TokenWritten[i], tr.TokenScheduled[i])
		}
		if b := tr.TokenWriteBegan[i]; b.Before(tr.TokenScheduled[i]) || b.After(tr.TokenWritten[i]) {
			t.Errorf("token %d: write began %v, outside [scheduled %v, written %v]", i, b, tr.TokenScheduled[i], tr.TokenWritten[i])
		}
		if i > 0 && tr.TokenScheduled[i].Sub(tr.TokenScheduled[i-1]) < time.Millisecond-50*time.Microsecond {
			t.Errorf("token %d gap %v < itl 1ms", i, tr.TokenScheduled[i].Sub(tr.TokenScheduled[i-1]))
		}
	}
	// TTFT at concurrency 1 is the step's prefill: ttft_ms + prompt × per-token.
	want := 5*time.Millisecond + time.Duration(float64(tr.PromptTokens)*0.001*float64(time.Millisecond))
	if got := tr.FirstToken.Sub(tr.PrefillStart); got < want-100*time.Microsecond || got > want+100*time.Microsecond {
		t.Errorf("prefill step %v, want %v", got, want)
	}
}

func TestCompletionsStream(t *testing.T) {
	s := startSim(t, FastConfig())
	body := map[string]any{"model": "sim", "prompt": "hello there", "max_tokens": 3, "ignore_eos": true,
		"stream": true, "stream_options": map[string]any{"include_usage": true}}
	res := doStream(t, t.Context(), s, "/completions", body)
	if res.status != 200 || len(res.lines) != 3+1+1 || res.lines[4] != "[DONE]" {
		t.Fatalf("status %d lines %q", res.status, res.lines)
	}
	for i, c := range res.chunks[:3] {
		if c["object"] != "text_completion" || !strings.HasPrefix(c["id"].(string), "cmpl-") {
			t.Errorf("chunk %d: %s", i, res.lines[i])
		}
		if txt, _, _, _ := deltaText(c); txt == "" {
			t.Errorf("chunk %d has no text", i)
		}
	}
	if _, c, ok := usageOf(res.chunks[3]); !ok || c != 3 {
		t.Errorf("usage %s", res.lines[3])
	}
}

func TestNonStreaming(t *testing.T) {
	s := startSim(t, FastConfig())
	body := chatBody("hi", 4, map[string]any{"stream": false, "ignore_eos": true})
	resp, err := post(t.Context(), s.URL()+"/chat/completions", body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Object  string
		Choices []struct {
			Message      struct{ Role, Content string }
			FinishReason string `json:"finish_reason"`
		}
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if out.Object != "chat.completion" || len(out.Choices) != 1 || out.Usage.CompletionTokens != 4 ||
		CountTokens(out.Choices[0].Message.Content) != 4 || out.Choices[0].FinishReason != "length" {
		t.Errorf("response %+v", out)
	}
}

func TestUsageMatchesTokenize(t *testing.T) {
	s := startSim(t, FastConfig())
	base := strings.TrimSuffix(s.URL(), "/v1")
	prompts := []string{
		"[abc123def456] the quick brown fox jumps over the lazy dog",
		"internationalisation 1234567, punctuation!!! and\n\nnewlines",
		"héllo wörld 日本語のテキスト",
	}
	for _, p := range prompts {
		resp, err := post(t.Context(), base+"/tokenize", map[string]any{"model": "sim", "prompt": p})
		if err != nil {
			t.Fatal(err)
		}
		var tok struct {
			Count       int   `json:"count"`
			Tokens      []int `json:"tokens"`
			MaxModelLen int   `json:"max_model_len"`
		}
		err = json.NewDecoder(resp.Body).Decode(&tok)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if tok.Count != len(tok.Tokens) || tok.MaxModelLen != 32768 || tok.Count == 0 {
			t.Errorf("tokenize %q: %+v", p, tok)
		}
		for _, path := range []string{"/chat/completions", "/completions"} {
			body := chatBody(p, 2, nil)
			if path == "/completions" {
				body = map[string]any{"prompt": p, "max_tokens": 2, "stream": true,
					"stream_options": map[string]any{"include_usage": true}}
			}
			res := doStream(t, t.Context(), s, path, body)
			pt, _, ok := usageOf(res.chunks[len(res.chunks)-1])
			if !ok || pt != tok.Count {
				t.Errorf("%s %q: usage prompt_tokens %d, /tokenize count %d", path, p, pt, tok.Count)
			}
		}
	}
}

func TestTokenizer(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
	}{
		{"", 0},
		{"the", 1},
		{" the quick", 2},
		{"internationalisation", 3}, // 20 letters: 8+8+4
		{"1234567", 3},              // 123 456 7
		{"[a1b2c3d4e5f6]", 14},
		{"a,b", 3},
		{"a  b", 3},   // the double space is its own token
		{"a\n\nb", 3}, // so is a newline run
		{"日本", 1},     // 6 bytes of letters
		{"日本語のテ", 3},  // 15 bytes: 6+6+3, a rune is never split
	} {
		if got := CountTokens(c.in); got != c.want {
			t.Errorf("CountTokens(%q) = %d, want %d", c.in, got, c.want)
		}
	}
}

func TestIgnoreEOSExactLength(t *testing.T) {
	cfg := FastConfig()
	cfg.ITLMs = 0.2
	cfg.OutputMean = 3 // natural stops would be far shorter
	s := startSim(t, cfg)
	for _, n := range []int{1, 2, 37} {
		res := doStream(t, t.Context(), s, "/chat/completions", chatBody("x", n, map[string]any{"ignore_eos": true}))
		_, c, ok := usageOf(res.chunks[len(res.chunks)-1])
		content := 0
		for _, ch := range res.chunks {
			if txt, _, _, _ := deltaText(ch); txt != "" {
				content++
			}
		}
		if !ok || c != n || content != n {
			t.Errorf("max_tokens %d: usage %d, content chunks %d", n, c, content)
		}
	}
}

func TestNaturalStopSeeded(t *testing.T) {
	run := func(seed int64) []int {
		cfg := FastConfig()
		cfg.Seed = seed
		cfg.ITLMs = 0.1
		cfg.TTFTMs = 0.5
		cfg.OutputMean = 20
		cfg.OutputStdev = 6
		s := startSim(t, cfg)
		var lens []int
		for range 40 {
			res := doStream(t, t.Context(), s, "/completions", map[string]any{"prompt": "x", "max_tokens": 200,
				"stream": true, "stream_options": map[string]any{"include_usage": true}})
			_, c, _ := usageOf(res.chunks[len(res.chunks)-1])
			fin := res.chunks[len(res.chunks)-2]["choices"].([]any)[0].(map[string]any)["finish_reason"]
			if fin != "stop" {
				t.Errorf("natural stop finish_reason %v", fin)
			}
			lens = append(lens, c)
		}
		return lens
	}
	a, b, c := run(7), run(7), run(8)
	if !equalInts(a, b) {
		t.Errorf("same seed, different lengths:\n%v\n%v", a, b)
	}
	if equalInts(a, c) {
		t.Errorf("different seeds, same lengths: %v", a)
	}
	mean, sd := meanStdev(a)
	if mean < 17 || mean > 23 || sd < 3.5 || sd > 9 {
		t.Errorf("lengths mean %.1f sd %.1f, want about 20 and 6: %v", mean, sd, a)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func meanStdev(xs []int) (float64, float64) {
	var sum, sq float64
	for _, x := range xs {
		sum += float64(x)
	}
	mean := sum / float64(len(xs))
	for _, x := range xs {
		sq += (float64(x) - mean) * (float64(x) - mean)
	}
	return mean, sqrt(sq / float64(len(xs)-1))
}

func sqrt(x float64) float64 {
	z := x
	if z == 0 {
		return 0
	}
	for range 50 {
		z = (z + x/z) / 2
	}
	return z
}

func TestContinuousBatchingQueue(t *testing.T) {
	cfg := FastConfig()
	cfg.MaxNumSeqs = 2
	cfg.ITLMs = 4
	s := startSim(t, cfg)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			doStream(t, t.Context(), s, "/chat/completions",
				chatBody("["+nonce()+"] hello", 20, map[string]any{"ignore_eos": true}))
		})
	}
	wg.Wait()
	truth := s.Truth() // in arrival order, which is the engine's FIFO order
	if len(truth) != 4 {
		t.Fatalf("%d truth records", len(truth))
	}
	// The four arrive within a few ms; each runs for about 80 ms, so the
	// first two fill the batch and the last two wait in the queue.
	if truth[0].Queued || truth[1].Queued || !truth[2].Queued || !truth[3].Queued {
		t.Errorf("queued: %v %v %v %v, want the last two", truth[0].Queued, truth[1].Queued, truth[2].Queued, truth[3].Queued)
	}
	// A queued request's prefill starts only once a running one has finished.
	firstEnd := truth[0].TokenScheduled[19]
	if e := truth[1].TokenScheduled[19]; e.Before(firstEnd) {
		firstEnd = e
	}
	for _, tr := range truth[2:] {
		if tr.PrefillStart.Before(firstEnd) {
			t.Errorf("queued request %d prefilled at %v, before the first finish at %v", tr.Index, tr.PrefillStart, firstEnd)
		}
		if tr.QueueWait() <= 0 {
			t.Errorf("queued request %d has queue wait %v", tr.Index, tr.QueueWait())
		}
	}
}

func TestPrefixCache(t *testing.T) {
	s := startSim(t, FastConfig())
	body := strings.Repeat("the quick brown fox jumps over the lazy dog ", 20) // ~180 tokens
	get := func(prompt string) RequestTruth {
		n := nonce()
		res := doStream(t, t.Context(), s, "/chat/completions", chatBody(prompt, 2, nil))
		_ = n
		id := res.chunks[0]["id"].(string)
		tr, err := s.TruthByID(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	a := get(body)
	b := get(body)
	if a.CachedTokens != 0 {
		t.Errorf("first request cached %d tokens", a.CachedTokens)
	}
	wantHit := (b.PromptTokens / 16) * 16
	if wantHit == b.PromptTokens {
		wantHit--
	}
	if b.CachedTokens != wantHit {
		t.Errorf("identical prompt: cached %d of %d, want %d", b.CachedTokens, b.PromptTokens, wantHit)
	}
	before := s.Counters()
	c := get("[" + nonce() + "] " + body)
	d := get("[" + nonce() + "] " + body)
	if c.CachedTokens != 0 || d.CachedTokens != 0 {
		t.Errorf("nonce-led prompts hit the cache: %d, %d", c.CachedTokens, d.CachedTokens)
	}
	after := s.Counters()
	if q := after.PrefixCacheQueries - before.PrefixCacheQueries; q != int64(c.PromptTokens+d.PromptTokens) {
		t.Errorf("cache queries delta %d, want %d", q, c.PromptTokens+d.PromptTokens)
	}
	if h := after.PrefixCacheHits - before.PrefixCacheHits; h != 0 {
		t.Errorf("cache hits delta %d, want 0", h)
	}
	// A cached prompt prefills faster.
	if b.FirstToken.Sub(b.PrefillStart) >= a.FirstToken.Sub(a.PrefillStart) {
		t.Errorf("cached prefill %v not faster than uncached %v", b.FirstToken.Sub(b.PrefillStart), a.FirstToken.Sub(a.PrefillStart))
	}
}

func TestMetricsParse(t *testing.T) {
	cfg := FastConfig()
	cfg.SpecK = 3
	s := startSim(t, cfg)
	doStream(t, t.Context(), s, "/chat/completions", chatBody("hello", 8, map[string]any{"ignore_eos": true}))
	fams := scrape(t, s)
	for _, name := range []string{
		"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:prompt_tokens_total",
		"vllm:generation_tokens_total", "vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total",
		"vllm:time_to_first_token_seconds", "vllm:spec_decode_num_drafts_total",
		"vllm:spec_decode_num_draft_tokens_total", "vllm:spec_decode_num_accepted_tokens_total",
		"vllm:e2e_request_latency_seconds", "vllm:request_queue_time_seconds", "vllm:request_success_total",
	} {
		f, ok := fams[name]
		if !ok {
			t.Errorf("metric %s missing", name)
			continue
		}
		lbls := f.GetMetric()[0].GetLabel()
		found := false
		for _, l := range lbls {
			if l.GetName() == "model_name" && l.GetValue() == "sim" {
				found = true
			}
		}
		if !found {
			t.Errorf("metric %s lacks model_name=\"sim\"", name)
		}
	}
	if v := fams["vllm:generation_tokens_total"].GetMetric()[0].GetCounter().GetValue(); v != 8 {
		t.Errorf("generation tokens %v, want 8", v)
	}
	h := fams["vllm:time_to_first_token_seconds"].GetMetric()[0].GetHistogram()
	if h.GetSampleCount() != 1 || h.GetSampleSum() <= 0.004 {
		t.Errorf("ttft histogram count %d sum %v", h.GetSampleCount(), h.GetSampleSum())
	}
	e2e := fams["vllm:e2e_request_latency_seconds"].GetMetric()[0].GetHistogram()
	if e2e.GetSampleCount() != 1 || e2e.GetSampleSum() < h.GetSampleSum() {
		t.Errorf("e2e histogram count %d sum %v (ttft %v)", e2e.GetSampleCount(), e2e.GetSampleSum(), h.GetSampleSum())
	}
	buckets := e2e.GetBucket()
	if len(buckets) == 0 || buckets[0].GetCumulativeCount() != 1 { // 8 tokens at 1 ms: under 0.3 s
		t.Errorf("e2e first bucket %v", buckets)
	}

	cfg.NoMetrics = true
	s2 := startSim(t, cfg)
	resp, err := http.Get(strings.TrimSuffix(s2.URL(), "/v1") + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("no_metrics: /metrics status %d", resp.StatusCode)
	}
}

func scrape(t testing.TB, s *Server) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(strings.TrimSuffix(s.URL(), "/v1") + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("expfmt: %v\n%s", err, body)
	}
	return fams
}

func TestEndpoints(t *testing.T) {
	s := startSim(t, FastConfig())
	base := strings.TrimSuffix(s.URL(), "/v1")
	resp, err := http.Get(base + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("health: %v %v", err, resp)
	}
	resp.Body.Close()
	resp, err = http.Get(s.URL() + "/models")
	if err != nil {
		t.Fatal(err)
	}
	var models struct {
		Data []struct{ ID string } `json:"data"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&models)
	resp.Body.Close()
	if len(models.Data) != 1 || models.Data[0].ID != "sim" {
		t.Errorf("models %+v", models)
	}
	for _, c := range []struct {
		body any
		code int
	}{
		{map[string]any{"model": "other", "messages": []any{map[string]any{"role": "user", "content": "x"}}}, 404},
		{map[string]any{"messages": []any{}}, 400},
		{map[string]any{"messages": []any{map[string]any{"role": "user", "content": "x"}}, "max_tokens": 0}, 400},
		{map[string]any{"messages": []any{map[string]any{"role": "user", "content": "x"}}, "max_tokens": 40000}, 400},
		{"not an object", 400},
	} {
		resp, err := post(context.Background(), s.URL()+"/chat/completions", c.body)
		if err != nil {
			t.Fatal(err)
		}
		var e struct {
			Error struct {
				Message string
				Type    string
				Code    int
			}
		}
		_ = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != c.code || e.Error.Message == "" || e.Error.Code != c.code {
			t.Errorf("%v: status %d error %+v", c.body, resp.StatusCode, e)
		}
	}
}

// TestExactStreamBytes pins the whole byte stream of a small chat request and
// a completion, against vLLM's format (created varies and is masked).
func TestExactStreamBytes(t *testing.T) {
	s := startSim(t, FastConfig())
	get := func(path string, body any) string {
		resp, err := post(t.Context(), s.URL()+path, body)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return regexp.MustCompile(`"created":\d+`).ReplaceAllString(string(b), `"created":0`)
	}
	chat := get("/chat/completions", chatBody("hi", 2, map[string]any{"ignore_eos": true}))
	id0 := fmt.Sprintf("chatcmpl-%016x", splitmix(1<<32))
	want := `data: {"id":"` + id0 + `","object":"chat.completion.chunk","created":0,"model":"sim","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}

data: {"id":"` + id0 + `","object":"chat.completion.chunk","created":0,"model":"sim","choices":[{"index":0,"delta":{"content":" the"},"logprobs":null,"finish_reason":null}]}

data: {"id":"` + id0 + `","object":"chat.completion.chunk","created":0,"model":"sim","choices":[{"index":0,"delta":{"content":" quick"},"logprobs":null,"finish_reason":"length","stop_reason":null}]}

data: {"id":"` + id0 + `","object":"chat.completion.chunk","created":0,"model":"sim","choices":[],"usage":{"prompt_tokens":1,"total_tokens":3,"completion_tokens":2}}

data: [DONE]

`
	if chat != want {
		t.Errorf("chat stream:\n%s\nwant:\n%s", chat, want)
	}
	cmpl := get("/completions", map[string]any{"prompt": "hi", "max_tokens": 1, "stream": true})
	id1 := fmt.Sprintf("cmpl-%016x", splitmix(1<<32^1))
	want = `data: {"id":"` + id1 + `","object":"text_completion","created":0,"model":"sim","choices":[{"index":0,"text":" quick","logprobs":null,"finish_reason":"length","stop_reason":null}]}

data: [DONE]

`
	if cmpl != want {
		t.Errorf("completion stream:\n%s\nwant:\n%s", cmpl, want)
	}
}

// TestWriteTimesBracketTheKernel: the kernel's receive time of each token
// chunk, read on loopback through internal/rxtime, lies in a write the truth
// records (WriteOf): the token's own, or a later one the reader took in
// with it; inside the write call, or at the kernel's transmit time when TCP
// held the bytes. This is the truth the engine's accuracy test holds kernel
// times to. The second reader comes 60 ms late to a stream of 40 tokens a
// millisecond apart, which makes TCP hold the server's later writes: its
// congestion window waits for acknowledgements the late reader's kernel
// delays.
func TestWriteTimesBracketTheKernel(t *testing.T) {
	for _, c := range []struct {
		name      string
		itl       float64
		tokens    int
		lateStart time.Duration
	}{{"prompt reader", 10, 8, 0}, {"late reader", 1, 40, 60 * time.Millisecond}} {
		t.Run(c.name, func(t *testing.T) {
			cfg := FastConfig()
			cfg.ITLMs = c.itl
			s := startSim(t, cfg)
			got, truth := kernelTimesOf(t, s, cfg.Model, c.tokens, c.lateStart)
			if truth.BodyEnd.Before(truth.BodyEndBegan) || truth.BodyEndBegan.Before(truth.TokenWritten[c.tokens-1]) {
				t.Fatalf("body end written [%v, %v], the last token's write returned at %v", truth.BodyEndBegan, truth.BodyEnd, truth.TokenWritten[c.tokens-1])
			}
			if len(got) != c.tokens || len(truth.TokenWriteBegan) != c.tokens || len(truth.TokenSent) != c.tokens || truth.BodyEndSent.IsZero() {
				t.Fatalf("%d token chunks read; the truth has %d writes, %d transmit times, body end sent %v", len(got), len(truth.TokenWriteBegan), len(truth.TokenSent), truth.BodyEndSent)
			}
			held := 0
			for i, k := range got {
				at := time.Unix(0, k)
				if sent := truth.TokenSent[i]; sent.Before(truth.TokenWriteBegan[i]) {
					t.Errorf("token %d transmitted %v before its write began", i, truth.TokenWriteBegan[i].Sub(sent))
				}
				if truth.TokenSent[i].After(truth.TokenWritten[i]) {
					held++ // transmitted after the write call returned
				}
				if _, last := truth.WriteOf(at); last < i {
					t.Errorf("token %d: kernel time %+d ns from its write's start, in no write of token %d or later (%d)", i, k-truth.TokenWriteBegan[i].UnixNano(), i, last)
				}
			}
			t.Logf("%d of %d tokens' writes held by TCP past their call", held, c.tokens)
		})
	}
}

// kernelTimesOf streams a chat answer of n tokens from s through a client
// whose reads carry kernel times (internal/rxtime), its reading delayed by
// late, and returns the kernel time of each token chunk and the truth.
func kernelTimesOf(t *testing.T, s *Server, model string, n int, late time.Duration) ([]int64, RequestTruth) {
	t.Helper()
	var conn net.Conn
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			c = rxtime.Wrap(c)
			conn = c
		}
		return c, err
	}}
	defer tr.CloseIdleConnections()
	nonce := fmt.Sprintf("%012x", n)
	b, _ := json.Marshal(map[string]any{"model": model, "stream": true, "max_tokens": n, "ignore_eos": true,
		"messages": []map[string]string{{"role": "user", "content": "[" + nonce + "] hello"}}})
	resp, err := (&http.Client{Transport: tr}).Post(s.URL()+"/chat/completions", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	st := rxtime.From(conn)
	if st == nil {
		if runtime.GOOS == "linux" {
			t.Fatal("no kernel receive timestamps on Linux")
		}
		t.Skip("kernel receive timestamps are read on Linux only")
	}
	time.Sleep(late)
	var got []int64
	br := bufio.NewReaderSize(resp.Body, 256) // small reads: a late reader still reads in pieces
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			break
		}
		if strings.Contains(line, `"content":" `) {
			_, k := st.Latest()
			got = append(got, k)
		}
	}
	// The body's end and the transmit times are reported after the writes
	// return, maybe after the client saw them: the truth waits for them.
	truth, err := s.TruthByNonce(t.Context(), nonce)
	if err != nil {
		t.Fatal(err)
	}
	return got, truth
}

// TestKeptAliveConnectionNeverStalls: one kept-alive connection carries
// 300 streamed responses (about 3,000 writes, each with a transmit
// timestamp the kernel queues on the connection's error queue) with no
// truth asked for: every request is answered. Reports left unread fill the
// socket's receive buffer, and the 73rd or so request's body then waited
// for a window that never opened.
func TestKeptAliveConnectionNeverStalls(t *testing.T) {
	s := startSim(t, FastConfig())
	tr := &http.Transport{MaxConnsPerHost: 1}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	for i := range 300 {
		b, _ := json.Marshal(chatBody("["+nonce()+"] "+strings.Repeat("word ", 400), 8, map[string]any{"ignore_eos": true}))
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/chat/completions", bytes.NewReader(b))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: status %d, %v", i, resp.StatusCode, err)
		}
	}
}
