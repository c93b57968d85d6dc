package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptrace"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestSpecDecoding(t *testing.T) {
	cfg := FastConfig()
	cfg.SpecK = 4
	cfg.SpecAcceptance = 0.6
	s := startSim(t, cfg)
	const n = 60
	totalChunks, totalTokens := 0, 0
	var nonces []string
	for range 5 {
		nc := nonce()
		nonces = append(nonces, nc)
		res := doStream(t, t.Context(), s, "/chat/completions", chatBody("["+nc+"] hi", n, map[string]any{"ignore_eos": true}))
		_, c, _ := usageOf(res.chunks[len(res.chunks)-1])
		toks := 0
		for _, ch := range res.chunks {
			if txt, _, _, _ := deltaText(ch); txt != "" {
				toks += CountTokens(txt)
				totalChunks++
			}
		}
		if c != n || toks != n {
			t.Errorf("usage %d, tokens in text %d, want %d", c, toks, n)
		}
		totalTokens += toks
	}
	if totalChunks >= totalTokens {
		t.Errorf("%d chunks for %d tokens: speculative decoding should group tokens", totalChunks, totalTokens)
	}
	c := s.Counters()
	// Every decode step is a draft of k; the first token comes from prefill.
	if c.GenerationTokens != int64(totalTokens) {
		t.Errorf("generation tokens %d, want %d", c.GenerationTokens, totalTokens)
	}
	if c.SpecDraftTokens != 4*c.SpecDrafts {
		t.Errorf("draft tokens %d != 4 × drafts %d", c.SpecDraftTokens, c.SpecDrafts)
	}
	if c.GenerationTokens != 5+c.SpecDrafts+c.SpecAccepted {
		t.Errorf("generated %d != prefill tokens 5 + drafts %d + accepted %d", c.GenerationTokens, c.SpecDrafts, c.SpecAccepted)
	}
	if c.SpecDrafts != int64(totalChunks-5) {
		t.Errorf("drafts %d, want one per decode chunk (%d)", c.SpecDrafts, totalChunks-5)
	}
	rate := float64(c.SpecAccepted) / float64(c.SpecDraftTokens)
	// Sequential acceptance with p=0.6, k=4: E[accepted]/k = (p+p²+p³+p⁴)/4 ≈ 0.33
	// (less where the output limit caps the last step).
	if rate < 0.2 || rate > 0.45 {
		t.Errorf("acceptance rate %.3f, want about 0.33", rate)
	}
	var acc int
	for _, nc := range nonces {
		tr, _ := s.TruthByNonce(t.Context(), nc)
		acc += tr.SpecAccepted
		if tr.OutputTokens != 1+tr.SpecDrafts+tr.SpecAccepted {
			t.Errorf("truth: %d tokens != 1 + %d drafts + %d accepted", tr.OutputTokens, tr.SpecDrafts, tr.SpecAccepted)
		}
	}
	if int64(acc) != c.SpecAccepted {
		t.Errorf("truth accepted %d, counter %d", acc, c.SpecAccepted)
	}
}

func TestReasoningTokens(t *testing.T) {
	for _, field := range []string{"reasoning_content", "reasoning"} {
		cfg := FastConfig()
		cfg.ReasoningTokens = 3
		cfg.ReasoningField = field
		s := startSim(t, cfg)
		res := doStream(t, t.Context(), s, "/chat/completions", chatBody("hi", 8, map[string]any{"ignore_eos": true}))
		var kinds []string
		for _, line := range res.lines[1 : len(res.lines)-2] {
			switch {
			case strings.Contains(line, `"`+field+`":`):
				kinds = append(kinds, "r")
			case strings.Contains(line, `"content":`):
				kinds = append(kinds, "c")
			}
		}
		if got := strings.Join(kinds, ""); got != "rrrccccc" {
			t.Errorf("%s: chunk kinds %q, want rrrccccc", field, got)
		}
		if _, c, _ := usageOf(res.chunks[len(res.chunks)-1]); c != 8 {
			t.Errorf("%s: completion tokens %d, want 8 (reasoning included)", field, c)
		}
	}
}

