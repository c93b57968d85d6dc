package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
	"github.com/runnerbench/runner/trace"
)

// testTrace is a Mooncake-like trace in blocks of blockTokens: three system
// prompts that most requests start with, later turns that extend an earlier
// request's whole blocks, and one request in four sharing nothing; arrivals
// every few ms with a burst of ten at once in the middle.
func testTrace(n, blockTokens int) []trace.Request {
	rng := rand.New(rand.NewPCG(19, 1))
	next := int64(0)
	ids := func(k int) []int64 {
		out := make([]int64, k)
		for i := range out {
			out[i], next = next, next+1
		}
		return out
	}
	systems := [][]int64{ids(2), ids(3), ids(1)}
	var earlier [][]int64
	var out []trace.Request
	at := time.Duration(0)
	for i := range n {
		if i < n/2-5 || i >= n/2+5 { // the burst: ten at one instant
			at += time.Duration(2+rng.IntN(6)) * time.Millisecond
		}
		var prefix []int64
		switch u := rng.IntN(4); {
		case u == 3:
		case len(earlier) > 0 && rng.IntN(3) == 0:
			prefix = earlier[rng.IntN(len(earlier))]
		default:
			prefix = systems[u]
		}
		full := append(slices.Clone(prefix), ids(rng.IntN(2))...)
		if len(prefix) > 0 {
			earlier = append(earlier, full)
		}
		out = append(out, trace.Request{
			At: at, Input: len(full)*blockTokens + 8 + rng.IntN(blockTokens-8), Output: 4 + rng.IntN(5),
			Blocks: append(full, ids(1)...), Prompt: -1, Line: i + 1,
		})
	}
	return out
}

// tracePlan is a plan whose prompt set "t" is the trace reqs, and a replay
// stage over it.
func tracePlan(reqs []trace.Request, blockTokens int) (*scenario.Plan, *scenario.Stage) {
	plan := &scenario.Plan{Prompts: map[string]*scenario.PromptSet{
		"t": {Trace: &scenario.Trace{File: "t.jsonl", Format: scenario.TraceMooncake, BlockTokens: blockTokens, Requests: reqs}},
	}}
	st := &scenario.Stage{Name: "replay", Prompts: "t", API: "chat", Mode: "pinned"}
	return plan, st
}

// TestReplayHitRateMatchesTrace: replayed against the simulator's prefix
// cache (16-token blocks), the hit rate the server measures is the one the
// trace's hash ids imply, and the stage reports the trace's summary.
func TestReplayHitRateMatchesTrace(t *testing.T) {
	const block = 64
	reqs := testTrace(120, block)
	implied, ok := trace.ImpliedHitRate(reqs, block)
	if !ok || implied < 0.3 || implied > 0.8 {
		t.Fatalf("the test trace implies a hit rate of %.3f: not a test of sharing", implied)
	}
	s := startSim(t, fastSim())
	e, col := newEngine(t, s.URL(), nil)
	plan, st := tracePlan(reqs, block)
	res := runStage(t, e, plan, st)
	if res.Load != "trace" || len(res.Points) != 1 || res.Trace == nil {
		t.Fatalf("load %q, %d points, trace %v", res.Load, len(res.Points), res.Trace)
	}
	p := res.Points[0]
	if p.Completed != len(reqs) || p.Failed != 0 {
		t.Fatalf("completed %d failed %d: %v", p.Completed, p.Failed, p.Error)
	}
	if p.PrefixCacheHitRate == nil || math.Abs(*p.PrefixCacheHitRate-implied) > 0.03 {
		t.Fatalf("measured hit rate %v, the trace implies %.4f", deref(p.PrefixCacheHitRate), implied)
	}
	t.Logf("prefix-cache hit rate: measured %.4f, the trace implies %.4f", *p.PrefixCacheHitRate, implied)
	if slices.ContainsFunc(p.Warnings, func(w string) bool { return strings.Contains(w, "did not defeat") }) {
		t.Errorf("a trace that shares prefixes warned about caching: %q", p.Warnings)
	}
	sum := res.Trace
	if sum.Requests != len(reqs) || sum.TraceRequests != len(reqs) || sum.ImpliedPrefixHitRate == nil ||
		*sum.ImpliedPrefixHitRate != result.Round(implied, 4) || sum.Speedup != 1 || sum.BlockTokens != block {
		t.Errorf("summary %+v", sum)
	}
	if p.Rate == nil || *p.Rate != sum.MeanRate || p.Label() != "rate="+strconvF(sum.MeanRate) {
		t.Errorf("level rate %v label %s, trace's mean %v", deref(p.Rate), p.Label(), sum.MeanRate)
	}
	// Each request asked for its trace's output length, and its prompt was
	// about its trace's input length (the simulator counts exactly).
	for _, r := range col.measured() {
		want := reqs[r.Seq]
		if r.MaxTokens != want.Output || r.OutputTokens != want.Output {
			t.Fatalf("request %d: max_tokens %d, output %d, trace says %d", r.Seq, r.MaxTokens, r.OutputTokens, want.Output)
		}
		if d := r.InputTokens - want.Input; d < -8 || d > 8 {
			t.Fatalf("request %d: %d input tokens, trace says %d", r.Seq, r.InputTokens, want.Input)
		}
	}
}

