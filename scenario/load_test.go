package scenario

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/runnerbench/runner/scenario/envpolicy"
)

var update = flag.Bool("update", false, "rewrite golden files")

// env is a fixed environment for tests, every variable of which the plan may
// read as a public value (the job's "--allow-env '*'").
func env(kv ...string) Options {
	o := jobEnv(kv...)
	o.AllowEnv = allowList("*")
	return o
}

// jobEnv is a fixed environment with no allow-list: add one to o.AllowEnv.
func jobEnv(kv ...string) Options {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return Options{Getenv: func(k string) (string, bool) { v, ok := m[k]; return v, ok }}
}

// allowList parses an allow-list as RUNNER_ALLOW_ENV would hold it.
func allowList(spec string) *envpolicy.AllowList {
	a := &envpolicy.AllowList{}
	if err := a.Add(envpolicy.AllowEnvVar, spec); err != nil {
		panic(err)
	}
	return a
}

const minimal = `version: 1
name: t
endpoints:
  sim:
    simulator: {ttft_ms: 5}
prompts:
  p: {synthetic: {input_tokens: 32}}
stages:
  - name: s
    endpoint: sim
    prompts: p
    concurrency: [1]
`

func load(t *testing.T, src string, opts Options) (*Plan, error) {
	t.Helper()
	return LoadBytes("plan.yaml", []byte(src), t.TempDir(), opts)
}

func mustLoad(t *testing.T, src string, opts Options) *Plan {
	t.Helper()
	p, err := load(t, src, opts)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return p
}

