package runner

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
	"github.com/runnerbench/runner/sim"
)

// batchSim is a simulator whose prefill cost grows with the tokens sent, so
// a batch's latency says how much it carried.
func batchSim() sim.Config {
	c := fastSim()
	c.PrefillMsPerToken = 0.01
	return c
}

// batchStage is a closed-loop stage of api over prompt set "p".
func batchStage(api scenario.API, conc, requests int) *scenario.Stage {
	return &scenario.Stage{Name: "s", Prompts: "p", API: api, Concurrency: []int{conc}, Requests: scenario.PerLevel{Each: requests}}
}

// TestEmbeddingsGroundTruth: an embeddings stage sends inputs_per_request
// texts per request, each led by its own nonce and calibrated to the
// prompt length; its E2E is the simulator's answer time, its input tokens
// the simulator's count, and it has no first token or output tokens.
func TestEmbeddingsGroundTruth(t *testing.T) {
	s := startSim(t, batchSim())
	sp := startSpy(t, s)
	e, col := newEngine(t, sp.URL+"/v1", nil)
	st := batchStage(scenario.APIEmbeddings, 2, 8)
	st.InputsPerRequest = 4
	res := runStage(t, e, synthPlan(200, ""), st)
	recs := col.measured()
	if len(recs) != 8 {
		t.Fatalf("%d records", len(recs))
	}
	var inSum int
	for _, r := range recs {
		if !r.OK {
			t.Fatalf("request failed: %s %s", r.ErrorKind, r.Error)
		}
		tr := truth(t, s, r.Nonce)
		if tr.Endpoint != "embeddings" || tr.Inputs != 4 || r.Inputs != 4 {
			t.Errorf("truth endpoint %q inputs %d, record inputs %d", tr.Endpoint, tr.Inputs, r.Inputs)
		}
		if r.TTFTMs != nil || r.TPOTMs != nil || r.OutputTokens != 0 || r.MaxTokens != 0 {
			t.Errorf("ttft %v tpot %v output %d max_tokens %d on an embeddings request", r.TTFTMs, r.TPOTMs, r.OutputTokens, r.MaxTokens)
		}
		if !r.UsageReported || r.InputTokens != tr.PromptTokens {
			t.Errorf("input tokens %d (reported %v), simulator counted %d", r.InputTokens, r.UsageReported, tr.PromptTokens)
		}
		if lo, hi := 4*200*0.95, 4*200*1.05; float64(tr.PromptTokens) < lo || float64(tr.PromptTokens) > hi {
			t.Errorf("4 inputs of 200 tokens came to %d tokens", tr.PromptTokens)
		}
		if want := ms(tr.TokenWritten[0].Sub(r.Start)); r.E2EMs < want-0.5 || !raceOn && !within(r.E2EMs, want) {
			t.Errorf("E2E %.3f ms, simulator wrote the answer at %.3f ms", r.E2EMs, want)
		}
		inSum += r.InputTokens
	}
	seen := map[string]bool{}
	batches := 0
	for _, c := range sp.requests("/v1/embeddings") {
		in, ok := c.body["input"].([]any)
		if !ok {
			continue // a warm-up: one short input
		}
		if batches++; len(in) != 4 {
			t.Fatalf("%d inputs", len(in))
		}
		for _, x := range in {
			s, _ := x.(string)
			nonce, _, ok := strings.Cut(strings.TrimPrefix(s, "["), "]")
			if !strings.HasPrefix(s, "[") || !ok || seen[nonce] {
				t.Errorf("input %.30q does not lead with a nonce of its own", s)
			}
			seen[nonce] = true
		}
		for _, k := range []string{"max_tokens", "stream", "ignore_eos", "stream_options"} {
			if _, ok := c.body[k]; ok {
				t.Errorf("embeddings body carries %s", k)
			}
		}
	}
	if batches != 8 {
		t.Errorf("%d batches sent, want 8", batches)
	}
	p := res.Points[0]
	if p.TTFTP50Ms != nil || p.TPOTP50Ms != nil || p.PrefillTPS != nil || p.OutputTPSTotal != 0 {
		t.Errorf("stream metrics on an embeddings level: ttft %v tpot %v prefill %v out tps %v", p.TTFTP50Ms, p.TPOTP50Ms, p.PrefillTPS, p.OutputTPSTotal)
	}
	if p.MeanInputsPerRequest == nil || *p.MeanInputsPerRequest != 4 || p.E2EP50Ms == nil || p.Completed != 8 {
		t.Fatalf("point %+v", p)
	}
	if want := result.Round(float64(inSum)/p.DurationS, 2); p.InputTPSTotal == nil || !within(*p.InputTPSTotal, want) {
		t.Errorf("input_tps_total %v, want about %.2f", p.InputTPSTotal, want)
	}
}

