package runner

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/runnerbench/runner/checks"
)

// TestPreflightNoV1: a base_url without /v1 is said to be the likely cause,
// once when /models answers 404, and again beside a level whose every
// request failed with 404.
func TestPreflightNoV1(t *testing.T) {
	s := startSim(t, fastSim())
	origin := strings.TrimSuffix(s.URL(), "/v1")
	e, _ := newEngine(t, origin, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.WaitReady(ctx, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(e.c.Warnings(), "\n"); !strings.Contains(w, "has no /v1") || !strings.Contains(w, "base_url: "+origin+"/v1") {
		t.Fatalf("no /v1 warning: %q", e.c.Warnings())
	}
	st := stage(4, 2)
	res := runStage(t, e, synthPlan(20, "reference"), st)
	p := &res.Points[0]
	if p.Completed != 0 || p.ErrorsByKind["http_404"] != p.Failed {
		t.Fatalf("completed %d, errors %v", p.Completed, p.ErrorsByKind)
	}
	if hint := checks.FailureHint(res, p); !strings.Contains(hint, "did you mean base_url: "+origin+"/v1") {
		t.Fatalf("hint %q", hint)
	}
	// With /v1 the same failure is not base_url's: the endpoint does not
	// serve the API at the path tried.
	res.Endpoint.BaseURL = origin + "/v1"
	if hint := checks.FailureHint(res, p); strings.Contains(hint, "did you mean") || !strings.Contains(hint, "does not serve api: chat (POST "+origin+"/v1/chat/completions answered 404") {
		t.Fatalf("hint %q for a base_url with /v1", hint)
	}
}