func TestExamplePlansLoad(t *testing.T) {
	files, _ := filepath.Glob("../plans/*.yaml")
	if len(files) < 3 {
		t.Fatalf("want at least 3 example plans, found %d", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			p, err := Load(f, env())
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Stages) == 0 || p.Hash == "" || p.Path != f {
				t.Fatalf("incomplete plan: %+v", p)
			}
			b, _ := os.ReadFile(f)
			if !strings.HasPrefix(string(b), "# yaml-language-server: $schema=../schema/plan.schema.json\n") {
				t.Error("plan does not begin with the yaml-language-server schema comment")
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	p := mustLoad(t, minimal+"    checks:\n      - expr: failed == 0\n", env())
	if p.PromptSet("p").Format != "" {
		t.Error("file defaults applied to a synthetic prompt set")
	}
	s, e, ps := p.Stages[0], p.Endpoint("sim"), p.PromptSet("p")
	got := fmt.Sprintln(s.API, s.Mode, s.OutputTokens.Fixed, *s.Warmup, *s.Temperature, *s.Seed,
		s.Checks[0].Name, s.Checks[0].Scope, s.Checks[0].Severity,
		e.Model, e.ReadyTimeout, e.Timeouts.Connect, e.Timeouts.FirstToken, e.Timeouts.Idle, e.Timeouts.Request,
		ps.Synthetic.Sizing, ps.Format, ps.Column, ps.Turns)
	want := "chat pinned 256 1 0 1 failed == 0 level fail sim 1m0s 10s 2m0s 30s 10m0s calibrated   1\n"
	if got != want {
		t.Errorf("defaults:\n got %s\nwant %s", got, want)
	}
	if p.Endpoint("nope") != nil || p.PromptSet("nope") != nil {
		t.Error("lookup of an undefined name should be nil")
	}
	// Defaults never override what the plan says, and a second pass changes nothing.
	p = mustLoad(t, strings.Replace(minimal, "concurrency: [1]", "concurrency: [1]\n    api: completions\n    mode: natural\n    warmup: 0\n    temperature: 0.7\n    seed: 9\n    output_tokens: 17", 1), env())
	s = p.Stages[0]
	before := fmt.Sprintln(s.API, s.Mode, s.OutputTokens, *s.Warmup, *s.Temperature, *s.Seed)
	p.ApplyDefaults()
	after := fmt.Sprintln(s.API, s.Mode, s.OutputTokens, *s.Warmup, *s.Temperature, *s.Seed)
	if before != "completions natural 17 0 0.7 9\n" || after != before {
		t.Errorf("explicit values: before %q after %q", before, after)
	}
	// Rate stages get poisson arrivals.
	p = mustLoad(t, strings.Replace(minimal, "concurrency: [1]", "rate: [0.5, 2]\n    duration: 10s", 1), env())
	if p.Stages[0].Arrival != "poisson" || p.Stages[0].Burstiness != 0 {
		t.Errorf("rate defaults: arrival %q burstiness %g", p.Stages[0].Arrival, p.Stages[0].Burstiness)
	}
	p = mustLoad(t, strings.Replace(minimal, "concurrency: [1]", "rate: [2]\n    requests: 5\n    arrival: gamma", 1), env())
	if p.Stages[0].Burstiness != 1 {
		t.Errorf("gamma burstiness default: %g", p.Stages[0].Burstiness)
	}
}

// TestUnknownKeyInEveryBlock proves strict decoding reaches every nested block,
// including the simulator config and Length mappings, with line and column.
func TestUnknownKeyInEveryBlock(t *testing.T) {
	full := `version: 1
name: t
description: d
endpoints:
  e:
    base_url: http://127.0.0.1:1/v1
    model: m
    api_key: k
    headers: {X-A: b}
    metrics_url: http://127.0.0.1:1/metrics
    counters: {spec_drafts: a, spec_draft_tokens: b, spec_accepted_tokens: c, prefix_cache_queries: d, prefix_cache_hits: e}
    ready_timeout: 5s
    timeouts: {connect: 1s, first_token: 2s, idle: 3s, request: 4s}
    tls: {ca_file: "", insecure_skip_verify: false, server_name: x}
  s:
    simulator:
      ttft_ms: 5
      faults:
        http_500: 0.1
prompts:
  syn:
    synthetic:
      input_tokens: {mean: 100, stdev: 10, min: 50, max: 150}
      sizing: reference
      shared_prefix: {groups: 2, prefix_tokens: 16}
  in: {inline: [a, b], turns: 2}
stages:
  - name: st
    endpoint: e
    prompts: syn
    api: chat
    mode: natural
    input_tokens: {min: 1, max: 9}
    output_tokens: 8
    rate: [1]
    arrival: gamma
    burstiness: 2
    max_concurrency: 4
    requests: 3
    duration: 1s
    warmup: 0
    temperature: 0.5
    extra_body: {anything: {goes: [1, 2]}}
    seed: 3
    slo: {ttft_ms: 1, tpot_ms: 2, e2e_ms: 3}
    checks:
      - {name: c, expr: "failed == 0", when: "concurrency > 0", scope: level, severity: warn}
`
	if _, err := load(t, full, env()); err != nil {
		t.Fatalf("the full plan must load: %v", err)
	}
	lines := strings.Split(full, "\n")
	// Insert "zzz_bogus: 1" into each flow mapping (and as a new line in block
	// mappings), and expect it rejected at its exact position.
	tried := 0
	for i, line := range lines {
		var mutated []string
		var col int
		switch strings.TrimSpace(line) {
		case "endpoints:", "prompts:", "stages:", "checks:":
			continue // a map of names or a list: there is no key to misspell
		}
		if j := strings.Index(line, "{"); j >= 0 && !strings.Contains(line, "extra_body") && !strings.Contains(line, "headers") {
			mutated = append(append(append([]string{}, lines[:i]...), line[:j+1]+"zzz_bogus: 1, "+line[j+1:]), lines[i+1:]...)
			col = j + 2
		} else if strings.HasSuffix(line, ":") && !strings.HasPrefix(strings.TrimSpace(line), "-") {
			indent := len(line) - len(strings.TrimLeft(line, " ")) + 2
			ins := strings.Repeat(" ", indent) + "zzz_bogus: 1"
			mutated = append(append(append([]string{}, lines[:i+1]...), ins), lines[i+1:]...)
			col = indent + 1
		} else if strings.HasPrefix(line, "  - name: st") {
			ins := "    zzz_bogus: 1"
			mutated = append(append(append([]string{}, lines[:i+1]...), ins), lines[i+1:]...)
			col = 5
			i++
		} else {
			continue
		}
		wantLine := i + 1
		if !strings.Contains(line, "{") {
			wantLine = i + 2
			if strings.HasPrefix(line, "  - name: st") {
				wantLine = i + 1
			}
		}
		tried++
		_, err := load(t, strings.Join(mutated, "\n"), env())
		want := fmt.Sprintf("plan.yaml:%d:%d: unknown key \"zzz_bogus\"", wantLine, col)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("line %d %q: want %q, got %v", i+1, line, want, err)
		}
	}
	if tried < 15 {
		t.Errorf("only %d blocks tried", tried)
	}
	// Top level too.
	if _, err := load(t, "zzz_bogus: 1\n"+full, env()); err == nil || !strings.Contains(err.Error(), `plan.yaml:1:1: unknown key "zzz_bogus" in the plan`) {
		t.Errorf("top-level unknown key: %v", err)
	}
}

func TestDidYouMean(t *testing.T) {
	_, err := load(t, strings.Replace(minimal, "concurrency:", "concurency:", 1), env())
	if err == nil || !strings.Contains(err.Error(), `plan.yaml:12:5: unknown key "concurency" in stages[0] (did you mean "concurrency"?)`) {
		t.Errorf("got %v", err)
	}
}

func TestEnvExpansion(t *testing.T) {
	src := strings.Replace(minimal, "    simulator: {ttft_ms: 5}\n", `    base_url: ${BASE:-http://127.0.0.1:9/v1}
    model: ${MODEL}
    api_key: ${KEY}
    headers: {X-Token: "tok-${KEY}"}
  other:
    simulator: {model: "$${literal}"}
`, 1)
	p := mustLoad(t, src, env("MODEL", "llama", "KEY", "sekrit-123"))
	e := p.Endpoint("sim")
	if e.BaseURL != "http://127.0.0.1:9/v1" || e.Model != "llama" || e.APIKey.Reveal() != "sekrit-123" || e.Headers["X-Token"].Reveal() != "tok-sekrit-123" {
		t.Errorf("expanded: %+v", e)
	}
	if got := p.Endpoint("other").Simulator.Model; got != "${literal}" {
		t.Errorf("escaped: %q", got)
	}
	_, err := load(t, src, env("KEY", "x"))
	if err == nil || !strings.Contains(err.Error(), "plan.yaml:6:12: endpoints.sim.model: environment variable MODEL is not set") {
		t.Errorf("unset variable: %v", err)
	}
}

func TestSecretsRedacted(t *testing.T) {
	src := strings.Replace(minimal, "    simulator: {ttft_ms: 5}\n", "    base_url: http://127.0.0.1:9/v1\n    api_key: ${KEY}\n    headers: {X-Api-Key: hdr-secret-9}\n", 1)
	p := mustLoad(t, src, env("KEY", "sk-live-abc"))
	y, err := yaml.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	j, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]string{"yaml": string(y), "json": string(j), "fmt": fmt.Sprintf("%v %+v %#v", *p.Endpoint("sim"), *p.Endpoint("sim"), *p.Endpoint("sim"))} {
		if strings.Contains(s, "sk-live-abc") || strings.Contains(s, "hdr-secret-9") {
			t.Errorf("%s form leaks a secret:\n%s", name, s)
		}
		if !strings.Contains(s, Redacted) {
			t.Errorf("%s form does not show %s:\n%s", name, Redacted, s)
		}
	}
	// Secrets are never echoed in errors either.
	_, err = load(t, strings.Replace(src, "base_url: http://127.0.0.1:9/v1", "base_url: http://127.0.0.1:9/v1\n    bogus: 1", 1), env("KEY", "sk-live-abc"))
	if err == nil || strings.Contains(err.Error(), "sk-live-abc") {
		t.Errorf("error: %v", err)
	}
}