// TestRerankGroundTruth: a rerank stage sends the prompt as the query and
// documents_per_request documents of document_tokens each; the simulator's
// count (each pair: query + document + its template) is what is recorded.
func TestRerankGroundTruth(t *testing.T) {
	s := startSim(t, batchSim())
	sp := startSpy(t, s)
	e, col := newEngine(t, sp.URL+"/v1", nil)
	st := batchStage(scenario.APIRerank, 2, 6)
	st.DocumentsPerRequest = 3
	st.DocumentTokens = &scenario.Length{Fixed: 50}
	res := runStage(t, e, synthPlan(100, ""), st)
	for _, r := range col.measured() {
		if !r.OK {
			t.Fatalf("request failed: %s %s", r.ErrorKind, r.Error)
		}
		tr := truth(t, s, r.Nonce)
		if tr.Endpoint != "rerank" || tr.Inputs != 3 || r.Inputs != 3 || r.InputTokens != tr.PromptTokens {
			t.Errorf("truth %s inputs %d tokens %d; record inputs %d tokens %d", tr.Endpoint, tr.Inputs, tr.PromptTokens, r.Inputs, r.InputTokens)
		}
		if want := 3 * (100 + 50 + 4); float64(tr.PromptTokens) < 0.95*float64(want) || float64(tr.PromptTokens) > 1.05*float64(want) {
			t.Errorf("3 pairs of a 100-token query and 50-token documents came to %d tokens, want about %d", tr.PromptTokens, want)
		}
		if want := ms(tr.TokenWritten[0].Sub(r.Start)); r.E2EMs < want-0.5 || !raceOn && !within(r.E2EMs, want) {
			t.Errorf("E2E %.3f ms, simulator wrote the answer at %.3f ms", r.E2EMs, want)
		}
	}
	reqs := sp.requests("/v1/rerank")
	if len(reqs) == 0 {
		t.Fatal("no rerank requests")
	}
	for _, c := range reqs {
		q, _ := c.body["query"].(string)
		docs, _ := c.body["documents"].([]any)
		if !strings.HasPrefix(q, "[") || (len(docs) != 3 && len(docs) != 1) {
			t.Errorf("query %.20q documents %d", q, len(docs))
		}
	}
	if p := res.Points[0]; p.MeanInputsPerRequest == nil || *p.MeanInputsPerRequest != 3 || p.InputTPSTotal == nil {
		t.Errorf("point inputs %v input tps %v", p.MeanInputsPerRequest, p.InputTPSTotal)
	}
}