func TestStreamVariants(t *testing.T) {
	cfg := FastConfig()
	cfg.RoleInEveryChunk = true
	cfg.UsageInFinishChunk = true
	cfg.TokensPerChunk = 3
	s := startSim(t, cfg)
	res := doStream(t, t.Context(), s, "/chat/completions", chatBody("hi", 10, map[string]any{"ignore_eos": true}))
	// role chunk + ceil(10/3) token chunks, usage in the last, [DONE]
	if len(res.lines) != 1+4+1 || !hasDone(res) {
		t.Fatalf("lines %q", res.lines)
	}
	sizes := []int{}
	for _, c := range res.chunks[1:] {
		txt, _, _, _ := deltaText(c)
		sizes = append(sizes, CountTokens(txt))
		d := c["choices"].([]any)[0].(map[string]any)["delta"].(map[string]any)
		if d["role"] != "assistant" {
			t.Errorf("chunk without role: %v", c)
		}
	}
	if len(sizes) != 4 || sizes[0] != 3 || sizes[1] != 3 || sizes[2] != 3 || sizes[3] != 1 {
		t.Errorf("tokens per chunk %v, want [3 3 3 1]", sizes)
	}
	last := res.chunks[len(res.chunks)-1]
	if _, c, ok := usageOf(last); !ok || c != 10 || !hasFinish(res) {
		t.Errorf("finish chunk %v", last)
	}
}

// TestDecodeSlowsWithBatch checks the decode step model on the ground truth:
// with three sequences decoding, a step takes itl_ms + 2 × itl_ms_per_seq.
func TestDecodeSlowsWithBatch(t *testing.T) {
	cfg := FastConfig()
	cfg.ITLMs = 2
	cfg.ITLMsPerSeq = 3
	s := startSim(t, cfg)
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			doStream(t, t.Context(), s, "/chat/completions", chatBody("go", 12, map[string]any{"ignore_eos": true}))
		})
	}
	wg.Wait()
	truth := s.Truth()
	if len(truth) != 3 {
		t.Fatalf("%d records", len(truth))
	}
	// Once all three are admitted, a step with no prefill takes 2 + 2×3 = 8 ms.
	lastAdmit := truth[0].FirstToken
	for _, tr := range truth {
		if tr.FirstToken.After(lastAdmit) {
			lastAdmit = tr.FirstToken
		}
	}
	want := 8 * time.Millisecond
	var gaps []time.Duration
	tr := truth[0]
	for i := 1; i < len(tr.TokenScheduled); i++ {
		if !tr.TokenScheduled[i-1].Before(lastAdmit) && tr.TokenScheduled[i].Before(truth[1].TokenScheduled[11]) &&
			tr.TokenScheduled[i].Before(truth[2].TokenScheduled[11]) && tr.TokenScheduled[i].Before(tr.TokenScheduled[11]) {
			gaps = append(gaps, tr.TokenScheduled[i].Sub(tr.TokenScheduled[i-1]))
		}
	}
	if len(gaps) < 3 {
		t.Fatalf("only %d full-batch gaps", len(gaps))
	}
	slices.Sort(gaps)
	// Scheduled times follow the model exactly unless the engine fell behind
	// wall time (a loaded machine), which only ever lengthens a step; so no
	// gap is shorter than the model's, and on time the gap is exactly it.
	if gaps[0] < want-10*time.Microsecond || gaps[0] > want+time.Millisecond {
		t.Errorf("full-batch decode gaps %v, want %v", gaps, want)
	}
}

func TestSpecDeterministic(t *testing.T) {
	run := func() []int {
		cfg := FastConfig()
		cfg.SpecK = 3
		cfg.ITLMs = 0.2
		s := startSim(t, cfg)
		var acc []int
		for range 6 {
			doStream(t, t.Context(), s, "/completions", map[string]any{"prompt": "x", "max_tokens": 5, "ignore_eos": true, "stream": true})
		}
		for _, tr := range s.Truth() {
			acc = append(acc, tr.SpecAccepted)
		}
		return acc
	}
	a, b := run(), run()
	if !equalInts(a, b) || len(a) != 6 {
		t.Errorf("accepted tokens per request differ between runs with one seed: %v vs %v", a, b)
	}
}

