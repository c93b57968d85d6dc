package runner

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/checks"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
	"github.com/runnerbench/runner/sim"
)

// noEnv loads plans with an empty environment and no allow-list.
var noEnv = scenario.Options{Getenv: func(string) (string, bool) { return "", false }}

// meanStdev of xs (sample stdev).
func meanStdev(xs []float64) (mean, sd float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		sd += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(sd / float64(len(xs)-1))
}

// bodiesByNonce maps each chat body the spy saw to the nonce its first
// message leads with.
func bodiesByNonce(sp *spy, path string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, c := range sp.requests(path) {
		var text string
		if ms, ok := c.body["messages"].([]any); ok && len(ms) > 0 {
			text, _ = ms[0].(map[string]any)["content"].(string)
		} else {
			text, _ = c.body["prompt"].(string)
		}
		if i := strings.Index(text, "["); i >= 0 && len(text) >= i+14 && text[i+13] == ']' {
			out[text[i+1:i+13]] = c.body
		}
	}
	return out
}

// nonceSpread is how far one prompt's token count may stray from the
// calibrated length because of its nonce alone: calibration learns the mean
// count of the 12-hex-digit nonce, and on the simulator's tokenizer a nonce
// is 5 to 15 tokens (8 to 12 in 95% of 200,000 draws), so up to 5 either way.
const nonceSpread = 5

// TestSyntheticLengths: input and output lengths are drawn per request from
// their distributions (seeded): what the simulator received and counted
// follows them.
func TestSyntheticLengths(t *testing.T) {
	s := startSim(t, fastSim())
	sp := startSpy(t, s)
	e, col := newEngine(t, sp.URL+"/v1", nil)
	plan := &scenario.Plan{Prompts: map[string]*scenario.PromptSet{"p": {Synthetic: &scenario.Synthetic{
		InputTokens: scenario.Length{Mean: 200, Stdev: 50, Min: 100, Max: 300},
	}}}}
	st := stage(0, 8)
	st.OutputTokens = scenario.Length{Min: 10, Max: 40}
	st.Requests.Each = 240
	seed := int64(5)
	st.Seed = &seed
	res := runStage(t, e, plan, st)
	p := res.Points[0]
	// At most the client's own warning; a busy machine may add the
	// simulator's (sim_behind), which says nothing of the lengths.
	warned := slices.DeleteFunc(slices.Clone(p.Warnings), func(w string) bool { return strings.HasPrefix(w, "sim_behind: ") })
	if p.Completed != 240 || p.InputTokens != 200 || p.OutputTokens != 25 || p.OutputLenMismatch != 0 || len(warned) > 1 {
		t.Fatalf("completed %d, nominal in %d out %d, mismatch %d, warnings %q", p.Completed, p.InputTokens, p.OutputTokens, p.OutputLenMismatch, p.Warnings)
	}
	bodies := bodiesByNonce(sp, "/v1/chat/completions")
	var outs, ins []float64
	firstRun := map[int]float64{}
	for _, r := range col.measured() {
		b := bodies[r.Nonce]
		if b == nil {
			t.Fatalf("no body for %s", r.Nonce)
		}
		mt := b["max_tokens"].(float64)
		if int(mt) != r.MaxTokens || r.OutputTokens != r.MaxTokens {
			t.Fatalf("body max_tokens %v, record %d, output %d", mt, r.MaxTokens, r.OutputTokens)
		}
		outs = append(outs, mt)
		firstRun[r.Seq] = mt
		ins = append(ins, float64(truth(t, s, r.Nonce).PromptTokens))
	}
	// Output: uniform on 10..40 (mean 25, stdev √((31²−1)/12) ≈ 8.94).
	m, sd := meanStdev(outs)
	if slices.Min(outs) < 10 || slices.Max(outs) > 40 || slices.Min(outs) > 12 || slices.Max(outs) < 38 ||
		math.Abs(m-25) > 1.5 || math.Abs(sd-8.94) > 1 {
		t.Errorf("max_tokens in [%v, %v], mean %.2f, stdev %.2f; want uniform 10..40", slices.Min(outs), slices.Max(outs), m, sd)
	}
	// Input: normal(200, 50) clipped to [100, 300] (stdev ≈ 44 after clipping);
	// the server's count is the drawn length within the ±2% the calibration
	// promises, give or take the nonce's spread (96..304 seen over 40 runs).
	m, sd = meanStdev(ins)
	if slices.Min(ins) < 100*0.98-nonceSpread || slices.Max(ins) > 300*1.02+nonceSpread || math.Abs(m-200) > 8 || sd < 36 || sd > 52 {
		t.Errorf("prompt tokens in [%v, %v], mean %.2f, stdev %.2f; want normal(200, 50) in [100, 300]", slices.Min(ins), slices.Max(ins), m, sd)
	}

	// The same seed draws the same lengths for the same requests.
	e2, col2 := newEngine(t, sp.URL+"/v1", nil)
	st.Requests.Each = 40
	runStage(t, e2, plan, st)
	bodies = bodiesByNonce(sp, "/v1/chat/completions")
	for _, r := range col2.measured() {
		if got := bodies[r.Nonce]["max_tokens"].(float64); got != firstRun[r.Seq] {
			t.Fatalf("seq %d: max_tokens %v, first run %v", r.Seq, got, firstRun[r.Seq])
		}
	}
}