// TestScoreGroundTruth: a score stage sends the prompt as text_1 and
// documents_per_request documents as text_2 to the server's root /score
// (base_url less its /v1), and records what the simulator counted, as a
// rerank stage does.
func TestScoreGroundTruth(t *testing.T) {
	s := startSim(t, batchSim())
	sp := startSpy(t, s)
	e, col := newEngine(t, sp.URL+"/v1", nil)
	st := batchStage(scenario.API("score"), 2, 6)
	st.DocumentsPerRequest = 3
	st.DocumentTokens = &scenario.Length{Fixed: 50}
	res := runStage(t, e, synthPlan(100, ""), st)
	recs := col.measured()
	if len(recs) != 6 {
		t.Fatalf("%d records", len(recs))
	}
	for _, r := range recs {
		if !r.OK {
			t.Fatalf("request failed: %s %s", r.ErrorKind, r.Error)
		}
		tr := truth(t, s, r.Nonce)
		if tr.Endpoint != "score" || tr.Inputs != 3 || r.Inputs != 3 || r.InputTokens != tr.PromptTokens || !r.UsageReported {
			t.Errorf("truth %s inputs %d tokens %d; record inputs %d tokens %d", tr.Endpoint, tr.Inputs, tr.PromptTokens, r.Inputs, r.InputTokens)
		}
		if want := 3 * (100 + 50 + 4); float64(tr.PromptTokens) < 0.95*float64(want) || float64(tr.PromptTokens) > 1.05*float64(want) {
			t.Errorf("3 pairs of a 100-token query and 50-token documents came to %d tokens, want about %d", tr.PromptTokens, want)
		}
		if r.TTFTMs != nil || r.OutputTokens != 0 || r.MaxTokens != 0 {
			t.Errorf("ttft %v output %d max_tokens %d on a score request", r.TTFTMs, r.OutputTokens, r.MaxTokens)
		}
		if want := ms(tr.TokenWritten[0].Sub(r.Start)); r.E2EMs < want-0.5 || !raceOn && !within(r.E2EMs, want) {
			t.Errorf("E2E %.3f ms, simulator wrote the answer at %.3f ms", r.E2EMs, want)
		}
	}
	if n := len(sp.requests("/v1/score")) + len(sp.requests("/v1/rerank")); n != 0 {
		t.Errorf("%d requests under /v1", n)
	}
	reqs := sp.requests("/score")
	if len(reqs) != 6+1 { // and the level's warm-up
		t.Fatalf("%d requests to /score", len(reqs))
	}
	for _, c := range reqs {
		q, _ := c.body["text_1"].(string)
		docs, _ := c.body["text_2"].([]any)
		if !strings.HasPrefix(q, "[") || (len(docs) != 3 && len(docs) != 1) || c.body["model"] != "sim" {
			t.Errorf("text_1 %.20q text_2 %d model %v", q, len(docs), c.body["model"])
		}
		for _, k := range []string{"max_tokens", "stream", "ignore_eos", "query", "documents"} {
			if _, ok := c.body[k]; ok {
				t.Errorf("score body carries %s", k)
			}
		}
	}
	p := res.Points[0]
	if p.MeanInputsPerRequest == nil || *p.MeanInputsPerRequest != 3 || p.InputTPSTotal == nil || p.TTFTP50Ms != nil || p.OutputTPSTotal != 0 {
		t.Errorf("point inputs %v input tps %v ttft %v output tps %v", p.MeanInputsPerRequest, p.InputTPSTotal, p.TTFTP50Ms, p.OutputTPSTotal)
	}
	if res.Mode != "" || p.NaturalStop || p.MaxTokensHitRate != nil || p.OutputTokenStdev != nil {
		t.Errorf("a score stage reports mode %q, natural_stop %v, max_tokens_hit_rate %v, output_token_stdev %v", res.Mode, p.NaturalStop, p.MaxTokensHitRate, p.OutputTokenStdev)
	}
}

// TestAnswerTimeout: an answer that is not streamed and does not come
// within the first_token timeout is a timeout that names the whole answer,
// not a first token it never has.
func TestAnswerTimeout(t *testing.T) {
	for _, api := range []scenario.API{scenario.APIEmbeddings, "score"} {
		t.Run(string(api), func(t *testing.T) {
			cfg := batchSim()
			cfg.Faults = sim.Faults{Stall: 1} // stall_ms 0: until the client gives up
			s := startSim(t, cfg)
			e, col := newEngine(t, s.URL(), &scenario.Endpoint{Timeouts: scenario.Timeouts{FirstToken: scenario.Duration(150 * time.Millisecond)}})
			st := batchStage(api, 1, 2)
			st.Warmup = new(int)
			st.DocumentTokens = &scenario.Length{Fixed: 8}
			res := runStage(t, e, synthPlan(20, "reference"), st)
			recs := col.measured()
			if len(recs) != 2 {
				t.Fatalf("%d records", len(recs))
			}
			for _, r := range recs {
				if r.OK || r.ErrorKind != result.ErrTimeout || !strings.Contains(r.Error, "no whole answer within 150ms") || strings.Contains(r.Error, "first token") || strings.Contains(r.Error, "no token") {
					t.Errorf("record ok %v %s: %s", r.OK, r.ErrorKind, r.Error)
				}
				if r.E2EMs < 150*0.9 || r.E2EMs > 150+1500 {
					t.Errorf("timed out after %.1f ms, bound 150 ms", r.E2EMs)
				}
			}
			if p := res.Points[0]; !strings.Contains(p.ErrorSamples[result.ErrTimeout], "answer timeout") {
				t.Errorf("samples %v", p.ErrorSamples)
			}
		})
	}
}