func TestLength(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cases := []struct {
		src          string
		nominal      int
		lo, hi       int
		varies, norm bool
	}{
		{"128", 128, 128, 128, false, false},
		{"{min: 10, max: 20}", 15, 10, 20, true, false},
		{"{mean: 100, stdev: 30, min: 60, max: 130}", 100, 60, 130, true, true},
		{"{mean: 5, stdev: 50}", 5, 1, 1 << 30, true, true},
	}
	for _, c := range cases {
		p := mustLoad(t, strings.Replace(minimal, "{input_tokens: 32}", "{input_tokens: "+c.src+"}", 1), env())
		l := p.PromptSet("p").Synthetic.InputTokens
		if l.Nominal() != c.nominal || l.IsNormal() != c.norm {
			t.Errorf("%s: nominal %d normal %v", c.src, l.Nominal(), l.IsNormal())
		}
		seen := map[int]bool{}
		for range 2000 {
			v := l.Sample(r)
			if v < c.lo || v > c.hi {
				t.Fatalf("%s: sample %d outside [%d, %d]", c.src, v, c.lo, c.hi)
			}
			seen[v] = true
		}
		if c.varies != (len(seen) > 1) {
			t.Errorf("%s: %d distinct samples", c.src, len(seen))
		}
		if c.lo == 10 && (!seen[10] || !seen[20]) {
			t.Errorf("uniform never reached its bounds")
		}
		// Round trip through the printed forms.
		var back Length
		b, _ := json.Marshal(l)
		if err := json.Unmarshal(b, &back); err != nil || back != l {
			t.Errorf("json round trip of %s: %s -> %+v (%v)", c.src, b, back, err)
		}
		y, _ := yaml.Marshal(l)
		back = Length{}
		if err := yaml.Unmarshal(y, &back); err != nil || back != l {
			t.Errorf("yaml round trip of %s: %s -> %+v (%v)", c.src, y, back, err)
		}
	}
}

func TestPromptFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.jsonl", "{\"prompt\": \"one\", \"id\": 7}\n\n{\"messages\": [{\"role\": \"user\", \"content\": \"two\"}], \"max_tokens\": 9}\n")
	write("b.json", `[
 {"conversations": [{"from": "gpt", "value": "x"}, {"from": "human", "value": "first human"}]},
 {"conversations": [{"from": "gpt", "value": "no human"}]},
 {"conversations": [{"from": "human", "value": "second"}, {"from": "human", "value": "not this"}]}
]`)
	write("c.csv", "\ufefftext,id\r\n\"hello, world\",1\r\nbye,2\r\n")
	write("d.txt", "x")
	// The sets are held only as far as a stage can send them: each is sent
	// by a stage of 8 requests, more than any file here holds.
	src := strings.Replace(minimal, "  p: {synthetic: {input_tokens: 32}}\n", `  p: {synthetic: {input_tokens: 32}}
  a: {file: a.jsonl}
  b: {file: b.json}
  c: {file: c.csv, column: text}
  i: {inline: [x, y, z]}
`, 1) + `  - {name: a, endpoint: sim, prompts: a, concurrency: [1], requests: 8}
  - {name: b, endpoint: sim, prompts: b, concurrency: [1], requests: 8}
  - {name: c, endpoint: sim, prompts: c, concurrency: [1], requests: 8}
`
	p, err := LoadBytes("plan.yaml", []byte(src), dir, env())
	if err != nil {
		t.Fatal(err)
	}
	a := p.PromptSet("a").Loaded
	if len(a) != 2 || a[0].Text != "one" || a[0].Line != 1 || a[1].Messages[0].Content != "two" || a[1].MaxTokens != 9 || a[1].Line != 3 {
		t.Errorf("jsonl: %+v", a)
	}
	b := p.PromptSet("b").Loaded
	if len(b) != 2 || b[0].Text != "first human" || b[1].Text != "second" || b[0].Line != 2 || b[1].Line != 4 {
		t.Errorf("sharegpt: %+v", b)
	}
	c := p.PromptSet("c").Loaded
	if len(c) != 2 || c[0].Text != "hello, world" || c[1].Text != "bye" || c[1].Line != 3 {
		t.Errorf("csv: %+v", c)
	}
	if i := p.PromptSet("i").Loaded; len(i) != 3 || i[2].Text != "z" {
		t.Errorf("inline: %+v", i)
	}

	// Problems are positioned in the prompt file.
	write("bad.jsonl", "{\"prompt\": \"ok\"}\nnot json\n{\"prompt\": \"\"}\n")
	write("bad.csv", "id,prompt\n1,\n")
	write("quote.csv", "prompt\n00\"0\n") // a failed Read, which has no field positions
	for _, tc := range []struct{ set, want string }{
		{"{file: bad.jsonl}", filepath.Join(dir, "bad.jsonl") + ":2: not valid JSON"},
		{"{file: bad.jsonl}", filepath.Join(dir, "bad.jsonl") + `:3: "prompt" is empty`},
		{"{file: bad.csv}", filepath.Join(dir, "bad.csv") + `:2: empty "prompt" value`},
		{"{file: c.csv}", filepath.Join(dir, "c.csv") + `:1: no "prompt" column in the header`},
		{"{file: quote.csv}", filepath.Join(dir, "quote.csv") + `:2: invalid CSV: parse error on line 2, column 3: bare " in non-quoted-field`},
		{"{file: d.txt}", "cannot tell the format"},
		{"{file: d.txt, format: jsonl}", filepath.Join(dir, "d.txt") + ":1: not valid JSON"},
		{"{file: missing.jsonl}", `plan.yaml:8:13: prompts.x.file: cannot read prompt file "missing.jsonl": no such file or directory`},
		{"{file: b.json, format: csv}", "no \"prompt\" column"},
	} {
		s := strings.Replace(minimal, "  p: {synthetic: {input_tokens: 32}}\n", "  p: {synthetic: {input_tokens: 32}}\n  x: "+tc.set+"\n", 1)
		_, err := LoadBytes("plan.yaml", []byte(s), dir, env())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: want %q, got %v", tc.set, tc.want, err)
		}
	}
}

