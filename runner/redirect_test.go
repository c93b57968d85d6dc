package runner

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnerbench/runner/scenario"
)

// TestRedirectToAnotherOriginRefused: an endpoint that redirects elsewhere
// (an open redirect on an allowed host, say) cannot make the engine carry
// the plan's credentials there: Go's client would forward a custom header
// such as X-Api-Key to any host. The other host receives nothing; a redirect
// within the endpoint's own origin is still followed.
func TestRedirectToAnotherOriginRefused(t *testing.T) {
	s := startSim(t, fastSim())
	var elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		t.Errorf("the other origin received %s %s (X-Api-Key %q)", r.Method, r.URL.Path, r.Header.Get("X-Api-Key"))
	}))
	defer other.Close()
	h := s.Handler()
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/same/"):
			// Same origin: /same/v1/... → /v1/...
			http.Redirect(w, r, strings.TrimPrefix(r.URL.Path, "/same"), http.StatusTemporaryRedirect)
		case r.URL.Path == "/health":
			http.NotFound(w, r) // readiness only through <base>/models
		case strings.HasPrefix(r.URL.Path, "/away/"):
			http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
		default:
			if r.Header.Get("X-Api-Key") != "k-123" {
				http.Error(w, "no key", http.StatusUnauthorized)
				return
			}
			h.ServeHTTP(w, r)
		}
	}))
	defer front.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	headers := map[string]scenario.Secret{"X-Api-Key": "k-123"}

	same, _ := newEngine(t, front.URL+"/same/v1", &scenario.Endpoint{Headers: headers})
	if err := same.WaitReady(ctx, 5*time.Second); err != nil {
		t.Fatalf("a same-origin redirect was not followed: %v", err)
	}

	away, col := newEngine(t, front.URL+"/away/v1", &scenario.Endpoint{Headers: headers})
	err := away.WaitReady(ctx, 300*time.Millisecond)
	if err == nil {
		t.Fatal("ready through a redirect to another origin")
	}
	st := stage(4, 1)
	st.Warmup = new(int)
	res := runStage(t, away, synthPlan(16, "reference"), st)
	p := res.Points[0]
	if p.Failed != 1 {
		t.Fatalf("failed %d, want the one request to fail", p.Failed)
	}
	if r := col.measured()[0]; !strings.Contains(r.Error, "redirect to another origin") {
		t.Errorf("sample %q does not say why (%v)", r.Error, p.ErrorsByKind)
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the other origin received %d requests", n)
	}
}