// TestBatchFailures: the simulator's faults on a whole answer land in their
// classes; an answer with fewer results than inputs is malformed.
func TestBatchFailures(t *testing.T) {
	for _, c := range []struct {
		fault sim.Faults
		kind  string
	}{
		{sim.Faults{HTTP500: 1}, "http_500"},
		{sim.Faults{Malformed: 1}, result.ErrMalformed},
		{sim.Faults{ErrorInStream: 1}, result.ErrServer},
		{sim.Faults{HTML: 1}, result.ErrMalformed},
	} {
		t.Run(c.kind, func(t *testing.T) {
			cfg := batchSim()
			cfg.Faults = c.fault
			s := startSim(t, cfg)
			e, col := newEngine(t, s.URL(), nil)
			st := batchStage(scenario.APIEmbeddings, 1, 2)
			st.Warmup = new(int)
			runStageCtx(t.Context(), e, synthPlan(20, "reference"), st)
			for _, r := range col.measured() {
				if r.OK || r.ErrorKind != c.kind || r.Error == "" {
					t.Errorf("record ok %v kind %q (%s), want %s", r.OK, r.ErrorKind, r.Error, c.kind)
				}
			}
		})
	}
	t.Run("fewer results", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,0.2]}],"usage":{"prompt_tokens":9,"total_tokens":9}}`))
		}))
		defer srv.Close()
		e, col := newEngine(t, srv.URL+"/v1", nil)
		st := batchStage(scenario.APIEmbeddings, 1, 2)
		st.InputsPerRequest = 2
		runStageCtx(t.Context(), e, synthPlan(20, "reference"), st)
		for _, r := range col.measured() {
			if r.OK || r.ErrorKind != result.ErrMalformed || !strings.Contains(r.Error, "1 results for the 2 inputs") {
				t.Errorf("record ok %v %s: %s", r.OK, r.ErrorKind, r.Error)
			}
		}
	})
}

// TestUnservedAPI: an endpoint that does not serve the stage's API (a 404,
// an event stream where a JSON answer was due, or the JSON answer of
// another API) stops the stage with one error naming the API and the path
// tried (score's at the server's root), before any measured request.
func TestUnservedAPI(t *testing.T) {
	for _, c := range []struct {
		name    string
		handler http.HandlerFunc
		want    string
	}{
		{"404", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }, "answered http 404 (404 page not found"},
		{"stream", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\ndata: [DONE]\n\n"))
		}, "answered with an event stream, not a JSON answer"},
		{"chat json", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":1,"total_tokens":10}}`))
		}, "answered with a JSON answer of api chat, not of api "},
	} {
		for _, api := range []struct{ name, path string }{{"embeddings", "/v1/embeddings"}, {"rerank", "/v1/rerank"}, {"score", "/score"}} {
			t.Run(c.name+" "+api.name, func(t *testing.T) {
				var paths []string
				var mu sync.Mutex
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					mu.Lock()
					paths = append(paths, r.URL.Path)
					mu.Unlock()
					c.handler(w, r)
				}))
				defer srv.Close()
				e, col := newEngine(t, srv.URL+"/v1", nil)
				st := batchStage(scenario.API(api.name), 2, 20)
				st.DocumentTokens = &scenario.Length{Fixed: 8}
				_, err := runStageCtx(t.Context(), e, synthPlan(20, "reference"), st)
				want := "api " + api.name + ": POST " + srv.URL + api.path + " " + c.want
				if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "the endpoint does not serve the "+api.name+" API at this path") {
					t.Errorf("err %v\nwant %s", err, want)
				}
				if n := len(col.measured()); n != 0 {
					t.Errorf("%d measured requests sent after the warm-up showed the API is not served", n)
				}
				mu.Lock()
				defer mu.Unlock()
				for _, got := range paths {
					if got != api.path && got != "/v1/models" && got != "/tokenize" && got != "/health" && got != "/metrics" {
						t.Errorf("request to %s", got)
					}
				}
			})
		}
	}
}

