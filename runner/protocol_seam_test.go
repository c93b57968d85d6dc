package runner

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/runnerbench/runner/protocol"
	"github.com/runnerbench/runner/protocol/sse"
	"github.com/runnerbench/runner/scenario"
)

// embedProto is a non-streamed JSON API written against the protocol seam
// alone, the way an embeddings endpoint would be: the whole answer is one
// event carrying the finish and the server's usage.
type embedProto struct{}

func (embedProto) Name() string      { return "test-embeddings" }
func (embedProto) Path() string      { return "/embeddings" }
func (embedProto) MediaType() string { return "application/json" }
func (embedProto) Describe() string  { return "a JSON answer" }
func (embedProto) Encode(r protocol.Request) ([]byte, error) {
	return json.Marshal(map[string]any{"model": r.Model, "input": r.Text})
}
func (embedProto) Prompt(text string) map[string]any { return map[string]any{"input": text} }
func (embedProto) NewDecoder() protocol.Decoder      { return &embedDecoder{} }

type embedDecoder struct {
	body io.Reader
	done bool
	buf  []byte
}

func (d *embedDecoder) Reset(body io.Reader) { d.body, d.done = body, false }

func (d *embedDecoder) Next(ev *protocol.Event) error {
	if d.done {
		return io.EOF
	}
	d.done = true
	b, err := io.ReadAll(io.LimitReader(d.body, 1<<20))
	if err != nil {
		return err
	}
	var out struct {
		Usage *struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	if json.Unmarshal(b, &out) != nil {
		d.buf = b
		return &protocol.MalformedError{Data: d.buf}
	}
	ev.Done, ev.Chunk = false, sse.Chunk{Finish: true}
	if out.Usage != nil {
		ev.Usage, ev.PromptTokens = true, out.Usage.PromptTokens
	}
	return nil
}

func (d *embedDecoder) Skip() error { return io.EOF }

// TestNonStreamedProtocol: an API registered beside chat and completions
// runs through the unchanged engine over loopback HTTP: its path, body and
// Accept header are sent, its JSON answer read into the record (an E2E, no
// TTFT, the usage's input tokens), and an unreadable answer is a malformed
// failure.
func TestNonStreamedProtocol(t *testing.T) {
	saved := protocol.Registry
	protocol.Registry = append(append([]protocol.Protocol(nil), saved...), embedProto{})
	t.Cleanup(func() { protocol.Registry = saved })

	var mu sync.Mutex
	var bodies []map[string]any
	bad := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := map[string]any{"path": r.Method + " " + r.URL.Path}
		_ = json.NewDecoder(r.Body).Decode(&b)
		mu.Lock()
		bodies = append(bodies, b)
		broken := bad
		mu.Unlock()
		if r.URL.Path != "/v1/embeddings" || r.Header.Get("Accept") != "application/json" {
			http.Error(w, "wrong path or accept: "+r.URL.Path+" "+r.Header.Get("Accept"), http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if broken {
			_, _ = io.WriteString(w, `{"data": [`)
			return
		}
		_, _ = io.WriteString(w, `{"object":"list","data":[{"embedding":[0.1,0.2]}],"usage":{"prompt_tokens":7,"total_tokens":7}}`)
	}))
	t.Cleanup(srv.Close)
	e, col := newEngine(t, srv.URL+"/v1", nil)
	plan := &scenario.Plan{Prompts: map[string]*scenario.PromptSet{"p": {Loaded: []scenario.Prompt{{Text: "alpha"}}}}}
	st := stage(1, 2)
	st.API, st.Requests = "test-embeddings", scenario.PerLevel{Each: 4}
	w := 0
	st.Warmup = &w
	runStage(t, e, plan, st)
	recs := col.measured()
	if len(recs) != 4 {
		t.Fatalf("%d records", len(recs))
	}
	for _, r := range recs {
		if !r.OK || r.TTFTMs != nil || r.E2EMs <= 0 || r.InputTokens != 7 || r.OutputTokens != 0 || !r.UsageReported {
			t.Errorf("record %+v", r)
		}
	}
	sent := map[string]bool{}
	for _, b := range bodies {
		if in, ok := b["input"].(string); ok {
			sent[in] = true
		}
	}
	for _, r := range recs {
		if !sent["["+r.Nonce+"] alpha"] {
			t.Errorf("no body sent %q (bodies %v)", "["+r.Nonce+"] alpha", bodies)
		}
	}

	mu.Lock()
	bad = true
	mu.Unlock()
	e2, col2 := newEngine(t, srv.URL+"/v1", nil)
	runStage(t, e2, plan, st)
	for _, r := range col2.measured() {
		if r.OK || r.ErrorKind != "malformed" {
			t.Errorf("unreadable answer recorded as %v %q %q", r.OK, r.ErrorKind, r.Error)
		}
	}
}

// TestUnknownAPI: a stage built in code with an api nobody registered, or
// with turns on an API without history, is an error of the stage, not a
// crash.
func TestUnknownAPI(t *testing.T) {
	e, _ := newEngine(t, "http://127.0.0.1:9/v1", nil)
	plan := &scenario.Plan{Prompts: map[string]*scenario.PromptSet{"p": {Loaded: []scenario.Prompt{{Text: "a"}}}}}
	st := stage(1, 1)
	st.API = "telepathy"
	if _, err := runStageCtx(t.Context(), e, plan, st); err == nil || !strings.Contains(err.Error(), `api "telepathy" is not one of chat, completions`) {
		t.Fatalf("unknown api: %v", err)
	}
	plan.Prompts["p"].Turns = 2
	st.API = "completions"
	if _, err := runStageCtx(t.Context(), e, plan, st); err == nil || !strings.Contains(err.Error(), "no conversation history") {
		t.Fatalf("turns on completions: %v", err)
	}
}
