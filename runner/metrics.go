package runner

import (
	"context"

	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/runner/servermetrics"
	"github.com/runnerbench/runner/runner/telemetry"
)

// scraper reads the endpoint's Prometheus counters.
func (e *Engine) scraper() *servermetrics.Scraper {
	url, h := e.c.MetricsURL()
	var names servermetrics.Names
	if c := e.t.Endpoint.Counters; c != nil {
		names = *c
	}
	sc := servermetrics.New(e.c.Pooled(), url, names)
	if h != nil {
		sc.WithHeader(h)
	}
	return sc
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
		url, h := e.c.MetricsURL()
		e.telTarget = &telemetry.Target{
			Name: e.t.Name, Endpoint: true, URL: url, Header: h, Keep: result.TelemetryKept,
			Client: e.c.Side(2),
		}
	})
	return e.telTarget
}