// TestTruthDuringStall checks that Truth does not wait for a stalled stream.
func TestTruthDuringStall(t *testing.T) {
	cfg := FastConfig()
	cfg.Faults.Stall = 1
	cfg.Faults.AfterTokens = 1
	s := startSim(t, cfg)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	resp, err := post(ctx, s.URL()+"/completions", map[string]any{"prompt": "x", "max_tokens": 3, "ignore_eos": true, "stream": true})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 256)
	if _, err := resp.Body.Read(buf); err != nil { // at least the first token arrived
		t.Fatal(err)
	}
	done := make(chan []RequestTruth)
	go func() { done <- s.Truth() }()
	select {
	case tr := <-done:
		if len(tr) != 0 {
			t.Errorf("in-flight stalled request listed: %+v", tr)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Truth blocked on a stalled stream")
	}
}

// TestPrefillSharedByStep checks that requests arriving during a step are
// admitted together by the next one, which pays their prefill once (fixed
// cost + all their prompt tokens) plus the decode of the running sequence.
func TestPrefillSharedByStep(t *testing.T) {
	cfg := FastConfig()
	cfg.TTFTMs = 150 // a wide window for the two arrivals to land in one step
	cfg.PrefillMsPerToken = 0.5
	cfg.ITLMs = 3
	s := startSim(t, cfg)
	var wg sync.WaitGroup
	wg.Go(func() {
		doStream(t, t.Context(), s, "/completions", map[string]any{"prompt": "a", "max_tokens": 5, "ignore_eos": true, "stream": true})
	})
	for s.Counters().Running == 0 {
		time.Sleep(100 * time.Microsecond)
	}
	for _, p := range []string{"one two three", "four five six seven"} {
		wg.Go(func() {
			doStream(t, t.Context(), s, "/completions", map[string]any{"prompt": p, "max_tokens": 2, "ignore_eos": true, "stream": true})
		})
	}
	wg.Wait()
	tr := s.Truth()
	if len(tr) != 3 {
		t.Fatalf("%d records", len(tr))
	}
	if !tr[1].PrefillStart.Equal(tr[2].PrefillStart) || !tr[1].FirstToken.Equal(tr[2].FirstToken) {
		t.Fatalf("not admitted together: prefill %v / %v", tr[1].PrefillStart.Sub(tr[2].PrefillStart), tr[1].FirstToken.Sub(tr[2].FirstToken))
	}
	want := time.Duration((150 + 0.5*float64(tr[1].PromptTokens+tr[2].PromptTokens) + 3) * float64(time.Millisecond))
	if got := tr[1].FirstToken.Sub(tr[1].PrefillStart); got != want {
		t.Errorf("shared step took %v, want %v", got, want)
	}
	// The running sequence's token in that step came at the same instant.
	found := false
	for _, at := range tr[0].TokenScheduled {
		if at.Equal(tr[1].FirstToken) {
			found = true
		}
	}
	if !found {
		t.Error("the decoding sequence got no token at the end of the shared step")
	}
}