func strconvF(f float64) string { return fmt.Sprint(f) }

// TestReplayPrompts: requests that share leading hash ids share those blocks
// byte for byte, differ from the first block they do not share, carry their
// nonce right after the part they share, and leave on the trace's clock
// over its speedup.
func TestReplayPrompts(t *testing.T) {
	const block = 32
	ms := time.Millisecond
	reqs := []trace.Request{
		{At: 0, Input: 80, Output: 3, Blocks: []int64{1, 2, 3}},
		{At: 40 * ms, Input: 90, Output: 2, Blocks: []int64{1, 2, 4}},
		{At: 40 * ms, Input: 50, Output: 2, Blocks: []int64{1, 5}},
		{At: 100 * ms, Input: 40, Output: 2, Blocks: []int64{6, 7}},
		{At: 200 * ms, Input: 30, Output: 2}, // no ids: generated text, nonce first
	}
	s := startSim(t, fastSim())
	sp := startSpy(t, s)
	e, col := newEngine(t, sp.URL+"/v1", nil)
	plan, st := tracePlan(reqs, block)
	warm := 0
	st.Warmup = &warm
	st.Replay = &scenario.Replay{Speedup: 2}
	res := runStage(t, e, plan, st)
	if p := res.Points[0]; p.Completed != 5 || res.Trace.SpanS != 0.1 {
		t.Fatalf("completed %d, span %v s (want 0.1 at speed 2)", p.Completed, res.Trace.SpanS)
	}
	rs := col.measured()
	for i, d := range dueOffsets(rs) {
		if want := float64(reqs[i].At) / 2 / float64(ms); math.Abs(d-want) > 0.01 {
			t.Errorf("request %d due at %.3f ms, want %.3f", i, d, want)
		}
	}
	prompts := map[string]string{} // by nonce
	for _, c := range sp.requests("/v1/chat/completions") {
		msgs := c.body["messages"].([]any)
		text := msgs[0].(map[string]any)["content"].(string)
		prompts[nonceIn(text)] = text
	}
	text := make([]string, len(rs))
	for i, r := range rs {
		text[i] = prompts[r.Nonce]
		if text[i] == "" {
			t.Fatalf("request %d (nonce %s) not seen", i, r.Nonce)
		}
	}
	words := func(s string) []string { return strings.Fields(s) }
	common := func(a, b string) int {
		x, y := words(a), words(b)
		n := 0
		for n < len(x) && n < len(y) && x[n] == y[n] {
			n++
		}
		return n
	}
	// The simulator's tokenizer makes a filler word one token, so a block
	// is 32 words.
	if n := common(text[0], text[1]); n != 2*block {
		t.Errorf("requests 0 and 1 share ids 1, 2 (%d words) but %d words of text:\n%s\n%s", 2*block, n, text[0], text[1])
	}
	if n := common(text[0], text[2]); n != block {
		t.Errorf("requests 0 and 2 share id 1 (%d words) but %d words", block, n)
	}
	if n := common(text[0], text[3]); n != 0 {
		t.Errorf("requests 0 and 3 share nothing but %d words", n)
	}
	// The nonce follows the shared part: request 0 shares two blocks (with
	// 1), request 3 none, request 4 has no ids.
	for i, want := range []int{2 * block, 2 * block, block, 0, 0} {
		if at := slices.Index(words(text[i]), "["+rs[i].Nonce+"]"); at != want {
			t.Errorf("request %d: nonce at word %d, want %d:\n%s", i, at, want, text[i])
		}
	}
}