// TestUnservedAPISim: in front of the built-in simulator, a router that
// sends a batch API's requests to another of the simulator's APIs (or to a
// path it has no route for) stops the stage with the error naming what
// came back; the simulator's own answers are the other API's.
func TestUnservedAPISim(t *testing.T) {
	s := startSim(t, batchSim())
	h := s.Handler()
	// Where each API's request is sent instead, with a body that API takes.
	routes := map[string]struct{ path, body string }{
		"/v2/embeddings": {"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`},
		"/v2/rerank":     {"/v1/embeddings", `{"model":"m","input":"hi"}`},
		"/score":         {"/v1/rerank", `{"model":"m","query":"q","documents":["a","b"]}`},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if to, ok := routes[r.URL.Path]; ok && r.Method == http.MethodPost {
			var in struct{ Model string }
			_ = json.NewDecoder(r.Body).Decode(&in)
			body := strings.Replace(to.body, `"model":"m"`, `"model":"`+in.Model+`"`, 1)
			r2 := httptest.NewRequest(http.MethodPost, to.path, strings.NewReader(body))
			r2.Header.Set("Content-Type", "application/json")
			h.ServeHTTP(w, r2)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	for _, c := range []struct{ api, base, path, want string }{
		{"embeddings", "/v2", "/v2/embeddings", "answered with a JSON answer of api chat, not of api embeddings"},
		{"rerank", "/v2", "/v2/rerank", "answered with a JSON answer of api embeddings, not of api rerank"},
		{"score", "/v1", "/score", "answered with a JSON answer of api rerank, not of api score"},
		{"embeddings", "/v3", "/v3/embeddings", "answered http 404 ({\"error\""},
	} {
		e, col := newEngine(t, srv.URL+c.base, nil)
		st := batchStage(scenario.API(c.api), 2, 20)
		_, err := runStageCtx(t.Context(), e, synthPlan(20, "reference"), st)
		if want := "api " + c.api + ": POST " + srv.URL + c.path + " " + c.want; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s at %s: err %v\nwant %s", c.api, c.path, err, want)
		}
		if n := len(col.measured()); n != 0 {
			t.Errorf("%s: %d measured requests", c.api, n)
		}
	}
	// Served, the same stages succeed through the router's other paths.
	e, _ := newEngine(t, srv.URL+"/v1", nil)
	if p := runStage(t, e, synthPlan(20, "reference"), batchStage(scenario.APIRerank, 1, 4)).Points[0]; p.Completed != 4 {
		t.Errorf("rerank served: completed %d %v", p.Completed, p.ErrorSamples)
	}
}

// TestBatchNullMetrics holds the catalogue's NeedsOutput marks (which the
// plan loader refuses in an embeddings, rerank or score stage's checks) to
// what the stages produce on the built-in simulator: a marked metric is
// null, zero or false on an embeddings level, and a metric a chat level
// (natural mode with tools, or pinned) produces but an embeddings level
// does not is marked. The runner's own diagnostics (KindClient) describe
// the measurement, not the API, and are left out.
func TestBatchNullMetrics(t *testing.T) {
	tools := []*scenario.ToolDef{{Type: "function", Function: scenario.ToolFunction{Name: "lookup",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}}}}
	cfg := batchSim()
	cfg.ToolCallRate = 0.5
	s := startSim(t, cfg)
	slo := &scenario.SLO{E2EMs: 10_000}
	run := func(st *scenario.Stage) result.Point {
		e, _ := newEngine(t, s.URL(), nil)
		st.Requests.Each, st.SLO = 8, slo
		res := runStage(t, e, synthPlan(32, ""), st)
		if p := res.Points[0]; p.Failed != 0 || p.Completed != 8 {
			t.Fatalf("%s: completed %d failed %d %v", st.API, p.Completed, p.Failed, p.ErrorSamples)
		}
		return res.Points[0]
	}
	natural := stage(8, 2)
	natural.Mode, natural.Tools, natural.ToolChoice = "natural", tools, &scenario.ToolChoice{Mode: "auto"}
	chat := []result.Point{run(natural), run(stage(8, 2))}
	emb := run(batchStage(scenario.APIEmbeddings, 2, 8))
	produced := func(p *result.Point, m *result.Metric) bool {
		v, null := m.Raw(p)
		return !null && !reflect.ValueOf(v).IsZero()
	}
	for _, m := range result.Metrics() {
		if m.Kind == result.KindClient {
			continue
		}
		inChat := produced(&chat[0], &m) || produced(&chat[1], &m)
		switch inEmb := produced(&emb, &m); {
		case m.NeedsOutput && inEmb:
			v, _ := m.Raw(&emb)
			t.Errorf("%s is marked as needing output, but an embeddings level has %v", m.Name, v)
		case !m.NeedsOutput && !inEmb && inChat:
			t.Errorf("%s: a chat level has it and an embeddings level does not: mark it NeedsOutput (a check of an embeddings stage reading it would fail every run)", m.Name)
		}
	}
	for _, name := range []string{"tool_call_rate", "natural_stop", "ttft_p95_ms", "max_tokens_hit_rate"} {
		if m, _ := result.MetricNamed(name); !produced(&chat[0], m) {
			t.Errorf("the natural chat level has no %s: the test does not see what it holds", name)
		}
	}
}
