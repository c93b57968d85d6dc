package runner

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/runnerbench/runner/checks"
	"github.com/runnerbench/runner/scenario"
)

// TestPreflightModelNotListed: a plan's model the server does not list is
// warned about before the first stage, naming the models it does list.
func TestPreflightModelNotListed(t *testing.T) {
	s := startSim(t, fastSim())
	e, _ := newEngine(t, s.URL(), &scenario.Endpoint{Model: "llama-3-8b"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.WaitReady(ctx, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	w := strings.Join(e.c.Warnings(), "\n")
	if !strings.Contains(w, `model "llama-3-8b" is not among the models`) || !strings.Contains(w, `("sim")`) {
		t.Fatalf("no warning naming the listed models: %q", e.c.Warnings())
	}
	// The listed model: no warning.
	e2, _ := newEngine(t, s.URL(), nil)
	if err := e2.WaitReady(ctx, 5*time.Second); err != nil || len(e2.c.Warnings()) != 0 {
		t.Fatalf("err %v, warnings %q", err, e2.c.Warnings())
	}
}

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
