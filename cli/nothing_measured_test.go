package cli

import (
	"encoding/json"
	"encoding/xml"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/sim"
)

// TestNothingMeasuredPassesNothing: an embeddings stage against a server
// that does not serve embeddings (the simulator answering /v1/embeddings
// as llama-server started without --embeddings does: 501) stops before it
// measures a request. Its checks, failed == 0 included, are skipped with
// the reason, in the terminal, report.json and JUnit; none passes; the run
// exits 3 on the stage's error.
func TestNothingMeasuredPassesNothing(t *testing.T) {
	srv := startSimHandler(t, sim.FastConfig(), false, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/v1/embeddings" {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusNotImplemented)
				_, _ = w.Write([]byte(`{"error":{"code":501,"message":"This server does not support embeddings. Start it with ` + "`--embeddings`" + `","type":"not_supported_error"}}`))
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	dir := t.TempDir()
	plan := writeFile(t, filepath.Join(dir, "emb.yaml"), `version: 1
name: emb-on-chat
endpoints:
  chat: {base_url: `+srv.URL+`/v1, model: sim-model}
prompts:
  p: {synthetic: {input_tokens: 64, sizing: reference}}
stages:
  - name: embed
    endpoint: chat
    api: embeddings
    prompts: p
    concurrency: [1]
    requests: 4
    checks:
      - {name: no failures, expr: failed == 0}
      - {name: some served, scope: stage, expr: "all(points, .completed >= 0)"}
`)
	out := filepath.Join(dir, "out")
	code, stdout, stderr := runCLI(t, nil, plan, "--out", out)
	if code != 3 {
		t.Fatalf("exit %d, want 3\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "0 passed, 0 failed, 0 warned, 2 skipped") {
		t.Errorf("summary line: want 0 passed and 2 skipped\n%s", stdout)
	}
	b, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep result.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Stages[0].Checks {
		if c.Status != result.StatusSkipped || !strings.Contains(c.Message, "measured no request") {
			t.Errorf("check %q: %s (%s), want skipped: nothing measured", c.Name, c.Status, c.Message)
		}
	}
	b, err = os.ReadFile(filepath.Join(out, "junit.xml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Suites []struct {
			Cases []struct {
				Name    string    `xml:"name,attr"`
				Skipped *struct{} `xml:"skipped"`
				Error   *struct{} `xml:"error"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, c := range doc.Suites[0].Cases {
		switch {
		case c.Name == "embed / stage ran" && c.Error == nil:
			t.Errorf("%s: no error", c.Name)
		case c.Name != "embed / stage ran" && c.Skipped == nil:
			t.Errorf("%s: a passing testcase for a level that measured nothing", c.Name)
		}
	}
}