// TestRamp: a closed-loop level's workers start spread over the ramp.
func TestRamp(t *testing.T) {
	s := startSim(t, fastSim())
	e, col := newEngine(t, s.URL(), nil)
	st := stage(4, 4)
	st.Requests.Each = 4 // one per worker: all are first requests
	st.Ramp = scenario.Duration(200 * time.Millisecond)
	res := runStage(t, e, synthPlan(20, "reference"), st)
	if res.Points[0].Completed != 4 {
		t.Fatalf("completed %d", res.Points[0].Completed)
	}
	offs := dueOffsets(col.measured())
	slices.Sort(offs)
	for i := len(offs) - 1; i >= 0; i-- {
		offs[i] -= offs[0] // from the first worker's start
	}
	for i, want := range []float64{0, 50, 100, 150} {
		if math.Abs(offs[i]-want) > 0.01 {
			t.Fatalf("worker %d due at %.3f ms, want %.0f (all %v)", i, offs[i], want, offs)
		}
	}
}

// TestSharedPrefixHitRate: with shared prefixes the server's prefix cache
// serves most of each prompt (and the level does not warn about it); without,
// the nonce keeps the hit rate near zero.
func TestSharedPrefixHitRate(t *testing.T) {
	s := startSim(t, fastSim())
	sp := startSpy(t, s)
	e, col := newEngine(t, sp.URL+"/v1", nil)
	plan := &scenario.Plan{Prompts: map[string]*scenario.PromptSet{
		"shared": {Synthetic: &scenario.Synthetic{InputTokens: scenario.Length{Fixed: 320},
			SharedPrefix: &scenario.SharedPrefix{Groups: 2, PrefixTokens: 256}}},
		"unique": {Synthetic: &scenario.Synthetic{InputTokens: scenario.Length{Fixed: 320}}},
	}}
	st := stage(4, 4)
	st.Requests.Each = 24
	st.Prompts = "shared"
	shared := runStage(t, e, plan, st).Points[0]
	st.Prompts = "unique"
	unique := runStage(t, e, plan, st).Points[0]
	if shared.PrefixCacheHitRate == nil || *shared.PrefixCacheHitRate < 0.6 {
		t.Errorf("shared prefixes: hit rate %v", deref(shared.PrefixCacheHitRate))
	}
	if unique.PrefixCacheHitRate == nil || *unique.PrefixCacheHitRate > 0.05 {
		t.Errorf("unique prompts: hit rate %v", deref(unique.PrefixCacheHitRate))
	}
	for _, w := range shared.Warnings {
		if strings.Contains(w, "nonce") {
			t.Errorf("shared-prefix level warns: %s", w)
		}
	}
	// The nonce goes after the group's prefix.
	groups := map[string]int{}
	for _, c := range sp.requests("/v1/chat/completions") {
		text := c.body["messages"].([]any)[0].(map[string]any)["content"].(string)
		if !strings.HasPrefix(text, "[prefix-") {
			continue
		}
		pre, rest, ok := strings.Cut(text, " [")
		if !ok || len(rest) < 13 || rest[12] != ']' {
			t.Fatalf("no nonce after the prefix: %.80q", text)
		}
		groups[pre]++
	}
	if len(groups) != 2 {
		t.Fatalf("%d distinct prefixes, want 2", len(groups))
	}
	// The simulator takes the leading [prefix-g] tag for a nonce.
	cached, n := 0, 0
	for _, tr := range s.Truth() {
		if strings.HasPrefix(tr.Nonce, "prefix-") {
			n++
			if tr.CachedTokens >= 192 {
				cached++
			}
		}
	}
	if n != 24 || cached < 20 {
		t.Errorf("%d of %d shared-prefix requests were served mostly from the cache", cached, n)
	}
	if len(col.measured()) != 48 {
		t.Errorf("%d records", len(col.measured()))
	}
}

