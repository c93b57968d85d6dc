package runner

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// TestBaseURLQuery: a base URL carrying a query (Azure's ?api-version=) gets
// its query after every path Runner appends, so each request reaches the
// right path with the query intact.
func TestBaseURLQuery(t *testing.T) {
	s := startSim(t, fastSim())
	h := s.Handler()
	var mu sync.Mutex
	seen := map[string]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.URL.Path] = r.URL.RawQuery
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	e, col := newEngine(t, srv.URL+"/v1/?api-version=2024-06-01", nil)
	res := runStage(t, e, synthPlan(32, ""), stage(4, 2))
	if p := res.Points[0]; p.Completed != 2 || p.Failed != 0 {
		t.Fatalf("completed %d failed %d: %v", p.Completed, p.Failed, p.Error)
	}
	if len(col.measured()) != 2 {
		t.Fatalf("%d records", len(col.measured()))
	}
	mu.Lock()
	defer mu.Unlock()
	for _, path := range []string{"/v1/chat/completions", "/v1/models"} {
		q, ok := seen[path]
		if !ok || q != "api-version=2024-06-01" {
			t.Errorf("%s: seen %v with query %q; all paths seen: %v", path, ok, q, seen)
		}
	}
	if got := res.Endpoint.BaseURL; got != srv.URL+"/v1" {
		t.Errorf("report base_url %q, want %q", got, srv.URL+"/v1")
	}
}
