package schema_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"

	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
	"github.com/runnerbench/runner/schema"
	"github.com/runnerbench/runner/schema/internal/build"
)

// TestSchemasAreFresh fails when the committed schemas differ from what the Go
// types generate: run "go generate ./schema".
func TestSchemasAreFresh(t *testing.T) {
	plan, report, err := build.Schemas()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(plan, schema.Plan()) {
		t.Error("schema/plan.schema.json is stale: run go generate ./schema")
	}
	if !bytes.Equal(report, schema.Report()) {
		t.Error("schema/report.schema.json is stale: run go generate ./schema")
	}
	for _, b := range [][]byte{plan, report} {
		if n := bytes.Count(b, []byte(`"properties"`)); n < 5 {
			t.Errorf("schema has only %d property blocks", n)
		}
	}
}

func compile(t *testing.T, name string, b []byte) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(name, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// yamlAsJSON converts a YAML document to the JSON value a YAML language server validates.
func yamlAsJSON(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	j, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestExamplePlansMatchSchema(t *testing.T) {
	s := compile(t, "plan.schema.json", schema.Plan())
	files, _ := filepath.Glob("../plans/*.yaml")
	if len(files) == 0 {
		t.Fatal("no example plans")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(yamlAsJSON(t, b)); err != nil {
			t.Errorf("%s does not match the plan schema: %v", f, err)
		}
		if _, err := scenario.Load(f, scenario.Options{Getenv: func(string) (string, bool) { return "", false }}); err != nil {
			t.Errorf("%s does not load: %v", f, err)
		}
	}
	// The schema is as strict as the loader: unknown keys, bad enums, bad lengths fail.
	b, _ := os.ReadFile("../plans/quickstart.yaml")
	for _, bad := range []struct{ from, to string }{
		{"concurrency: [1, 4, 16]", "concurrency: [1, 4, 16]\n    bogus: 1"},
		{"ttft_ms: 20", "ttft_msec: 20"},
		{"input_tokens: 128", "input_tokens: {min: 1, maxx: 2}"},
		{"output_tokens: 64", "output_tokens: 64\n    mode: pined"},
		{"output_tokens: 64", "output_tokens: 64\n    duration: 10 minutes"},
		{"version: 1", "version: 2"},
	} {
		mutated := strings.Replace(string(b), bad.from, bad.to, 1)
		if err := s.Validate(yamlAsJSON(t, []byte(mutated))); err == nil {
			t.Errorf("schema accepts %q", bad.to)
		}
	}
}

func TestReportMatchesSchema(t *testing.T) {
	s := compile(t, "report.schema.json", schema.Report())
	lvl := 0
	rep := result.Report{
		SchemaVersion: result.SchemaVersion, RunnerVersion: "test", StartedAt: time.Unix(0, 0).UTC(), EndedAt: time.Unix(1, 0).UTC(),
		StopReason: result.StopCompleted, Verdict: "pass",
		Comparison: &result.ComparisonSummary{Confidence: 0.95, Each: 0.99, Gated: 5, Threshold: 0.05, Records: true},
		Stages: []result.Stage{{
			Name: "s", API: "chat", Mode: "pinned", Load: "concurrency",
			Points: []result.Point{{Concurrency: 1, TTFTP50Ms: result.Ptr(12.5), ErrorsByKind: map[string]int{}, BaselineComparison: []result.Comparison{
				{Metric: "ttft_p50_ms", Statistic: "p50", Base: result.Ptr(10.0), New: result.Ptr(12.5), Rel: result.Ptr(0.25), Interval: &result.Interval{Lo: 0.2, Hi: 0.3},
					Abs: result.Ptr(2.5), Verdict: "worse", NBase: 100, NNew: 100, Gated: true},
				{Metric: "ttft_max_ms", Verdict: "inconclusive", Reason: "no interval"},
			}}, {Concurrency: 2}},
			Checks: []result.CheckOutcome{{Name: "c", Expr: "failed == 0", Scope: "level", Severity: "fail", Level: &lvl, Status: "pass", Values: map[string]any{"failed": 0}}},
		}},
	}
	j, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(v); err != nil {
		t.Fatalf("report does not match its schema: %v", err)
	}
	bad := strings.Replace(string(j), `"schema_version":1`, `"schema_version":"1"`, 1)
	v, _ = jsonschema.UnmarshalJSON(strings.NewReader(bad))
	if err := s.Validate(v); err == nil {
		t.Error("report schema accepts a string schema_version")
	}
}

// TestEveryFieldDescribed checks that every property in both schemas has a
// description, so an editor explains each field.
func TestEveryFieldDescribed(t *testing.T) {
	for name, b := range map[string][]byte{"plan": schema.Plan(), "report": schema.Report()} {
		var doc any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		var missing []string
		var walk func(v any, path string)
		walk = func(v any, path string) {
			switch v := v.(type) {
			case map[string]any:
				if props, ok := v["properties"].(map[string]any); ok {
					for k, p := range props {
						if d, _ := p.(map[string]any)["description"].(string); d == "" {
							missing = append(missing, path+"."+k)
						}
					}
				}
				for k, c := range v {
					walk(c, path+"/"+k)
				}
			case []any:
				for _, c := range v {
					walk(c, path)
				}
			}
		}
		walk(doc, name)
		if len(missing) > 0 {
			t.Errorf("%s schema: properties without a description: %v", name, missing)
		}
	}
}

// TestReporterGoldensMatchSchema validates the report.json files the reporters
// package keeps as fixtures and goldens, so the schema and the real writer agree.
func TestReporterGoldensMatchSchema(t *testing.T) {
	s := compile(t, "report.schema.json", schema.Report())
	files, _ := filepath.Glob("../reporters/testdata/*report.json")
	more, _ := filepath.Glob("../reporters/testdata/golden/report.json")
	files = append(files, more...)
	if len(files) < 2 {
		t.Fatalf("reporter fixtures %v: want the fixture and the golden report.json", files)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if err := s.Validate(v); err != nil {
			t.Errorf("%s does not match the report schema: %v", f, err)
		}
	}
}
