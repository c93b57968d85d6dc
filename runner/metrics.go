package runner

import (
	neturl "net/url"

	"github.com/runnerbench/runner/runner/servermetrics"
)

// scraper reads the endpoint's Prometheus counters.
func (e *Engine) scraper() *servermetrics.Scraper {
	url := e.t.Endpoint.MetricsURL
	if url == "" {
		url = e.origin + "/metrics"
	}
	var names servermetrics.Names
	if c := e.t.Endpoint.Counters; c != nil {
		names = *c
	}
	e.mu.Lock()
	client := e.client
	e.mu.Unlock()
	sc := servermetrics.New(client, url, names)
	// A /metrics behind the API's own auth needs its credentials, but they
	// are sent only to the API's own origin, never to another host named by
	// metrics_url.
	if sameOrigin(url, e.origin) {
		h := e.headers.Clone()
		h.Del("Content-Type")
		sc.WithHeader(h)
	}
	return sc
}

// sameOrigin reports whether u is on origin (scheme://host[:port]).
func sameOrigin(u, origin string) bool {
	pu, err := neturl.Parse(u)
	if err != nil {
		return false
	}
	return pu.Scheme+"://"+pu.Host == origin
}
