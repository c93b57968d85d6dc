package scenario

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestReadmeDocumentsEveryField keeps the plan reference (docs/plans.md) in
// step with the plan types: every YAML key must be mentioned; and the README's
// test command must be the one CI runs.
func TestReadmeDocumentsEveryField(t *testing.T) {
	b, err := os.ReadFile("../docs/plans.md")
	if err != nil {
		t.Fatal(err)
	}
	ref := string(b)
	for _, v := range []any{Plan{}, Endpoint{}, Timeouts{}, TLS{}, Counters{}, PromptSet{}, Synthetic{}, SharedPrefix{}, Stage{}, SLO{}, Check{}, Search{}, Budget{}, Target{}, Trace{}, Replay{}, Telemetry{}, TelemetryTarget{}} {
		typ := reflect.TypeOf(v)
		for _, f := range yamlFields(typ) {
			if !strings.Contains(ref, "`"+f.name+"`") && !strings.Contains(ref, "."+f.name+"`") && !strings.Contains(ref, "`"+f.name+".") && !strings.Contains(ref, "."+f.name+".") {
				t.Errorf("docs/plans.md does not document %s.%s", typ.Name(), f.name)
			}
		}
	}
	ci, err := os.ReadFile("../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const cmd = "go test -race ./..."
	if !strings.Contains(string(readme), cmd) || !strings.Contains(string(ci), cmd) {
		t.Errorf("README.md and .ci/run must both run %q", cmd)
	}
}

// TestReadmePlansLoad: every whole plan the README shows (a yaml block with
// `version: 1`) loads as it stands, so the tour's "your own server" plan
// cannot drift from what the loader accepts.
func TestReadmePlansLoad(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(string(b), "```yaml\n")
	n := 0
	for _, blk := range blocks[1:] {
		body, _, ok := strings.Cut(blk, "```")
		if !ok || !strings.Contains(body, "\nversion: 1\n") {
			continue
		}
		n++
		if _, err := LoadBytes("README.md", []byte(body), t.TempDir(), Options{}); err != nil {
			t.Errorf("a plan in the README does not load: %v", err)
		}
	}
	if n == 0 {
		t.Fatal("the README shows no whole plan")
	}
}