// TestPromptFiles runs plans/prompt-files.yaml and checks that the simulator
// received the files' prompts, in order and after the nonce, with per-line
// max_tokens.
func TestPromptFiles(t *testing.T) {
	plan, err := scenario.Load("../plans/prompt-files.yaml", noEnv)
	if err != nil {
		t.Fatal(err)
	}
	s := startSim(t, *plan.Endpoints["sim"].Simulator)
	sp := startSpy(t, s)
	type want struct {
		text      string
		system    string // a chat line's system message
		maxTokens int
	}
	wants := map[string][]want{
		"jsonl": {
			{text: "Explain what a KV cache stores, in one paragraph.", maxTokens: 48},
			{text: "Why does batching more sequences raise throughput but also per-token latency?", maxTokens: 32},
			{text: "What is speculative decoding?", system: "You answer in one sentence.", maxTokens: 24},
			{text: "Name three ways to shorten time to first token.", maxTokens: 32},
		},
		"sharegpt": {
			{text: "How do I read a Prometheus counter's rate over five minutes?", maxTokens: 32},
			{text: "What is a p99 latency?", maxTokens: 32},
			{text: "Write a haiku about load testing.", maxTokens: 32},
		},
		"csv": {
			{text: "What limits decode speed on a GPU, memory bandwidth or compute?", maxTokens: 32},
			{text: "Describe paged attention, in plain words.", maxTokens: 32},
			{text: "When is an open-loop benchmark better than a closed-loop one?", maxTokens: 32},
		},
		"inline": {
			{text: "Summarise the CAP theorem in two sentences.", maxTokens: 64},
			{text: "Give one reason to pin output lengths in a benchmark.", maxTokens: 64},
		},
	}
	for _, st := range plan.Stages {
		e, col := newEngine(t, sp.URL+"/v1", plan.Endpoints["sim"])
		res := runStage(t, e, plan, st)
		if p := res.Points[0]; p.Failed != 0 || p.Completed != st.Requests.Each {
			t.Fatalf("stage %s: %d completed, %d failed (%v)", st.Name, p.Completed, p.Failed, p.Error)
		}
		path := "/v1/chat/completions"
		if st.API == "completions" {
			path = "/v1/completions"
		}
		bodies := bodiesByNonce(sp, path)
		ws := wants[st.Name]
		for _, r := range col.measured() {
			w, b := ws[r.Seq%len(ws)], bodies[r.Nonce]
			if b == nil {
				t.Fatalf("stage %s: no body for request %d", st.Name, r.Seq)
			}
			lead := "[" + r.Nonce + "] "
			var got []string
			if ms, ok := b["messages"].([]any); ok {
				for _, m := range ms {
					got = append(got, m.(map[string]any)["role"].(string)+": "+m.(map[string]any)["content"].(string))
				}
			} else {
				got = []string{"prompt: " + b["prompt"].(string)}
			}
			var exp []string
			switch {
			case path == "/v1/completions":
				exp = []string{"prompt: " + lead + w.text}
			case w.system != "":
				exp = []string{"system: " + lead + w.system, "user: " + w.text}
			default:
				exp = []string{"user: " + lead + w.text}
			}
			if !slices.Equal(got, exp) {
				t.Errorf("stage %s request %d sent %q, want %q", st.Name, r.Seq, got, exp)
			}
			if st.Mode != "natural" && int(b["max_tokens"].(float64)) != w.maxTokens {
				t.Errorf("stage %s request %d: max_tokens %v, want %d", st.Name, r.Seq, b["max_tokens"], w.maxTokens)
			}
		}
		if o := checks.EvaluateStage(st, res, nil); checks.Failed(o) {
			t.Errorf("stage %s: checks failed: %+v", st.Name, o)
		}
	}
}

