package runner

import (
	"context"
	"net/http"
	neturl "net/url"

	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/runner/servermetrics"
	"github.com/runnerbench/runner/runner/telemetry"
)

// scraper reads the endpoint's Prometheus counters.
func (e *Engine) scraper() *servermetrics.Scraper {
	url, h := e.metricsURL()
	var names servermetrics.Names
	if c := e.t.Endpoint.Counters; c != nil {
		names = *c
	}
	e.mu.Lock()
	client := e.client
	e.mu.Unlock()
	sc := servermetrics.New(client, url, names)
	if h != nil {
		sc.WithHeader(h)
	}
	return sc
}

// metricsURL is the endpoint's /metrics and the headers to read it with.
// A /metrics behind the API's own auth needs its credentials, but they are
// sent only to the API's own origin, never to another host named by
// metrics_url (nil header).
func (e *Engine) metricsURL() (string, http.Header) {
	url := e.t.Endpoint.MetricsURL
	if url == "" {
		url = e.origin + "/metrics"
	}
	if !sameOrigin(url, e.origin) {
		return url, nil
	}
	h := e.headers.Clone()
	h.Del("Content-Type")
	return url, h
}

// TelemetrySink is a Sink that also takes the telemetry reads of each level
// (a line of telemetry.jsonl each). It is called from the sampler's
// goroutines and must be quick and safe for concurrent use.
type TelemetrySink interface {
	Telemetry(r *result.TelemetryScrape)
}

// levelTelemetry starts the level's telemetry reads (the plan's targets,
// and the endpoint's /metrics when the run reads it); a sink without a
// Telemetry method gets none, and the run reads nothing.
func (e *Engine) levelTelemetry(ctx context.Context, stage string, idx int, sink Sink) *telemetry.LevelRun {
	ts, ok := sink.(TelemetrySink)
	if !ok || e.opts.Telemetry == nil {
		var none *telemetry.Sampler
		return none.Level(ctx, stage, idx, 0, nil, nil) // a nil sampler's run reads nothing
	}
	var extra []*telemetry.Target
	if t := e.endpointTarget(); t != nil {
		extra = append(extra, t)
	}
	return e.opts.Telemetry.Level(ctx, stage, idx, e.shardIndex(), extra, ts.Telemetry)
}

// endpointTarget is the endpoint's /metrics as a telemetry target, read on
// a client of its own (the endpoint's TLS settings, its own connections, no
// redirect to another origin), keeping the engine gauges and counters
// (result.TelemetryKept); nil when the run does not read it.
func (e *Engine) endpointTarget() *telemetry.Target {
	e.telOnce.Do(func() {
		if !e.opts.TelemetryEndpoint {
			return
		}
		url, h := e.metricsURL()
		tr := e.newTransport()
		tr.MaxIdleConnsPerHost = 2
		e.telTarget = &telemetry.Target{
			Name: e.t.Name, Endpoint: true, URL: url, Header: h, Keep: result.TelemetryKept,
			Client: &http.Client{Transport: tr, CheckRedirect: e.sameOriginRedirect},
		}
	})
	return e.telTarget
}

// sameOrigin reports whether u is on origin (scheme://host[:port]).
func sameOrigin(u, origin string) bool {
	pu, err := neturl.Parse(u)
	if err != nil {
		return false
	}
	return pu.Scheme+"://"+pu.Host == origin
}