// TestCloseAfterStream: a connection that carried a stream counts as closed
// (llama-server's habit): the next request on it, stream or not, is dropped
// unanswered and unrecorded, while connections that carried only other
// requests stay kept alive.
func TestCloseAfterStream(t *testing.T) {
	cfg := FastConfig()
	cfg.CloseAfterStream = true
	s := startSim(t, cfg)
	tr := &http.Transport{MaxIdleConnsPerHost: 1}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	do := func(method, path string, body any) (reused bool, status int, err error) {
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		trace := &httptrace.ClientTrace{GotConn: func(c httptrace.GotConnInfo) { reused = c.Reused }}
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(t.Context(), trace), method, s.URL()+path, rd)
		resp, err := client.Do(req)
		if err != nil {
			return reused, 0, err
		}
		defer resp.Body.Close()
		_, err = io.Copy(io.Discard, resp.Body)
		return reused, resp.StatusCode, err
	}
	// Non-streamed requests keep the connection.
	for i := range 3 {
		reused, status, err := do(http.MethodGet, "/models", nil)
		if err != nil || status != 200 || reused != (i > 0) {
			t.Fatalf("GET /models #%d: reused %v, status %d, %v", i, reused, status, err)
		}
	}
	stream := chatBody("["+nonce()+"] hi", 4, map[string]any{"ignore_eos": true})
	if reused, status, err := do(http.MethodPost, "/chat/completions", stream); err != nil || status != 200 || !reused {
		t.Fatalf("stream: reused %v, status %d, %v", reused, status, err)
	}
	// The next POST goes out on that connection and gets nothing back (Go
	// does not re-send a POST by itself).
	reused, _, err := do(http.MethodPost, "/chat/completions", chatBody("["+nonce()+"] again", 4, nil))
	if err == nil || !reused {
		t.Fatalf("request after the stream: reused %v, err %v; want a failure on the reused connection", reused, err)
	}
	// A new connection serves the next one.
	reused, status, err := do(http.MethodPost, "/chat/completions", chatBody("["+nonce()+"] fresh", 4, nil))
	if err != nil || status != 200 || reused {
		t.Fatalf("on a new connection: reused %v, status %d, %v", reused, status, err)
	}
	if c := s.Counters(); c.Dropped != 1 {
		t.Errorf("dropped %d requests, want 1", c.Dropped)
	}
	if n := len(s.Truth()); n != 2 {
		t.Errorf("truth holds %d requests, want the 2 served streams", n)
	}
}

// TestLlamaTimings: llama.cpp's timings object rides on the last chunk (the
// usage chunk, or the finish chunk without a usage chunk) and agrees with the
// engine's schedule.
func TestLlamaTimings(t *testing.T) {
	cfg := FastConfig()
	cfg.LlamaTimings = true
	cfg.SpecK = 2
	s := startSim(t, cfg)
	timingsOf := func(c map[string]any) map[string]float64 {
		raw, ok := c["timings"].(map[string]any)
		if !ok {
			return nil
		}
		out := map[string]float64{}
		for k, v := range raw {
			out[k] = v.(float64)
		}
		return out
	}
	for _, usage := range []bool{true, false} {
		nc := nonce()
		body := chatBody("["+nc+"] how are the boats today", 12, map[string]any{"ignore_eos": true})
		if !usage {
			delete(body, "stream_options")
		}
		res := doStream(t, t.Context(), s, "/chat/completions", body)
		last := res.chunks[len(res.chunks)-1]
		for _, c := range res.chunks[:len(res.chunks)-1] {
			if timingsOf(c) != nil {
				t.Errorf("usage %v: timings before the last chunk: %v", usage, c)
			}
		}
		tm := timingsOf(last)
		if _, _, hasUsage := usageOf(last); tm == nil || hasUsage != usage {
			t.Fatalf("usage %v: last chunk %v", usage, last)
		}
		tr, err := s.TruthByNonce(t.Context(), nc)
		if err != nil {
			t.Fatal(err)
		}
		promptMs := float64(tr.FirstToken.Sub(tr.PrefillStart)) / float64(time.Millisecond)
		predictedMs := float64(tr.TokenScheduled[len(tr.TokenScheduled)-1].Sub(tr.FirstToken)) / float64(time.Millisecond)
		want := map[string]float64{
			"prompt_n": float64(tr.PromptTokens - tr.CachedTokens), "cache_n": float64(tr.CachedTokens),
			"predicted_n": 12, "draft_n": float64(tr.SpecDraftTokens), "draft_n_accepted": float64(tr.SpecAccepted),
		}
		for k, v := range want {
			if tm[k] != v {
				t.Errorf("usage %v: timings.%s = %v, want %v", usage, k, tm[k], v)
			}
		}
		if math.Abs(tm["prompt_ms"]-promptMs) > 0.001 || math.Abs(tm["predicted_ms"]-predictedMs) > 0.001 || promptMs < cfg.TTFTMs {
			t.Errorf("usage %v: prompt_ms %v predicted_ms %v, truth %.3f and %.3f", usage, tm["prompt_ms"], tm["predicted_ms"], promptMs, predictedMs)
		}
	}
}
