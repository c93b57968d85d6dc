package runner

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/runnerbench/runner/scenario"
	"github.com/runnerbench/runner/sim"
)

// exchange is one chat request the recorder saw and the stream it answered.
type exchange struct {
	messages []scenario.Message
	reply    string // the assistant text the server streamed
}

// recorder serves the simulator's handler over loopback and keeps every
// chat request's messages and the text of its streamed answer.
type recorder struct {
	*httptest.Server
	mu  sync.Mutex
	got []exchange
}

type teeWriter struct {
	http.ResponseWriter
	buf bytes.Buffer
}

func (w *teeWriter) Write(p []byte) (int, error) {
	w.buf.Write(p)
	return w.ResponseWriter.Write(p)
}

func (w *teeWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func startRecorder(t *testing.T, s *sim.Server) *recorder {
	t.Helper()
	rc := &recorder{}
	h := s.Handler()
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			h.ServeHTTP(w, r)
			return
		}
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		var req struct {
			Messages []scenario.Message `json:"messages"`
		}
		_ = json.Unmarshal(b, &req)
		tw := &teeWriter{ResponseWriter: w}
		h.ServeHTTP(tw, r)
		// Decode the stream independently of the engine's replyText.
		var reply strings.Builder
		for _, line := range strings.Split(tw.buf.String(), "\n") {
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok || data == "[DONE]" {
				continue
			}
			var c map[string]any
			if json.Unmarshal([]byte(data), &c) != nil {
				continue
			}
			choices, _ := c["choices"].([]any)
			for _, ch := range choices {
				delta, _ := ch.(map[string]any)["delta"].(map[string]any)
				s, _ := delta["content"].(string)
				reply.WriteString(s)
			}
		}
		rc.mu.Lock()
		rc.got = append(rc.got, exchange{messages: req.Messages, reply: reply.String()})
		rc.mu.Unlock()
	}))
	t.Cleanup(rc.Close)
	return rc
}

// TestMultiTurn: each turn resends the history (earlier user turns and the
// replies the server actually streamed), per-turn points follow the level's
// overall point, and the history's growth shows in the server's counts.
func TestMultiTurn(t *testing.T) {
	s := startSim(t, fastSim())
	rc := startRecorder(t, s)
	prompts := []string{"first question", "second question", "third question", "fourth question", "fifth question", "sixth question"}
	plan := &scenario.Plan{Prompts: map[string]*scenario.PromptSet{"p": {Turns: 3}}}
	for i, p := range prompts {
		plan.Prompts["p"].Loaded = append(plan.Prompts["p"].Loaded, scenario.Prompt{Text: p, Line: i + 1})
	}
	e, col := newEngine(t, rc.URL+"/v1", nil)
	st := stage(6, 2)
	st.Requests.Each = 2 // conversations
	res := runStage(t, e, plan, st)
	if len(res.Points) != 4 {
		t.Fatalf("%d points, want the level and 3 turns", len(res.Points))
	}
	if p := res.Points[0]; p.Turn != 0 || p.NRequests != 6 || p.Completed != 6 || p.ITLP50Ms == nil {
		t.Fatalf("level point: turn %d, %d requests, %d completed (%v)", p.Turn, p.NRequests, p.Completed, p.Error)
	}
	for i, p := range res.Points[1:] {
		if p.Turn != i+1 || p.NRequests != 2 || p.Completed != 2 || p.Concurrency != 2 {
			t.Fatalf("turn point %d: turn %d, %d requests, %d completed", i, p.Turn, p.NRequests, p.Completed)
		}
		if i > 0 && *p.MeanInputTokens <= *res.Points[i].MeanInputTokens {
			t.Errorf("turn %d mean input %.1f not above turn %d's %.1f", p.Turn, *p.MeanInputTokens, i, *res.Points[i].MeanInputTokens)
		}
	}
	// The history is cached on purpose: no "nonce did not defeat caching".
	for _, w := range append(res.Warnings, res.Points[0].Warnings...) {
		if strings.Contains(w, "prefix cache") || strings.Contains(w, "single turns") {
			t.Errorf("warning: %s", w)
		}
	}

	recs := col.measured()
	if len(recs) != 6 {
		t.Fatalf("%d records", len(recs))
	}
	byNonce := map[string][]exchange{}
	rc.mu.Lock()
	for _, x := range rc.got {
		if len(x.messages) > 0 && strings.Contains(x.messages[0].Content, "question") {
			nonce := x.messages[0].Content[1:13]
			byNonce[nonce] = append(byNonce[nonce], x)
		}
	}
	rc.mu.Unlock()
	for conv := range 2 {
		turns := recs[conv*3 : conv*3+3]
		nonce := turns[0].Nonce
		xs := byNonce[nonce]
		if len(xs) != 3 {
			t.Fatalf("conversation %d: the server saw %d requests", conv, len(xs))
		}
		for ti, r := range turns {
			if r.Turn != ti+1 || r.Nonce != nonce || r.Seq != conv*3+ti {
				t.Fatalf("record turn %d nonce %s seq %d", r.Turn, r.Nonce, r.Seq)
			}
			x := xs[ti]
			if len(x.messages) != 2*ti+1 {
				t.Fatalf("conversation %d turn %d: %d messages", conv, ti+1, len(x.messages))
			}
			for k := 0; k <= ti; k++ {
				want := prompts[(conv*3+k)%len(prompts)]
				if k == 0 {
					want = "[" + nonce + "] " + want
				}
				if m := x.messages[2*k]; m.Role != "user" || m.Content != want {
					t.Fatalf("conversation %d turn %d message %d: %+v, want user %q", conv, ti+1, 2*k, m, want)
				}
				if k < ti {
					m := x.messages[2*k+1]
					if m.Role != "assistant" || m.Content == "" || m.Content != xs[k].reply {
						t.Fatalf("conversation %d turn %d: assistant %q, the server streamed %q", conv, ti+1, m.Content, xs[k].reply)
					}
				}
			}
			if tr := truth(t, s, nonce); ti == 2 && tr.PromptTokens <= 3*6 {
				t.Errorf("last turn's prompt has %d tokens: history missing", tr.PromptTokens)
			}
		}
	}
}