// TestExamplePlans runs the load-shape example plans against their
// simulators; every request must succeed and every check pass.
func TestExamplePlans(t *testing.T) {
	if testing.Short() {
		t.Skip("runs several seconds of example plans")
	}
	for _, name := range []string{"open-loop", "lengths", "shared-prefix", "multi-turn", "responses", "messages", "tools", "embeddings", "images", "until", "chat-service", "ramp", "lora-mix"} {
		t.Run(name, func(t *testing.T) {
			plan, err := scenario.Load("../plans/"+name+".yaml", noEnv)
			if err != nil {
				t.Fatal(err)
			}
			servers := map[string]*sim.Server{}
			for _, st := range plan.Stages {
				ep := plan.Endpoints[st.Endpoint]
				if servers[st.Endpoint] == nil {
					servers[st.Endpoint] = startSim(t, *ep.Simulator)
				}
				e, err := NewEngine(Target{Name: st.Endpoint, Endpoint: defaulted(ep), BaseURL: servers[st.Endpoint].URL()}, Options{})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				res, err := runStageCtx(ctx, e, plan, st)
				cancel()
				e.Close()
				if err != nil {
					t.Fatalf("stage %s: %v", st.Name, err)
				}
				for _, p := range res.Points {
					if p.Failed != 0 || p.Completed == 0 {
						t.Errorf("stage %s %s turn %d: %d completed, %d failed (%v)", st.Name, p.Label(), p.Turn, p.Completed, p.Failed, p.Error)
					}
				}
				for _, o := range checks.EvaluateStage(st, res, nil) {
					if o.Status == result.StatusFail && !(raceOn && strings.Contains(o.Expr, "achieved_rate")) {
						t.Errorf("stage %s: check %q failed: %s %v", st.Name, o.Name, o.Message, o.Values)
					}
				}
				untilDecided(t, st, res)
			}
		})
	}
}

// untilDecided: every level of an example's stage with until: stopped
// decided, before its cap (the example's thresholds are far from the
// simulator's truth), and said so.
func untilDecided(t *testing.T, st *scenario.Stage, res *result.Stage) {
	t.Helper()
	if !st.UntilPlan().HasUntil() {
		return
	}
	for _, p := range res.Points {
		if p.Stop == nil || p.Stop.Reason != result.StopDecided {
			t.Errorf("stage %s %s: stop %+v", st.Name, p.Label(), p.Stop)
		}
	}
	if ss := res.SweepStop; ss != nil {
		t.Logf("stage %s: %s; skipped %v", st.Name, ss.Text, ss.Skipped)
	}
}

// levelSink keeps each level's record beside the points.
type levelSink struct {
	*aggregate.Stage
	recs []*result.LevelRecord
}

func (s *levelSink) LevelDone(rec *result.LevelRecord) result.Point {
	s.recs = append(s.recs, rec)
	return s.Stage.LevelDone(rec)
}

// TestPerLevelRequests: each level sends its own count of requests, and
// reports its peak in flight, from the requests' times, within what its
// record counted live (which brackets each request from just before its
// send to just after its end) and never above its concurrency.
func TestPerLevelRequests(t *testing.T) {
	s := startSim(t, fastSim())
	e, _ := newEngine(t, s.URL(), nil)
	st := stage(4, 1, 3)
	st.Requests.List = []int{2, 7}
	plan := synthPlan(20, "reference")
	(&scenario.Plan{Prompts: plan.Prompts, Stages: []*scenario.Stage{st}}).ApplyDefaults()
	sink := &levelSink{Stage: aggregate.NewStage(0)}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.RunStage(ctx, plan.LoadPlan(st), sink); err != nil {
		t.Fatal(err)
	}
	res := sink.Result()
	for i, want := range []struct{ n, conc int }{{2, 1}, {7, 3}} {
		p, rec := res.Points[i], sink.recs[i]
		if p.NRequests != want.n || p.Completed != want.n {
			t.Fatalf("%s: %d requests (%d completed), want %d", p.Label(), p.NRequests, p.Completed, want.n)
		}
		if p.MaxInFlight == nil || *p.MaxInFlight < 1 || *p.MaxInFlight > rec.MaxInFlight || rec.MaxInFlight > want.conc {
			t.Fatalf("%s: max_in_flight %v, live %d, concurrency %d", p.Label(), p.MaxInFlight, rec.MaxInFlight, want.conc)
		}
	}
}
