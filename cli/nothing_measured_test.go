package cli

import (
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
	rep := loadReport(t, out)
	for _, c := range rep.Stages[0].Checks {
		if c.Status != result.StatusSkipped || !strings.Contains(c.Message, "measured no request") {
			t.Errorf("check %q: %s (%s), want skipped: nothing measured", c.Name, c.Status, c.Message)
		}
	}
	b, err := os.ReadFile(filepath.Join(out, "junit.xml"))
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

// TestWrongModelSaysSo: the built-in simulator, as vLLM and
// llm-d-inference-sim do, answers a model it does not serve with 404 "The
// model `tiny` does not exist.". A chat stage's every request fails so, and
// the closing line says the model is not served, not the API; an
// embeddings stage stops with one error saying the same.
func TestWrongModelSaysSo(t *testing.T) {
	srv := startSimHandler(t, sim.FastConfig(), false, nil)
	dir := t.TempDir()
	plan := writeFile(t, filepath.Join(dir, "model.yaml"), `version: 1
name: wrong-model
endpoints:
  e: {base_url: `+srv.URL+`/v1, model: tiny}
prompts:
  p: {synthetic: {input_tokens: 32, sizing: reference}}
stages:
  - {name: chat, endpoint: e, prompts: p, output_tokens: 4, concurrency: [1], requests: 2}
  - {name: embed, endpoint: e, prompts: p, api: embeddings, concurrency: [1], requests: 2}
`)
	code, stdout, stderr := runCLI(t, nil, plan, "--out", filepath.Join(dir, "out"))
	if code != 3 {
		t.Fatalf("exit %d, want 3\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		`stage chat c=1: every request failed (first: http_404: {"error":{"message":"The model ` + "`tiny`" + ` does not exist.","type":"NotFoundError"`,
		`the server does not serve model "tiny" (it answered 404 to every request, saying so): set the endpoint's model to one GET ` + srv.URL + `/v1/models lists`,
		`stage embed: model "tiny": POST ` + srv.URL + `/v1/embeddings answered http 404`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "does not serve api") || strings.Contains(stderr, "does not serve the embeddings API") {
		t.Errorf("a wrong model is blamed on the API:\n%s", stderr)
	}
}