// nonceIn finds the "[nonce]" word of a prompt.
func nonceIn(s string) string {
	for _, w := range strings.Fields(s) {
		if len(w) == 14 && w[0] == '[' && w[13] == ']' {
			return w[1:13]
		}
	}
	return ""
}

// TestReplayRunnerTrace: a run's own requests.jsonl replays as a trace: the
// same schedule (each request's due time) and, through trace.prompts, the
// same file prompts in the same order.
func TestReplayRunnerTrace(t *testing.T) {
	s := startSim(t, fastSim())
	e, col := newEngine(t, s.URL(), nil)
	inline := []string{"alpha one", "beta two", "gamma three"}
	files := &scenario.PromptSet{Inline: inline}
	for i, x := range inline {
		files.Loaded = append(files.Loaded, scenario.Prompt{Text: x, Line: i + 1, Index: i})
	}
	plan := &scenario.Plan{Prompts: map[string]*scenario.PromptSet{"q": files}}
	st := rateStage(3, "poisson", 200)
	st.Prompts, st.Requests = "q", scenario.PerLevel{Each: 12}
	first := runStage(t, e, plan, st)
	if first.Points[0].Completed != 12 {
		t.Fatalf("first run: %+v", first.Points[0])
	}
	var buf bytes.Buffer
	col.mu.Lock()
	for _, r := range col.reqs {
		b, _ := json.Marshal(r)
		buf.Write(append(b, '\n'))
	}
	col.mu.Unlock()
	orig := col.measured()
	tr, problem := trace.ParseRunner(buf.Bytes(), trace.Options{MaxTokens: scenario.MaxTokens, Level: -1}, func(line int, msg string) { t.Errorf("line %d: %s", line, msg) })
	if problem != "" || len(tr.Requests) != 12 {
		t.Fatalf("parse: %q, %d requests", problem, len(tr.Requests))
	}
	e2, col2 := newEngine(t, s.URL(), nil)
	plan.Prompts["r"] = &scenario.PromptSet{Trace: &scenario.Trace{File: "requests.jsonl", Format: scenario.TraceRunner, Prompts: "q", Requests: tr.Requests}}
	again := runStage(t, e2, plan, &scenario.Stage{Name: "again", Prompts: "r", API: "chat", Mode: "pinned"})
	if p := again.Points[0]; p.Completed != 12 || again.Trace.ImpliedPrefixHitRate != nil {
		t.Fatalf("replay: %+v, implied %v", p, again.Trace.ImpliedPrefixHitRate)
	}
	replayed := col2.measured()
	wantDue, gotDue := dueOffsets(orig), dueOffsets(replayed)
	for i := range orig {
		if math.Abs(wantDue[i]-gotDue[i]) > 0.01 {
			t.Errorf("request %d due at %.3f ms, the recorded run's at %.3f", i, gotDue[i], wantDue[i])
		}
		if orig[i].Prompt == nil || replayed[i].Prompt == nil || *orig[i].Prompt != i%3 || *replayed[i].Prompt != *orig[i].Prompt {
			t.Errorf("request %d: prompt %v, recorded %v", i, replayed[i].Prompt, orig[i].Prompt)
		}
		// The same prompt (the input tokens differ by the nonce's, which
		// split into a different number of tokens each).
		if replayed[i].MaxTokens != orig[i].MaxTokens {
			t.Errorf("request %d: max_tokens %d, recorded %d", i, replayed[i].MaxTokens, orig[i].MaxTokens)
		}
	}
}