func TestCheckCompile(t *testing.T) {
	src := minimal + `    checks:
      - expr: ttft_p95_ms < 500 && baseline != nil && baseline.e2e_p99_ms > 0
      - {scope: stage, expr: "all(points, .failed == 0) && len(points) > 1"}
      - name: bad
        expr: failed == 0 && ttft_p95 < 1
`
	_, err := load(t, src, env())
	want := "plan.yaml:17:30: stages[0].checks[2].expr: invalid check expression: unknown name ttft_p95 (did you mean one of ttft_p95_ms, server_ttft_p95_ms?)"
	if err == nil || err.Error() != want {
		t.Fatalf("got  %v\nwant %s", err, want)
	}
	block := minimal + `    checks:
      - name: multi-line
        expr: |
          failed == 0 &&
            ttft_p95 < 1
`
	_, err = load(t, block, env())
	if want := "plan.yaml:17:13: stages[0].checks[0].expr: invalid check expression: unknown name ttft_p95"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("block scalar position:\n got %v\nwant %s", err, want)
	}
	p := mustLoad(t, strings.Split(src, "      - name: bad")[0], env())
	c := p.Stages[0].Checks
	if got := fmt.Sprint(c[0].Metrics, c[1].Metrics); got != "[ttft_p95_ms baseline.e2e_p99_ms] [failed]" {
		t.Errorf("metrics read: %s", got)
	}
	if c[0].Line != 14 || c[0].Column != 15 || c[0].Program == nil || c[1].Program == nil {
		t.Errorf("check position/program: %+v", c[0])
	}
}

// TestInvalidPlans loads every broken plan under testdata/invalid and compares
// the messages with the golden file beside it (go test -update rewrites them).
func TestInvalidPlans(t *testing.T) {
	files, _ := filepath.Glob("testdata/invalid/*.yaml")
	if len(files) < 25 {
		t.Fatalf("want at least 25 broken plans, found %d", len(files))
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) {
			// The broken prompt files live in testdata/prompts, beside the
			// plans' directory: the job allows it, as --allow-dir would.
			opts := env()
			opts.AllowDirs = []string{"testdata/prompts"}
			_, err := Load(f, opts)
			if err == nil {
				t.Fatal("loaded without error")
			}
			for _, e := range Errors(err) {
				if e.Line == 0 && !strings.Contains(e.Msg, "empty") {
					t.Errorf("error without a line: %v", e)
				}
			}
			checkGolden(t, strings.TrimSuffix(f, ".yaml")+".golden", err.Error()+"\n", "TestInvalidPlans")
		})
	}
}

