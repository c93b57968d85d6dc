// Package runner is the load stage of the pipeline, the streaming
// measurement engine: it sends a stage's requests to an OpenAI-compatible
// endpoint at each load level, reads every stream as it arrives, times the
// tokens, and hands the records (one per request, one per level) to a Sink.
// It runs a stage as the plan compiled it (scenario.LoadPlan): the prompts
// (built from runner/synth's nonces and sized filler), and the level in
// progress that a load shape drives (runner/shape: a Sweep picks the
// levels, a Dispatcher sends a level's requests through shape.Run and
// splits itself for a shard; here, a unit is one request or one
// conversation). The endpoint's HTTP client is runner/client's; one request
// sent and its stream timed (the token clock, the watchdog, the failure
// taxonomy) is runner/wire's. What differs between APIs is protocol's: the
// engine never asks which one it speaks. It computes no metric: package
// aggregate does, from the records.
//
// Accuracy comes first: one shared keep-alive transport per endpoint sized to
// the level so no connection set-up lands inside a TTFT, one monotonic clock
// read per token chunk, every duration taken from the request's own start,
// and a stream that does not complete is a failure with its reason, never a
// success.
package runner

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/runnerbench/runner/runner/body"
	"github.com/runnerbench/runner/runner/client"
	"github.com/runnerbench/runner/runner/shard"
	"github.com/runnerbench/runner/runner/synth"
	"github.com/runnerbench/runner/runner/telemetry"

	"github.com/runnerbench/runner/scenario"
)

// Target is an endpoint resolved for a run (BaseURL is the simulator's URL for
// simulator endpoints).
type Target struct {
	Name     string
	Endpoint *scenario.Endpoint
	BaseURL  string
}

// Progress is a live snapshot of the level being run.
type Progress struct {
	Stage     string
	Level     int
	Label     string
	Done      int // measured requests finished (ok or failed)
	Total     int // measured requests planned; 0 when bounded by duration only
	Failed    int
	Sent      int // measured requests sent so far (finished or in flight)
	InFlight  int // measured requests on the wire now
	Elapsed   time.Duration
	OutputTPS float64 // output tokens of successes per second so far
	// TTFTP50Ms and ITLP50Ms are the medians so far of the level's TTFT and
	// inter-token gaps (an estimate within ~6%; 0: none yet).
	TTFTP50Ms, ITLP50Ms float64
	// Duration is the level's planned measured window (0: bounded by
	// requests alone).
	Duration time.Duration
}

// Options are the engine's hooks.
type Options struct {
	Logger zerolog.Logger
	// OnProgress receives a snapshot at most ~10 times a second per level; may be nil.
	OnProgress func(Progress)
	// OnGaps receives the inter-token gaps of measured requests as each
	// worker folds a batch of them into its level (live export); it must be
	// quick and must not keep the slice. May be nil.
	OnGaps func([]time.Duration)
	// Sharding makes the engine's stages one shard of a sharded run, or
	// schedules their levels (nil: the whole run, levels back to back).
	Sharding *shard.Sharding
	// CoarseSends makes open-loop sends wait on Go's timer alone, as they did
	// before precise waiting (runner/clock): they then leave up to about a
	// millisecond late, more under load. Only for measuring what precise
	// waiting buys (bench/cmd/runnerbench, experiment sendlag).
	CoarseSends bool
	// UserTimes times token chunks by the runner's clock after each read, as
	// before kernel receive times (internal/rxtime): the runner's own read lag
	// is then in every token time. Only for measuring what kernel times buy
	// (bench/cmd/runnerbench, experiments wireacc and infsim).
	UserTimes bool
	// Telemetry samples the plan's telemetry targets during every level,
	// and with TelemetryEndpoint the endpoint's own /metrics; the reads go
	// to the sink when it has a Telemetry method (TelemetrySink). Nil: no
	// sampling.
	Telemetry         *telemetry.Sampler
	TelemetryEndpoint bool
}

// Engine runs stages against one endpoint. It is safe to run one stage at a
// time; stages against different endpoints use different engines.
type Engine struct {
	t      Target
	opts   Options
	log    zerolog.Logger
	model  string
	c      *client.Client
	nonces *synth.Nonces
	cal    *body.Calibrator // prompt sizes, calibrated once per model and API for the run

	telOnce   sync.Once
	telTarget *telemetry.Target // the endpoint's /metrics as a telemetry target (nil: not read)
}

// NewEngine builds the target's HTTP client. It trusts the endpoint as
// scenario loaded it (defaults applied).
func NewEngine(t Target, opts Options) (*Engine, error) {
	if t.Endpoint == nil {
		return nil, errors.New("runner: target has no endpoint")
	}
	base := t.BaseURL
	if base == "" {
		base = t.Endpoint.BaseURL
	}
	log := opts.Logger.With().Str("endpoint", t.Name).Logger()
	c, err := client.New(t.Name, t.Endpoint, base, log)
	if err != nil {
		return nil, err
	}
	if opts.UserTimes {
		c.UserTimes()
	}
	return &Engine{
		t:      t,
		opts:   opts,
		log:    log,
		model:  t.Endpoint.Model,
		c:      c,
		nonces: shardNonces(opts.Sharding, t.Name),
		cal:    body.NewCalibrator(c, t.Endpoint.Model, log),
	}, nil
}

// WaitReady polls GET <base>/models, falling back to <origin>/health, until
// either answers 200 or timeout passes (runner/client). The error names the
// URLs tried.
func (e *Engine) WaitReady(ctx context.Context, timeout time.Duration) error {
	return e.c.WaitReady(ctx, timeout)
}

// Close releases the engine's idle connections.
func (e *Engine) Close() {
	e.c.Close()
	if t := e.telTarget; t != nil && t.Client != nil {
		t.Client.CloseIdleConnections()
	}
}
