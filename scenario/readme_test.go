package scenario

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestReadmeDocumentsEveryField keeps README.md's plan reference in step with
// the plan types: every YAML key must be mentioned, and the README's test
// command must be the one CI runs.
func TestReadmeDocumentsEveryField(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for _, v := range []any{Plan{}, Endpoint{}, Timeouts{}, TLS{}, Counters{}, PromptSet{}, Synthetic{}, SharedPrefix{}, Stage{}, SLO{}, Check{}, Search{}, Budget{}, Target{}, Trace{}, Replay{}, Telemetry{}, TelemetryTarget{}} {
		typ := reflect.TypeOf(v)
		for _, f := range yamlFields(typ) {
			if !strings.Contains(readme, "`"+f.name+"`") && !strings.Contains(readme, "."+f.name+"`") && !strings.Contains(readme, "`"+f.name+".") && !strings.Contains(readme, "."+f.name+".") {
				t.Errorf("README.md does not document %s.%s", typ.Name(), f.name)
			}
		}
	}
	ci, err := os.ReadFile("../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	const cmd = "go test -race ./..."
	if !strings.Contains(readme, cmd) || !strings.Contains(string(ci), cmd) {
		t.Errorf("README.md and .ci/run must both run %q", cmd)
	}
}
