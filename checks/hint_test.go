package checks

import (
	"strings"
	"testing"

	"github.com/runnerbench/runner/result"
)

// TestFailureHintPaths: the not-served hint names the URL the engine posted
// to (the path before base_url's query; a rooted API's without /v1), and a
// rooted API is not told to add a /v1 that its path drops.
func TestFailureHintPaths(t *testing.T) {
	failed := func(kind string) *result.Point {
		return &result.Point{NRequests: 4, Failed: 4, ErrorsByKind: map[string]int{kind: 4}}
	}
	for _, c := range []struct {
		api, base, want, not string
	}{
		{"chat", "http://h:1", "did you mean base_url: http://h:1/v1?", ""},
		{"chat", "http://h:1/v1?api-version=2", "POST http://h:1/v1/chat/completions?api-version=2 answered 404", "did you mean"},
		{"score", "http://h:1", "does not serve api: score (POST http://h:1/score answered 404", "did you mean"},
		{"score", "http://h:1/v1/?k=v", "POST http://h:1/score?k=v answered 404", "did you mean"},
		{"embeddings", "http://h:1/v1", "POST http://h:1/v1/embeddings answered 404", "did you mean"},
	} {
		st := &result.Stage{API: c.api, Endpoint: result.Endpoint{BaseURL: c.base}}
		hint := FailureHint(st, failed("http_404"))
		if !strings.Contains(hint, c.want) || (c.not != "" && strings.Contains(hint, c.not)) {
			t.Errorf("%s at %s: hint %q, want it to say %q", c.api, c.base, hint, c.want)
		}
	}
}

// TestFailureHintModel: a level whose every request answered 404 saying the
// model does not exist is told the model is wrong, not the API or base_url
// (llm-d-inference-sim's and the built-in simulator's answer, seen on
// loopback); a 404 that says nothing of the model keeps the API hint.
func TestFailureHintModel(t *testing.T) {
	notExist := `http_404: {"error":{"message":"The model ` + "`tiny`" + ` does not exist.","type":"NotFoundError","param":null,"code":404}}`
	for _, c := range []struct {
		base, sample, want, not string
	}{
		{"http://h:1/v1", notExist, `the server does not serve model "tiny"`, "does not serve api"},
		{"http://h:1", notExist, "one GET http://h:1/models lists", "did you mean"},
		{"http://h:1/v1", "http_404: 404 page not found", "does not serve api: chat", "model"},
	} {
		st := &result.Stage{API: "chat", Endpoint: result.Endpoint{BaseURL: c.base, Model: "tiny"}}
		p := &result.Point{NRequests: 4, Failed: 4, ErrorsByKind: map[string]int{"http_404": 4}, Error: &c.sample}
		hint := FailureHint(st, p)
		if !strings.Contains(hint, c.want) || strings.Contains(hint, c.not) {
			t.Errorf("%s, %s: hint %q, want %q and not %q", c.base, c.sample, hint, c.want, c.not)
		}
	}
}
