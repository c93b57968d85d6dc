package board

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/runnerbench/runner/pipeline"
	"github.com/runnerbench/runner/records"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
)

// sweepPlan is a small sweep against the in-process simulator with fast
// settings; itl sets the simulated engine's speed, so runs of it differ as
// two engines would.
func sweepPlan(itl, ttft float64) string {
	return fmt.Sprintf(`version: 1
name: board-sweep
endpoints:
  sim:
    simulator: {ttft_ms: %g, prefill_ms_per_token: 0.001, itl_ms: %g}
prompts:
  p: {synthetic: {input_tokens: 32, sizing: reference}}
stages:
  - name: sweep
    endpoint: sim
    prompts: p
    output_tokens: 16
    concurrency: [1, 4, 8]
    requests: 8
    warmup: 0
`, ttft, itl)
}

// searchPlan is a tiny capacity search: TTFT p95 under 1 s holds at every
// load the simulator is asked for, so its capacity is max.
const searchPlan = `version: 1
name: board-search
endpoints:
  sim:
    simulator: {ttft_ms: 5, prefill_ms_per_token: 0.001, itl_ms: 1}
prompts:
  p: {synthetic: {input_tokens: 32, sizing: reference}}
stages:
  - name: cap
    endpoint: sim
    prompts: p
    output_tokens: 8
    requests: 8
    warmup: 0
    search:
      over: concurrency
      min: 1
      max: 8
      repeats: 0
      budget: {probes: 6}
      targets:
        - {name: interactive, expr: "ttft_p95_ms < 1000"}
`

// runPlan runs a plan with the given labels into dir as `runner run` does
// (records as it goes, report.json at the end) and returns its report.
func runPlan(t testing.TB, dir, src string, labels result.Labels) *result.Report {
	t.Helper()
	p, err := scenario.LoadBytes("plan.yaml", []byte(src), t.TempDir(), scenario.Options{Getenv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := records.Create(dir, p.Source)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := pipeline.Run(context.Background(), pipeline.Options{
		Plan: p, PlanBytes: p.Source, Records: recs, RunnerVersion: "v0.0.0-test",
		Labels: labels, Host: "bench-host", Logger: zerolog.Nop(),
	})
	if cerr := recs.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	writeReport(t, dir, rep)
	return rep
}

// writeReport writes report.json as reporters.WriteJSON does.
func writeReport(t testing.TB, dir string, rep *result.Report) {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rep); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, records.FileReport), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// copyDir copies a result directory's files (no subdirectories).
func copyDir(t testing.TB, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// editHeader rewrites a copied result directory's run.jsonl header.
func editHeader(t testing.TB, dir string, edit func(*records.Header)) {
	t.Helper()
	path := filepath.Join(dir, records.FileRun)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	first, rest, _ := bytes.Cut(data, []byte("\n"))
	var e records.Entry
	if err := json.Unmarshal(first, &e); err != nil || e.Run == nil {
		t.Fatalf("%s: header: %v", path, err)
	}
	edit(e.Run)
	line, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(append(line, '\n'), rest...), 0o644); err != nil {
		t.Fatal(err)
	}
}

// relabel rewrites a copied result directory's labels (run.jsonl's header
// and report.json alike), as a run with other --label values would have
// recorded them.
func relabel(t testing.TB, dir string, labels result.Labels) {
	t.Helper()
	editHeader(t, dir, func(h *records.Header) { h.Labels = labels })
	rp := filepath.Join(dir, records.FileReport)
	if b, err := os.ReadFile(rp); err == nil {
		var rep result.Report
		if err := json.Unmarshal(b, &rep); err != nil {
			t.Fatal(err)
		}
		rep.Labels = labels
		writeReport(t, dir, &rep)
	}
}

// labelsOf parses "k=v k=v".
func labelsOf(s string) result.Labels {
	l := result.Labels{}
	for _, kv := range strings.Fields(s) {
		k, v, _ := strings.Cut(kv, "=")
		l[k] = v
	}
	return l
}