// TestMultiTurnOpenLoopSynthetic: conversations also start on an open-loop
// schedule, with synthetic prompts.
func TestMultiTurnOpenLoopSynthetic(t *testing.T) {
	s := startSim(t, fastSim())
	e, col := newEngine(t, s.URL(), nil)
	plan := synthPlan(200, "reference")
	plan.Prompts["p"].Turns = 2
	st := rateStage(5, "constant", 100)
	st.Requests.Each = 4
	res := runStage(t, e, plan, st)
	if len(res.Points) != 3 || res.Points[0].NRequests != 8 || res.Points[2].Turn != 2 || res.Points[2].Completed != 4 {
		t.Fatalf("points %d, level %d requests", len(res.Points), res.Points[0].NRequests)
	}
	// Second turns find their history cached, as intended: no warning.
	if hr := res.Points[0].PrefixCacheHitRate; hr == nil || *hr < 0.3 {
		t.Errorf("prefix cache hit rate %v", deref(hr))
	}
	for _, w := range res.Points[0].Warnings {
		if strings.Contains(w, "nonce") {
			t.Errorf("warning: %s", w)
		}
	}
	if *res.Points[2].MeanInputTokens <= *res.Points[1].MeanInputTokens+5 {
		t.Errorf("turn 2 input %.1f, turn 1 %.1f", *res.Points[2].MeanInputTokens, *res.Points[1].MeanInputTokens)
	}
	for _, r := range col.measured() {
		if r.Turn == 1 && r.E2EFromScheduleMs == nil {
			t.Fatalf("first turn without latency from the schedule")
		}
	}
}

// TestMultiTurnFailureEndsConversation: a failed turn is the conversation's
// last; the turns after it are never sent.
func TestMultiTurnFailureEndsConversation(t *testing.T) {
	cfg := fastSim()
	cfg.Faults.HTTP500 = 0.3
	s := startSim(t, cfg)
	e, col := newEngine(t, s.URL(), nil)
	plan := synthPlan(30, "reference")
	plan.Prompts["p"].Turns = 4
	warm := 0
	st := stage(4, 3)
	st.Requests.Each, st.Warmup = 12, &warm
	res := runStage(t, e, plan, st)
	byConv := map[string][]int{}
	failed := 0
	for _, r := range col.measured() {
		byConv[r.Nonce] = append(byConv[r.Nonce], r.Turn)
		if !r.OK {
			failed++
			if r.Turn < 4 {
				byConv[r.Nonce] = append(byConv[r.Nonce], -1) // must be the last
			}
		}
	}
	if len(byConv) != 12 || failed == 0 || res.Points[0].Failed != failed {
		t.Fatalf("%d conversations, %d failed requests (point says %d)", len(byConv), failed, res.Points[0].Failed)
	}
	sent := 0
	for nonce, turns := range byConv {
		for i, tn := range turns {
			if tn == -1 {
				if i != len(turns)-1 {
					t.Fatalf("conversation %s went on after a failed turn: %v", nonce, turns)
				}
				continue
			}
			sent++
			if tn != i+1 {
				t.Fatalf("conversation %s turns %v", nonce, turns)
			}
		}
	}
	total := 0
	for _, p := range res.Points[1:] {
		total += p.NRequests
	}
	if sent != res.Points[0].NRequests || total != sent || sent == 48 {
		t.Fatalf("%d sent, level %d, turns %d", sent, res.Points[0].NRequests, total)
	}
}

// TestMultiTurnSharedPrefix: conversations open with their group's shared
// prefix, the nonce after it, and keep it at the head of the history.
func TestMultiTurnSharedPrefix(t *testing.T) {
	s := startSim(t, fastSim())
	rc := startRecorder(t, s)
	e, _ := newEngine(t, rc.URL+"/v1", nil)
	plan := synthPlan(200, "")
	plan.Prompts["p"].Turns = 2
	plan.Prompts["p"].Synthetic.SharedPrefix = &scenario.SharedPrefix{Groups: 2, PrefixTokens: 128}
	st := stage(4, 2)
	st.Requests.Each = 4
	res := runStage(t, e, plan, st)
	if p := res.Points[0]; p.Completed != 8 {
		t.Fatalf("completed %d (%v)", p.Completed, p.Error)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	turns := map[int]int{}
	for _, x := range rc.got {
		first := x.messages[0].Content
		if !strings.HasPrefix(first, "[prefix-") {
			continue
		}
		if _, rest, ok := strings.Cut(first, " ["); !ok || len(rest) < 13 || rest[12] != ']' {
			t.Fatalf("no nonce after the prefix: %.60q", first)
		}
		turns[len(x.messages)]++
	}
	if turns[1] != 4 || turns[3] != 4 {
		t.Fatalf("requests by history length: %v", turns)
	}
}
