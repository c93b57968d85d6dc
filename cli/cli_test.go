package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runnerbench/runner/result"
)

// run runs the CLI in-process and returns the exit code and the two streams.
func runCLI(t *testing.T, environ map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), &Env{
		Args:   args,
		Stdin:  strings.NewReader(""),
		Stdout: &out,
		Stderr: &errb,
		Getenv: func(k string) (string, bool) { v, ok := environ[k]; return v, ok },
	})
	return code, out.String(), errb.String()
}

func writePlan(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "plan.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const okPlan = `version: 1
name: t
endpoints:
  e:
    base_url: http://127.0.0.1:9/v1
    api_key: ${KEY}
    headers: {X-Secret: hdr-value-42}
prompts:
  p: {synthetic: {input_tokens: 16}}
stages:
  - name: s
    endpoint: e
    prompts: p
    concurrency: [1]
  - name: t
    endpoint: e
    prompts: p
    concurrency: [2]
`

func TestValidate(t *testing.T) {
	good := writePlan(t, okPlan)
	code, out, errs := runCLI(t, map[string]string{"KEY": "sk-very-secret", "RUNNER_ALLOW_ENV": "KEY@127.0.0.1"}, "validate", good)
	if code != 0 || !strings.Contains(out, "ok (1 endpoint, 1 prompt set, 2 stages, 2 levels, 0 checks)") || errs != "" {
		t.Errorf("valid plan: code %d out %q err %q", code, out, errs)
	}
	bad := writePlan(t, strings.Replace(okPlan, "concurrency: [1]", "concurency: [1]\n    mode: pined", 1))
	code, out, errs = runCLI(t, map[string]string{"KEY": "x", "RUNNER_ALLOW_ENV": "KEY@127.0.0.1"}, "validate", good, bad)
	lines := strings.Split(strings.TrimSpace(errs), "\n")
	if code != 2 || len(lines) != 3 || !strings.HasPrefix(lines[0], bad+":14:5: unknown key \"concurency\"") ||
		!strings.HasPrefix(lines[1], bad+":15:11: stages[0].mode") || lines[2] != "runner: 2 problems" {
		t.Errorf("invalid plan: code %d\nstdout %q\nstderr %q", code, out, errs)
	}
	if strings.Contains(errs, "goroutine") || strings.Contains(errs, "panic") {
		t.Errorf("stack trace in user error: %s", errs)
	}
}

func TestValidatePrintRedactsSecrets(t *testing.T) {
	good := writePlan(t, okPlan)
	code, out, errs := runCLI(t, map[string]string{"KEY": "sk-very-secret", "RUNNER_ALLOW_ENV": "KEY@127.0.0.1"}, "validate", "--print", good)
	if code != 0 || errs != "" {
		t.Fatalf("code %d err %q", code, errs)
	}
	if strings.Contains(out, "sk-very-secret") || strings.Contains(out, "hdr-value-42") {
		t.Errorf("--print leaks a secret:\n%s", out)
	}
	for _, want := range []string{"api_key: '[REDACTED]'", "X-Secret: '[REDACTED]'", "mode: pinned", "output_tokens: 256", "first_token: 2m0s"} {
		if !strings.Contains(out, want) {
			t.Errorf("--print output lacks %q:\n%s", want, out)
		}
	}
	// The resolved form is itself a valid plan.
	again := writePlan(t, out)
	if code, _, errs := runCLI(t, nil, "validate", again); code != 0 {
		t.Errorf("printed plan does not validate: %s", errs)
	}
	plans := mustAbs(t, "../plans")
	for _, p := range []string{"../plans/quickstart.yaml", "../plans/natural.yaml", "../plans/slo-gate.yaml", "../plans/replay.yaml"} {
		code, out, errs := runCLI(t, nil, "validate", "--print", p)
		if code != 0 {
			t.Fatalf("%s: %s", p, errs)
		}
		// The printed plan, elsewhere, reads the example's prompt files
		// where the job allows it.
		out = strings.ReplaceAll(out, "file: traces/", "file: "+filepath.Join(plans, "traces")+"/")
		again := writePlan(t, strings.ReplaceAll(out, "file: prompts/", "file: "+filepath.Join(plans, "prompts")+"/"))
		if code, _, errs := runCLI(t, nil, "validate", "--allow-dir", plans, again); code != 0 {
			t.Errorf("printed %s does not validate: %s", p, errs)
		}
	}
}

// TestRunFlagErrors checks the run command's argument handling, which fails
// before any traffic: these never reach the engine.
func TestRunFlagErrors(t *testing.T) {
	good := writePlan(t, okPlan)
	env := map[string]string{"KEY": "k", "RUNNER_ALLOW_ENV": "KEY@127.0.0.1"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{good, "--stage", "x"}, `--stage: plan ` + good + ` has no stage "x"`},
		{[]string{"--stage", "s", "--stage", "y", good}, `has no stage "y"`},
		{[]string{"run", good, "--report", "jsn"}, `unknown format "jsn" (did you mean "json"?)`},
		{[]string{"run", good, "--log-level", "verbose"}, `--log-level: "verbose" is not one of`},
		{[]string{"run", good, "--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"run"}, "no plan given"},
		{[]string{"run", good, good}, "one plan at a time"},
		{[]string{"valdate", good}, `unknown command or plan file "valdate" (did you mean "validate"?)`},
		{[]string{"schema", "plna"}, `unknown schema "plna"`},
		{[]string{}, "no plan given"},
		{[]string{"run", good, "--allow-env", "KEY,OTHER"}, `run: --allow-env: "KEY,OTHER": separate entries with spaces`},
		{[]string{"run", good, "--allow-env", "KEY@https://api.example.com"}, "not a URL"},
		{[]string{"validate", good, "--allow-dir", "/nonexistent-dir-x"}, "validate: --allow-dir /nonexistent-dir-x: not a directory"},
		{[]string{"run", good, "--export", "graphite=http://127.0.0.1:2003"}, `unknown export protocol "graphite"`},
		{[]string{"run", good, "--export", "otlp=ftp://u:pw@127.0.0.1"}, "otlp: ftp://127.0.0.1 is not an http(s) URL"},
		{[]string{"export", "/nonexistent-dir-x"}, "export: no --to PROTOCOL=URL given"},
	} {
		code, _, errs := runCLI(t, env, tc.args...)
		if code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: code %d, stderr %q, want %q", tc.args, code, errs, tc.want)
		}
	}
	// A malformed RUNNER_ALLOW_ENV is the job's mistake, said as such.
	code, _, errs := runCLI(t, map[string]string{"KEY": "k", "RUNNER_ALLOW_ENV": "KEY@"}, "validate", good)
	if code != 2 || !strings.Contains(errs, `validate: RUNNER_ALLOW_ENV: "KEY@": empty host`) {
		t.Errorf("bad RUNNER_ALLOW_ENV: code %d, stderr %q", code, errs)
	}
}

func TestParseRunOptions(t *testing.T) {
	o, err := parseRunOptions(&Env{}, []string{"--quiet", "plan.yaml", "--stage", "a", "--stage=b", "--report", "table, html,table", "--log-format", "json", "--baseline", "b.json", "--", "--weird"})
	if err == nil {
		t.Fatalf("two positionals should be an error, got %+v", o)
	}
	o, err = parseRunOptions(&Env{}, []string{"--quiet", "plan.yaml", "--stage", "a", "--stage=b", "--report", "table, html,table", "--log-format", "json", "--baseline", "b.json", "--out", "o", "--allow-env", "A@h.example", "--allow-env=B", "--allow-dir", "d",
		"--shard", "1/3", "--start-at", "2030-01-01T00:00:00Z", "--slot-warmup", "2s", "--fail-inconclusive", "--set", "stages.s.concurrency=[1]", "--set", "name=x", "--ready-timeout", "5s", "--label", "commit=abc", "--label=engine=x", "--label", "commit=def", "--publish", "results.db", "--export", "otlp=http://127.0.0.1:4318", "--export-interval", "1s", "--slices", "10s"})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(o)
	// --quiet logs warnings and errors only, unless --log-level says otherwise.
	want := `{"PlanPath":"plan.yaml","Out":"o","Reports":["table","html"],"Quiet":true,"Baseline":"b.json","FailInconclusive":true,"Stages":["a","b"],"LogFormat":"json","LogLevel":"warn","NoProgress":true,"Wide":false,"Publish":"results.db","Labels":{"commit":"def","engine":"x"},"AllowEnv":["A@h.example","B"],"AllowDirs":["d"],"Sets":["stages.s.concurrency=[1]","name=x"],"ReadyTimeout":5000000000,"Slices":10000000000,"Shard":"1/3","Shards":0,"StartAt":"2030-01-01T00:00:00Z","SlotWarmup":2000000000,"SlotDrain":30000000000,"Export":[{"To":"otlp","URL":"http://127.0.0.1:4318","Headers":null}],"ExportInterval":1000000000}`
	if string(got) != want {
		t.Errorf("options:\n got %s\nwant %s", got, want)
	}
	if o, _ = parseRunOptions(&Env{}, []string{"--quiet", "--log-level", "info", "plan.yaml"}); o == nil || o.LogLevel != "info" {
		t.Errorf("--quiet overrode an explicit --log-level: %+v", o)
	}
	o, _ = parseRunOptions(&Env{}, []string{"--", "-plan-with-dash.yaml"})
	if o == nil || o.PlanPath != "-plan-with-dash.yaml" || strings.Join(o.Reports, ",") != strings.Join(DefaultReports, ",") || o.NoProgress {
		t.Errorf("after --: %+v", o)
	}
}

func TestHelpAndVersion(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"help"}, {"run", "--help"}, {"validate", "-h"}, {"schema", "--help"}, {"compare", "--help"}, {"version", "--help"}, {"help", "validate"}} {
		code, out, errs := runCLI(t, nil, args...)
		if code != 0 || !strings.Contains(out, "usage:") || errs != "" {
			t.Errorf("%v: code %d out %q err %q", args, code, out, errs)
		}
	}
	code, out, _ := runCLI(t, nil, "run", "--help")
	if code != 0 || !strings.Contains(out, "-baseline") || !strings.Contains(out, "-no-progress") {
		t.Errorf("run --help lacks flags:\n%s", out)
	}
	code, out, _ = runCLI(t, nil, "version")
	if code != 0 || !strings.HasPrefix(out, "runner ") || !strings.Contains(out, "report schema 1") {
		t.Errorf("version: %d %q", code, out)
	}
}

// TestHelpShowsNoSentinelDefaults: no command's help shows a default that
// stands for "off" (compare's --fail-above once showed "(default -1)"), and
// compare refuses a negative --fail-above instead of reading it as off.
func TestHelpShowsNoSentinelDefaults(t *testing.T) {
	for cmd := range commands {
		_, out, errs := runCLI(t, nil, cmd, "--help")
		for _, l := range strings.Split(out+errs, "\n") {
			if strings.Contains(l, "(default -") {
				t.Errorf("%s --help: %s", cmd, strings.TrimSpace(l))
			}
		}
	}
	code, _, errs := runCLI(t, nil, "compare", "a", "b", "--fail-above", "-1")
	if code != 2 || !strings.Contains(errs, "-fail-above") || !strings.Contains(errs, "not a percentage") {
		t.Errorf("compare --fail-above -1: exit %d\n%s", code, errs)
	}
}

func TestSchemaCommand(t *testing.T) {
	for _, which := range []string{"plan", "report"} {
		code, out, _ := runCLI(t, nil, "schema", which)
		var doc map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || !strings.Contains(doc["$id"].(string), which+".schema.json") {
			t.Errorf("schema %s: code %d, %.100q", which, code, out)
		}
	}
	_, plain, _ := runCLI(t, nil, "schema")
	_, plan, _ := runCLI(t, nil, "schema", "plan")
	if plain != plan {
		t.Error("runner schema should print the plan schema")
	}
}

func TestCompare(t *testing.T) {
	dir := t.TempDir()
	write := func(name, plan, stage string, ttft float64, levels ...int) string {
		st := result.Stage{Name: stage}
		for _, c := range levels {
			st.Points = append(st.Points, result.Point{Concurrency: c, NRequests: 10, Completed: 10, TTFTP95Ms: &ttft})
		}
		r := result.Report{SchemaVersion: result.SchemaVersion, Plan: result.Plan{Name: plan, Hash: "h-" + plan}, Stages: []result.Stage{st}}
		b, _ := json.Marshal(r)
		p := filepath.Join(dir, name)
		os.WriteFile(p, b, 0o644)
		return p
	}
	// Reports alone, without their records: point changes, no intervals,
	// no verdict but inconclusive (failed 0 → 0 is the same), and a gate
	// that says it cannot fail (the records' case is in the e2e tests).
	a, b := write("a.json", "p", "s", 100, 1), write("b.json", "p", "s", 150, 1)
	code, out, errs := runCLI(t, nil, "compare", a, b, "--all")
	if code != 0 || !strings.Contains(out, "ttft_p95_ms") || !strings.Contains(out, "+50.0%") || !strings.Contains(out, "inconclusive") ||
		!strings.Contains(out, "no request records of either run") {
		t.Errorf("compare: %d %q %q", code, out, errs)
	}
	code, _, errs = runCLI(t, nil, "compare", a, b, "--fail-above", "10")
	if code != 0 || !strings.Contains(errs, "--fail-above cannot fail: no request records") {
		t.Errorf("compare --fail-above: %d %q", code, errs)
	}
	code, _, errs = runCLI(t, nil, "compare", a, filepath.Join(dir, "missing.json"))
	if code != 2 || !strings.Contains(errs, "missing.json") {
		t.Errorf("compare missing: %d %q", code, errs)
	}
}

// TestCompareNeverPassesVacuously (issue 23, point 1): two unrelated runs
// are exit 2 in one line saying why, never a pass (runs of two plans are
// refused as --baseline refuses them, issue 38); a comparison of part of
// the run says so in its first line, with the counts; a gate that could
// judge nothing says so first, and --fail-inconclusive fails it.
func TestCompareNeverPassesVacuously(t *testing.T) {
	dir := t.TempDir()
	write := func(name, plan, stage string, levels ...int) string {
		st := result.Stage{Name: stage}
		for _, c := range levels {
			st.Points = append(st.Points, result.Point{Concurrency: c, NRequests: 10, Completed: 9, Failed: 1, TTFTP95Ms: result.Ptr(100.0)})
		}
		b, _ := json.Marshal(result.Report{SchemaVersion: result.SchemaVersion, Plan: result.Plan{Name: plan, Hash: "h-" + plan}, Stages: []result.Stage{st}})
		p := filepath.Join(dir, name)
		os.WriteFile(p, b, 0o644)
		return p
	}
	base := write("base.json", "baseline-regression", "regression", 1, 4)
	for _, md := range []string{"--markdown", "--all"} {
		code, out, errs := runCLI(t, nil, "compare", base, write("q.json", "quickstart", "sweep", 1, 2), "--fail-above", "10", md)
		if code != 2 || out != "" || strings.Count(errs, "\n") != 1 ||
			!strings.Contains(errs, `does not match `+filepath.Join(dir, "q.json")+`: it is a run of plan "baseline-regression", not "quickstart"`) {
			t.Errorf("unrelated runs %s: exit %d, want 2 with one line\nstdout %q\nstderr %q", md, code, out, errs)
		}
	}
	code, out, errs := runCLI(t, nil, "compare", base, write("c8.json", "baseline-regression", "regression", 8))
	if code != 2 || !strings.Contains(errs, `no level is in both (stage "regression": the baseline has c=1, c=4, the new run c=8)`) {
		t.Errorf("no level in common: exit %d %q %q", code, out, errs)
	}
	part := write("part.json", "baseline-regression", "regression", 1, 4, 8)
	for _, md := range []string{"", "--markdown"} {
		args := []string{"compare", base, part, "--fail-above", "10"}
		if md != "" {
			args = append(args, md)
		}
		code, out, errs = runCLI(t, nil, args...)
		first, _, _ := strings.Cut(out, "\n")
		if code != 0 || !strings.Contains(first, "Partial: gated 10 (0 worse, 0 better, 2 same, 8 inconclusive), 1 of 3 levels unmatched") ||
			!strings.Contains(first, "judged: the default family") || strings.Contains(out, "✅") || !strings.Contains(out, "🟡 The gate at 10% cannot fail") {
			t.Errorf("part of the run, judged by point values only %s: exit %d, first line %q\n%s\n%s", md, code, first, out, errs)
		}
	}
	// failed 1 → 1 is the same, so this gate judged something; one that
	// judges TTFT alone judged nothing, and --fail-inconclusive fails it.
	code, out, errs = runCLI(t, nil, "compare", base, base, "--metrics", "ttft_p95_ms", "--fail-inconclusive")
	if first, _, _ := strings.Cut(out, "\n"); code != 1 || !strings.HasPrefix(first, "Judged nothing: gated 2 (0 worse, 0 better, 0 same, 2 inconclusive)") ||
		!strings.Contains(errs, "--fail-inconclusive") {
		t.Errorf("--fail-inconclusive: exit %d, first line %q, stderr %q", code, first, errs)
	}
	if code, _, _ := runCLI(t, nil, "compare", base, base, "--metrics", "ttft_p95_ms"); code != 0 {
		t.Errorf("without --fail-inconclusive a blind gate exits %d", code)
	}
	if code, _, errs := runCLI(t, nil, "compare", base, base, "--metrics", "itl_p95_ms"); code != 2 || !strings.Contains(errs, "--metrics: itl_p95_ms has no interval") {
		t.Errorf("--metrics itl_p95_ms: exit %d %q", code, errs)
	}
	for _, cmd := range []string{"run", "report", "merge"} {
		if _, out, errs := runCLI(t, nil, cmd, "--help"); !strings.Contains(out+errs, "-fail-inconclusive") {
			t.Errorf("%s --help has no --fail-inconclusive", cmd)
		}
	}
}

func TestPanicIsExit4(t *testing.T) {
	commands["boom"] = func(context.Context, *Env, []string) error { panic("kaboom") }
	defer delete(commands, "boom")
	code, _, errs := runCLI(t, nil, "boom")
	if code != 4 || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "internal error: kaboom") {
		t.Errorf("panic: code %d stderr %q", code, errs)
	}
}

func TestInterruptedIs130(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	commands["wait"] = func(ctx context.Context, _ *Env, _ []string) error { <-ctx.Done(); return ctx.Err() }
	defer delete(commands, "wait")
	var errb bytes.Buffer
	if code := Run(ctx, &Env{Args: []string{"wait"}, Stderr: &errb}); code != 130 {
		t.Errorf("interrupted: code %d (%s)", code, errb.String())
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestSimDispatch(t *testing.T) {
	code, outs, _ := runCLI(t, nil, "sim", "--help")
	if code != 0 || !strings.Contains(outs, "runner sim") {
		t.Errorf("sim --help: %d %q", code, outs)
	}
	code, _, errs := runCLI(t, nil, "sim", "extra-arg")
	if code != 2 || !strings.Contains(errs, "extra-arg") {
		t.Errorf("sim with a stray argument: %d %q", code, errs)
	}
}

func TestValidateStdin(t *testing.T) {
	var out, errb bytes.Buffer
	code := Run(context.Background(), &Env{Args: []string{"validate", "-"}, Stdin: strings.NewReader("version: 1\nname: x\nbogus: 1\n"), Stdout: &out, Stderr: &errb})
	if code != 2 || !strings.Contains(errb.String(), "<stdin>:3:1: unknown key \"bogus\"") {
		t.Errorf("stdin: %d %q", code, errb.String())
	}
}
