package runner

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/runnerbench/runner/scenario"
)

// TestMetricsAuthOnlyOnOwnOrigin: a /metrics behind the API's auth is read
// with the endpoint's credentials, and a metrics_url on another origin never
// sees them.
func TestMetricsAuthOnlyOnOwnOrigin(t *testing.T) {
	const key = "sk-metrics-test-key"
	s := startSim(t, fastSim())
	h := s.Handler()
	guarded := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+key {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer guarded.Close()

	e, _ := newEngine(t, guarded.URL+"/v1", &scenario.Endpoint{APIKey: scenario.Secret(key)})
	res := runStage(t, e, synthPlan(32, ""), stage(4, 2))
	if p := res.Points[0]; p.PrefixCacheHitRate == nil || p.ServerCounters == nil {
		t.Fatalf("metrics behind the API's auth were not read: hit rate %v, counters %v, warnings %v", p.PrefixCacheHitRate, p.ServerCounters, res.Warnings)
	}

	var mu sync.Mutex
	var leaked []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if a := r.Header.Get("Authorization"); a != "" {
			leaked = append(leaked, a)
		}
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	defer other.Close()
	e2, _ := newEngine(t, guarded.URL+"/v1", &scenario.Endpoint{APIKey: scenario.Secret(key), MetricsURL: other.URL + "/metrics"})
	res = runStage(t, e2, synthPlan(32, ""), stage(4, 2))
	if res.Points[0].ServerCounters == nil {
		t.Fatalf("metrics on another origin were not read")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(leaked) > 0 {
		t.Fatalf("the API key was sent to a metrics_url on another origin (%d times)", len(leaked))
	}
}
