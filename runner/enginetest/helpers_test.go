package enginetest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/internal/engines"
	"github.com/runnerbench/runner/internal/testutil"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/runner"
	"github.com/runnerbench/runner/scenario"
)

// pool holds the engines the tests share; TestMain stops them.
var pool engines.Pool

func TestMain(m *testing.M) {
	code := m.Run()
	pool.Close()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// root is the repository root, or the test ends.
func root(t testing.TB) string {
	t.Helper()
	r, err := engines.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// llama returns the shared llama-server (plain, or drafting for itself).
func llama(t testing.TB, draft bool) *engines.Engine {
	t.Helper()
	name := "llama"
	if draft {
		name = "llama-draft"
	}
	r := root(t)
	return pool.Get(t, name, func(ctx context.Context) (*engines.Engine, error) {
		return engines.StartLlama(ctx, r, engines.LlamaOptions{Draft: draft})
	})
}

var simBuild struct {
	once sync.Once
	bin  string
	err  error
}

// inferenceSim returns the shared llm-d-inference-sim called name, started
// with args; the binary is built once per test binary.
func inferenceSim(t testing.TB, name string, args ...string) *engines.Engine {
	t.Helper()
	r := root(t)
	return pool.Get(t, name, func(ctx context.Context) (*engines.Engine, error) {
		simBuild.once.Do(func() {
			start := time.Now()
			simBuild.bin, simBuild.err = engines.BuildInferenceSim(ctx, r)
			fmt.Fprintf(os.Stderr, "enginetest: llm-d-inference-sim build took %s\n", time.Since(start).Round(time.Millisecond))
		})
		if simBuild.err != nil {
			return nil, simBuild.err
		}
		return engines.StartInferenceSim(ctx, simBuild.bin, args...)
	})
}

// outcome is what one stage run produced.
type outcome struct {
	stage *result.Stage
	recs  []*result.Request // measured requests, by level then dispatch order
	warm  []*result.Request
	log   string
}

// openEngine loads a plan (YAML, with ENDPOINT and MODEL substituted) and
// returns an engine for its first stage's endpoint at baseURL, ready, with
// o's options and its log kept in logs, and a context for its stages; both
// end with the test (after what the caller registered with t.Cleanup
// before).
func openEngine(t testing.TB, baseURL, model, planYAML string, o runner.Options) (plan *scenario.Plan, e *runner.Engine, ctx context.Context, logs *testutil.SyncBuffer) {
	t.Helper()
	src := strings.NewReplacer("ENDPOINT", baseURL, "MODEL", model).Replace(planYAML)
	plan, err := scenario.LoadBytes(t.Name()+".yaml", []byte(src), t.TempDir(), scenario.Options{Getenv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, src)
	}
	logs = &testutil.SyncBuffer{}
	o.Logger = zerolog.New(logs)
	name := plan.Stages[0].Endpoint
	e, err = runner.NewEngine(runner.Target{Name: name, Endpoint: plan.Endpoints[name], BaseURL: baseURL}, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	if err := e.WaitReady(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	return plan, e, ctx, logs
}

// run loads a plan (YAML, with ENDPOINT and MODEL substituted) and runs its
// stages against eng, collecting every request record and the log.
func run(t *testing.T, eng *engines.Engine, model, planYAML string) []outcome {
	t.Helper()
	plan, e, ctx, logs := openEngine(t, eng.BaseURL, model, planYAML, runner.Options{})
	var mu sync.Mutex
	var recs []*result.Request
	var out []outcome
	for _, st := range plan.Stages {
		mu.Lock()
		recs = nil
		mu.Unlock()
		sink := recordingSink{Stage: aggregate.NewStage(0), add: func(r *result.Request) {
			mu.Lock()
			recs = append(recs, r)
			mu.Unlock()
		}}
		err := e.RunStage(ctx, plan.LoadPlan(st), sink)
		res := sink.Result()
		if err != nil {
			t.Fatalf("stage %s: %v\nengine log:\n%s", st.Name, err, eng.Log())
		}
		mu.Lock()
		o := outcome{stage: res, log: logs.String()}
		for _, r := range recs {
			if r.Warmup {
				o.warm = append(o.warm, r)
			} else {
				o.recs = append(o.recs, r)
			}
		}
		mu.Unlock()
		out = append(out, o)
	}
	return out
}

// recordingSink computes a stage's points as a run does and shows every
// request record to add.
type recordingSink struct {
	*aggregate.Stage
	add func(*result.Request)
}

func (s recordingSink) Request(r *result.Request) {
	s.add(r)
	s.Stage.Request(r)
}

// planFor is a plan against endpoint ep (ENDPOINT and MODEL are filled in by
// run) with two synthetic prompt sets: "synth" of input tokens, and "shared",
// 384 tokens in two groups sharing a 256-token prefix; stages is its YAML list.
func planFor(ep string, input int, stages string) string {
	return fmt.Sprintf(`
version: 1
name: engines
endpoints:
  %s: {base_url: ENDPOINT, model: MODEL}
prompts:
  synth: {synthetic: {input_tokens: %d}}
  shared: {synthetic: {input_tokens: 384, shared_prefix: {groups: 2, prefix_tokens: 256}}}
stages:%s`, ep, input, stages)
}

// streamStages is the stages of a plan that runs pinned chat, pinned
// completions and natural chat against endpoint ep with prompt set "synth":
// n requests of out tokens each, conc at a time.
func streamStages(ep string, out, conc, n int) string {
	var b strings.Builder
	for _, s := range []struct{ name, api, mode string }{
		{"chat", "chat", "pinned"}, {"completions", "completions", "pinned"}, {"natural", "chat", "natural"},
	} {
		fmt.Fprintf(&b, "\n  - {name: %s, endpoint: %s, prompts: synth, api: %s, mode: %s, output_tokens: %d, concurrency: [%d], requests: %d}",
			s.name, ep, s.api, s.mode, out, conc, n)
	}
	return b.String() + "\n"
}

// noFailures fails t for every point with a failed request.
// kernelTimed checks that a stage's token chunks were all timed by the
// kernel's receive time (Linux), and that the level measured the client's
// read lag.
func kernelTimed(t *testing.T, o outcome) {
	t.Helper()
	if runtime.GOOS != "linux" {
		return
	}
	for _, p := range o.stage.Points {
		if p.TimestampSource == nil || *p.TimestampSource != "kernel" || p.ClientReadLagP99Ms == nil {
			src := "null"
			if p.TimestampSource != nil {
				src = *p.TimestampSource
			}
			t.Errorf("%s %s: timestamp_source %s, read lag p99 %s; want kernel", o.stage.Name, p.Label(), src, val(p.ClientReadLagP99Ms))
			continue
		}
		t.Logf("%s %s: timestamp_source %s, client read lag p50 %s p99 %s ms", o.stage.Name, p.Label(), *p.TimestampSource, val(p.ClientReadLagP50Ms), val(p.ClientReadLagP99Ms))
	}
}

func noFailures(t *testing.T, o outcome) {
	t.Helper()
	for _, p := range o.stage.Points {
		if p.Failed != 0 || p.Completed != p.NRequests || p.NRequests == 0 {
			t.Errorf("%s %s: %d of %d failed: %v %v", o.stage.Name, p.Label(), p.Failed, p.NRequests, p.ErrorsByKind, p.ErrorSamples)
		}
	}
}

// inputError is the largest relative miss of the server-counted prompt
// tokens against the requested count.
func inputError(recs []*result.Request, want int) float64 {
	worst := 0.0
	for _, r := range recs {
		worst = max(worst, math.Abs(float64(r.InputTokens-want))/float64(want))
	}
	return worst
}

// rawStream posts body to url and returns the decoded data chunks (without
// [DONE]) and the response header.
func rawStream(t *testing.T, url string, body map[string]any) ([]map[string]any, http.Header) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: status %d", url, resp.StatusCode)
	}
	var chunks []map[string]any
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		chunks = append(chunks, m)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return chunks, resp.Header
}

// placement says where a stream's usage came: "own chunk" (a chunk with no
// choices after the finish chunk), "finish chunk", "none", or "elsewhere".
func placement(chunks []map[string]any) string {
	for i, c := range chunks {
		if u, ok := c["usage"].(map[string]any); ok && u != nil {
			choices, _ := c["choices"].([]any)
			switch {
			case len(choices) == 0 && i > 0 && finishOf(chunks[i-1]) != "":
				return "own chunk"
			case len(choices) > 0 && finishOf(c) != "":
				return "finish chunk"
			}
			return "elsewhere"
		}
	}
	return "none"
}

// finishOf is the first choice's finish_reason ("" when none).
func finishOf(c map[string]any) string {
	choices, _ := c["choices"].([]any)
	if len(choices) == 0 {
		return ""
	}
	ch, _ := choices[0].(map[string]any)
	s, _ := ch["finish_reason"].(string)
	return s
}

// val prints a metric that may be null.
func val(p *float64) string {
	if p == nil {
		return "null"
	}
	return strconv.FormatFloat(*p, 'f', -1, 64)
}