// checkGolden compares got with the golden file (rewritten with -update);
// test names the test that -update must run.
func checkGolden(t *testing.T, golden, got, test string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./scenario -run %s -update)", err, test)
	}
	if got != string(want) {
		t.Errorf("messages differ from %s:\n got:\n%s\nwant:\n%s", golden, got, want)
	}
}

// aliasBomb is a plan whose 2,000 aliases of a stage with 1,000 checks
// would be 2 million checks.
func aliasBomb() string {
	checks := strings.Repeat(`{expr: "failed == 0"}, `, 1000)
	return "version: 1\nname: b\nendpoints: {e: {simulator: {}}}\nprompts: {p: {inline: [x]}}\nstages:\n" +
		"  - &s {name: s, endpoint: e, prompts: p, concurrency: [1], checks: [" + checks + "]}\n" +
		strings.Repeat("  - *s\n", 2000)
}

// TestAliasBomb: an alias bomb is one size error, and what it costs is
// bounded by MaxValues, not by what its aliases would expand to: the
// loader allocates at most 1 KiB a value (about 250 bytes measured), where
// expanding the bomb would take eight times MaxValues values. How long that
// takes is the machine's (2-4 s under -race here, 21-36 s seen on a busy
// machine); BenchmarkAliasBomb times it.
func TestAliasBomb(t *testing.T) {
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	_, err := load(t, aliasBomb(), env())
	runtime.ReadMemStats(&m1)
	if err == nil || !strings.Contains(err.Error(), "plan is too large: its aliases expand to more than") {
		t.Fatalf("want a size error, got %.300v", err)
	}
	if n := len(Errors(err)); n != 1 {
		t.Errorf("%d errors, want 1", n)
	}
	if alloc, most := m1.TotalAlloc-m0.TotalAlloc, uint64(MaxValues)<<10; alloc > most {
		t.Errorf("loading the bomb allocated %d MiB, more than 1 KiB for each of the %d values it may hold", alloc>>20, MaxValues)
	}
}

// BenchmarkAliasBomb times refusing TestAliasBomb's plan.
func BenchmarkAliasBomb(b *testing.B) {
	src := []byte(aliasBomb())
	dir := b.TempDir()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := LoadBytes("plan.yaml", src, dir, env()); err == nil {
			b.Fatal("the bomb loaded")
		}
	}
}

func TestEnvExpansionInExtraBody(t *testing.T) {
	src := minimal + `    extra_body:
      chat_template_kwargs: {enable_thinking: false, tag: "${TAG:-none}"}
      stop: ["${STOP}", plain]
      n: 1
`
	p := mustLoad(t, src, env("STOP", "</s>"))
	eb := p.Stages[0].ExtraBody
	kw, _ := eb["chat_template_kwargs"].(map[string]any)
	if kw["tag"] != "none" || kw["enable_thinking"] != false {
		t.Errorf("chat_template_kwargs = %#v", kw)
	}
	if stop, _ := eb["stop"].([]any); len(stop) != 2 || stop[0] != "</s>" || stop[1] != "plain" {
		t.Errorf("stop = %#v", eb["stop"])
	}
	if eb["n"] != 1 {
		t.Errorf("n = %#v (numbers must stay numbers)", eb["n"])
	}
	_, err := load(t, src, env())
	if err == nil || !strings.Contains(err.Error(), "plan.yaml:15:14: stages[0].extra_body.stop[0]: environment variable STOP is not set") {
		t.Errorf("unset variable in extra_body: %v", err)
	}
}

