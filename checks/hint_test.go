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
