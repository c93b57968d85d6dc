package scenario

import (
	"strings"
	"testing"
)

// TestLoadDiff: two plans that send the same load (defaults written out or
// not, other checks, another SLO, another credential or ready_timeout) have
// no difference; each change to what is sent is found and named, with both
// values, a URL's password never among them.
func TestLoadDiff(t *testing.T) {
	written := func(src string) *Plan {
		t.Helper()
		p, err := Written("plan.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	run := written(setPlan)
	same := strings.NewReplacer(
		"{name: ok, expr: failed == 0}", "{name: fast, expr: ttft_p95_ms < 500}\n    slo: {ttft_ms: 300}",
		"    concurrency: [1]\n", "    concurrency: [1]\n    seed: 1\n    warmup: 1\n",
		"base_url: http://127.0.0.1:8000/v1", "base_url: http://127.0.0.1:8000/v1\n    api_key: ${KEY}\n    ready_timeout: 5m",
	).Replace(setPlan)
	if d := LoadDiff(run, written(same), "the run's plan", "new.yaml"); d != "" {
		t.Errorf("same load, but: %s", d)
	}
	for _, c := range []struct{ from, to, want string }{
		{"[1, 2, 4]", "[1, 2]", "stages[sweep].concurrency: [1, 2, 4] in the run's plan, [1, 2] in new.yaml"},
		{"input_tokens: 32", "input_tokens: 64", "prompts.p.synthetic.input_tokens: 32 in the run's plan, 64 in new.yaml"},
		{"8000/v1", "8001/v1", `endpoints.target.base_url: "http://127.0.0.1:8000/v1" in the run's plan, "http://127.0.0.1:8001/v1" in new.yaml`},
		{"http://127.0.0.1:8000", "http://u:pw@127.0.0.1:8000", "endpoints.target.base_url"},
		{"  - name: warm", "  - name: cold", "stages: warm, sweep in the run's plan, cold, sweep in new.yaml"},
		{"    concurrency: [1]\n", "    concurrency: [1]\n    output_tokens: 64\n", "stages[warm].output_tokens: 256 in the run's plan, 64 in new.yaml"},
		{"    concurrency: [1]\n", "    concurrency: [1]\n    extra_body: {top_k: 5}\n", "stages[warm].extra_body.top_k: not set in the run's plan, 5 in new.yaml"},
		{"  p: {synthetic", "  q: {synthetic: {input_tokens: 1}}\n  p: {synthetic", "prompts.q: not set in the run's plan, set in new.yaml"},
		{"  p: {synthetic", "  q: {inline: [a, " + strings.Repeat("x", 500) + "]}\n  p: {synthetic", "prompts.q: not set"},
	} {
		next := strings.Replace(setPlan, c.from, c.to, 1)
		if next == setPlan {
			t.Fatalf("%q is not in the plan", c.from)
		}
		d := LoadDiff(run, written(next), "the run's plan", "new.yaml")
		if !strings.Contains(d, c.want) {
			t.Errorf("%s → %s: %q, want %q", c.from, c.to, d, c.want)
		}
		if strings.Contains(d, "pw") {
			t.Errorf("a URL's password in %q", d)
		}
	}
	// A search stage's SLO is load: its targets may read goodput.
	search := `version: 1
name: t
endpoints: {sim: {simulator: {ttft_ms: 5}}}
prompts: {p: {synthetic: {input_tokens: 32}}}
stages:
  - name: s
    endpoint: sim
    prompts: p
    requests: 8
    slo: {ttft_ms: 100}
    search: {over: concurrency, max: 8, targets: [{name: t, expr: goodput >= 0.9}]}
`
	if d := LoadDiff(written(search), written(strings.Replace(search, "ttft_ms: 100", "ttft_ms: 200", 1)), "a", "b"); !strings.Contains(d, "stages[s].slo") {
		t.Errorf("a search's SLO changed: %q", d)
	}
}

// TestWrittenReadsNothing: a plan whose variables are unset and whose
// prompt file is gone still decodes as written.
func TestWrittenReadsNothing(t *testing.T) {
	src := strings.Replace(setPlan, "p: {synthetic: {input_tokens: 32}}", "p: {file: gone.jsonl}", 1)
	src = strings.Replace(src, "http://127.0.0.1:8000/v1", "${TARGET_URL}", 1)
	p, err := Written("plan.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if p.Endpoints["target"].BaseURL != "${TARGET_URL}" || p.Prompts["p"].File != "gone.jsonl" || *p.Stages[0].Seed != DefaultSeed {
		t.Errorf("decoded %+v %+v", p.Endpoints["target"], p.Prompts["p"])
	}
}

// TestLoadDiffLongValues: a long inline prompt that differs is named by its
// place in the list, and shown cut short.
func TestLoadDiffLongValues(t *testing.T) {
	mk := func(prompt string) *Plan {
		t.Helper()
		p, err := Written("p.yaml", []byte(strings.Replace(setPlan, "p: {synthetic: {input_tokens: 32}}", "p: {inline: [short, "+prompt+"]}", 1)))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	d := LoadDiff(mk(strings.Repeat("a", 1000)), mk(strings.Repeat("a", 999)+"b"), "x", "y")
	if !strings.HasPrefix(d, "prompts.p.inline[1]: ") || len(d) > 400 || !strings.Contains(d, "…") {
		t.Errorf("%q", d)
	}
}
