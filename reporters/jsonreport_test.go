package reporters

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/invopop/jsonschema"
	sjsonschema "github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/runnerbench/runner/records"
	"github.com/runnerbench/runner/result"
)

func jsonOf(t *testing.T, r *result.Report) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteJSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestJSONRoundTrip: a report written by WriteJSON reads back whole through
// the one report.json reader (records.ReadReport).
func TestJSONRoundTrip(t *testing.T) {
	want := fixture(t)
	path := filepath.Join(t.TempDir(), records.FileReport)
	if err := os.WriteFile(path, jsonOf(t, want), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := records.ReadReport(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("report changed across WriteJSON/ReadReport:\n%s", jsonOf(t, got))
	}
}

func TestJSONContent(t *testing.T) {
	r := fixture(t)
	r.SchemaVersion = 0 // the writer fills it in
	var m map[string]any
	if err := json.Unmarshal(jsonOf(t, r), &m); err != nil {
		t.Fatal(err)
	}
	if m["schema_version"] != float64(result.SchemaVersion) {
		t.Errorf("schema_version = %v", m["schema_version"])
	}
	for _, key := range []string{"runner_version", "plan", "started_at", "ended_at", "stop_reason", "verdict", "stages"} {
		if _, ok := m[key]; !ok {
			t.Errorf("report.json lacks %s", key)
		}
	}
	st := m["stages"].([]any)[0].(map[string]any)
	p := st["points"].([]any)[2].(map[string]any)
	// A metric the run could not produce is null, not 0 and not absent.
	if v, ok := p["ttft_p95_ms"]; !ok || v != nil {
		t.Errorf("null metric written as %v (present %v)", v, ok)
	}
	if !strings.Contains(string(jsonOf(t, r)), `"expr": "ttft_p95_ms < 150"`) {
		t.Error("expressions should be written without HTML escaping")
	}
	if r.SchemaVersion != 0 {
		t.Error("WriteJSON modified its input")
	}
}

func TestWriteJSONRejectsNaN(t *testing.T) {
	nan := 0.0
	nan /= nan
	r := &result.Report{Stages: []result.Stage{{Points: []result.Point{{TTFTP95Ms: &nan}}}}}
	if err := WriteJSON(&bytes.Buffer{}, r); err == nil {
		t.Error("a NaN metric must be an error, not invalid JSON")
	}
}

func validateAgainst(t *testing.T, schema, doc []byte) error {
	t.Helper()
	sdoc, err := sjsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		t.Fatalf("parse schema: %v", err)
	}
	c := sjsonschema.NewCompiler()
	if err := c.AddResource("report.schema.json", sdoc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("report.schema.json")
	if err != nil {
		t.Fatalf("compile schema: %v", err)
	}
	inst, err := sjsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		t.Fatalf("parse report: %v", err)
	}
	return sch.Validate(inst)
}

// TestJSONMatchesCommittedSchema validates real reports against the schema
// the plan side generates from result.Report (schema/report.schema.json).
func TestJSONMatchesCommittedSchema(t *testing.T) {
	path := filepath.Join("..", "schema", "report.schema.json")
	schema, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]*result.Report{"fixture": fixture(t), "recorded": recorded(t), "minimal": {SchemaVersion: 1, Stages: []result.Stage{}}} {
		if err := validateAgainst(t, schema, jsonOf(t, r)); err != nil {
			t.Errorf("%s: report.json does not match %s:\n%v", name, path, err)
		}
	}
}

// TestJSONMatchesReflectedSchema always runs: the schema reflected from
// result.Report the way schema/ is generated (invopop: every field without
// omitempty required, no unknown properties) accepts what WriteJSON writes,
// and rejects a report with a field missing.
func TestJSONMatchesReflectedSchema(t *testing.T) {
	sch := new(jsonschema.Reflector).Reflect(&result.Report{})
	allowNulls(sch, reflect.TypeOf(result.Report{}))
	schema, err := json.Marshal(sch)
	if err != nil {
		t.Fatal(err)
	}
	if err := validateAgainst(t, schema, jsonOf(t, fixture(t))); err != nil {
		t.Errorf("report.json does not match the reflected schema:\n%v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(jsonOf(t, fixture(t)), &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "stop_reason")
	bad, _ := json.Marshal(m)
	if err := validateAgainst(t, schema, bad); err == nil {
		t.Error("schema accepted a report without stop_reason: the check is toothless")
	}
}

func TestReportHasNoSecrets(t *testing.T) {
	out := string(jsonOf(t, fixture(t)))
	for _, bad := range []string{"api_key", "authorization", "Bearer"} {
		if strings.Contains(strings.ToLower(out), strings.ToLower(bad)) {
			t.Errorf("report.json mentions %q", bad)
		}
	}
}

// allowNulls lets every pointer, map and slice field of t (and of the structs
// it holds) be null, as encoding/json writes them when nil. invopop does not
// do this by itself, so a schema reflected without it rejects every real
// report that has a null metric.
func allowNulls(root *jsonschema.Schema, t reflect.Type) {
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] || t.PkgPath() == "time" {
			return
		}
		seen[t] = true
		def := root.Definitions[t.Name()]
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if f.Anonymous {
				walk(f.Type)
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" || !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			switch f.Type.Kind() {
			case reflect.Pointer, reflect.Slice, reflect.Map:
				if def != nil && def.Properties != nil {
					if prop, ok := def.Properties.Get(name); ok {
						def.Properties.Set(name, &jsonschema.Schema{AnyOf: []*jsonschema.Schema{prop, {Type: "null"}}})
					}
				}
			}
			walk(f.Type)
		}
	}
	walk(t)
}