// TestTraces: trace prompt sets load their files (sorted by arrival), take
// their defaults, and a replay stage's settings and window are checked
// against what the trace holds.
func TestTraces(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("m.jsonl", `{"timestamp": 500, "input_length": 600, "output_length": 8, "hash_ids": [1, 2]}
{"timestamp": 0, "input_length": 100, "output_length": 4, "hash_ids": [1]}
{"timestamp": 1500, "input_length": 100, "output_length": 4, "hash_ids": [7]}
`)
	write("q.jsonl", "{\"prompt\": \"a\"}\n{\"prompt\": \"b\"}\n")
	write("r.jsonl", `{"stage":"s","level":0,"seq":0,"start":"2026-01-02T03:04:05Z","dispatch_lag_ms":0,"input_tokens":5,"max_tokens":4,"prompt":1}
{"stage":"s","level":0,"seq":1,"start":"2026-01-02T03:04:06Z","dispatch_lag_ms":0,"input_tokens":5,"max_tokens":4,"prompt":2}
`)
	plan := func(prompts, stage string) string {
		return "version: 1\nname: t\nendpoints:\n  sim: {simulator: {ttft_ms: 5}}\nprompts:\n" + prompts +
			"stages:\n  - name: s\n    endpoint: sim\n" + stage
	}
	p, err := LoadBytes("plan.yaml", []byte(plan("  m: {trace: {file: m.jsonl, format: mooncake}}\n", "    prompts: m\n")), dir, env())
	if err != nil {
		t.Fatal(err)
	}
	tr, st := p.PromptSet("m").Trace, p.Stages[0]
	if len(tr.Requests) != 3 || tr.Requests[0].Line != 2 || tr.Requests[1].At != 500*time.Millisecond || tr.BlockTokens != 512 {
		t.Fatalf("trace %+v", tr)
	}
	if st.Replay == nil || st.Replay.Speedup != 1 || st.Replay.Start != 0 || st.Replay.End != 0 {
		t.Fatalf("replay defaults %+v", st.Replay)
	}
	for _, tc := range []struct{ prompts, stage, want string }{
		// The window [1s, 2s) holds one request.
		{"  m: {trace: {file: m.jsonl, format: mooncake}}\n", "    prompts: m\n    replay: {start: 1s, end: 2s}\n",
			"plan.yaml:11:13: stages[0]: the replay's window holds 1 of the trace's 3 requests: a replay needs at least two"},
		{"  m: {trace: {file: m.jsonl, format: mooncake, block_tokens: 64}}\n", "    prompts: m\n",
			filepath.Join(dir, "m.jsonl") + ":1: input_length 600 takes 10 blocks of 64 tokens, but hash_ids has 2: is block_tokens right?"},
		// The second record sent prompt 2 of a set of two.
		{"  q: {file: q.jsonl}\n  r: {trace: {file: r.jsonl, format: runner, prompts: q}}\n", "    prompts: r\n",
			filepath.Join(dir, "r.jsonl") + `:2: the record sent prompt 2, but prompt set "q" holds 2 prompts`},
		{"  r: {trace: {file: r.jsonl, format: runner, stage: other}}\n", "    prompts: r\n",
			`plan.yaml:6:21: prompts.r.trace.file: trace file "r.jsonl" holds no measured request of stage "other"`},
		{"  m: {trace: {file: m.jsonl, format: mooncake, prompts: m}}\n", "    prompts: m\n",
			"plan.yaml:6:57: prompts.m.trace: prompts applies to runner traces only"},
	} {
		_, err := LoadBytes("plan.yaml", []byte(plan(tc.prompts, tc.stage)), dir, env())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s%s: want %q, got %v", tc.prompts, tc.stage, tc.want, err)
		}
	}
	_, err = LoadBytes("plan.yaml", []byte(plan("  q: {file: q.jsonl}\n  r: {trace: {file: r.jsonl, format: runner, prompts: q, level: 0}}\n", "    prompts: r\n    replay: {speedup: 2}\n    requests: 1\n")), dir, env())
	if err == nil || !strings.Contains(err.Error(), "the replay's window holds 1 of the trace's 2 requests") {
		t.Fatalf("requests cut the window to one: %v", err)
	}
}
