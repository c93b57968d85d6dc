// Package runner is the load stage of the pipeline, the streaming
// measurement engine: it sends a stage's requests to an OpenAI-compatible
// endpoint at each load level, reads every stream as it arrives, times the
// tokens, and hands the records (one per request, one per level) to a Sink.
// It runs a stage as the plan compiled it (scenario.LoadPlan) and owns the
// HTTP client, the prompts (built from runner/synth's nonces and sized
// filler), the level in progress that a load shape drives (runner/shape: a
// Sweep picks the levels, a Dispatcher sends a level's requests through
// shape.Run and splits itself for a shard; here, a unit is one request or
// one conversation), the token clock and the per-request failure taxonomy. What
// differs between APIs is protocol's: the engine never asks which one
// it speaks. It computes no metric: package aggregate does, from the records.
//
// Accuracy comes first: one shared keep-alive transport per endpoint sized to
// the level so no connection set-up lands inside a TTFT, one monotonic clock
// read per token chunk, every duration taken from the request's own start,
// and a stream that does not complete is a failure with its reason, never a
// success.
package runner

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/runnerbench/runner/internal/redact"
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
	t       Target
	opts    Options
	log     zerolog.Logger
	model   string
	baseURL string // without trailing slash or query
	query   string // "?..." from the base URL, appended after every path
	origin  string // scheme://host[:port]
	headers http.Header
	tlsConf *tls.Config
	timeout scenario.Timeouts
	nonces  *synth.Nonces

	mu        sync.Mutex
	transport *http.Transport
	client    *http.Client
	fresh     *http.Client // one new connection per request (see worker.send)
	idleSize  int

	closedOnce sync.Once // the log line about closed keep-alive connections

	calMu sync.Mutex
	calib map[calibKey]*synth.Sizer

	telOnce   sync.Once
	telTarget *telemetry.Target // the endpoint's /metrics as a telemetry target (nil: not read)

	warnings []string
}

// NewEngine builds the target's HTTP transport and client. It trusts the
// endpoint as scenario loaded it (defaults applied).
func NewEngine(t Target, opts Options) (*Engine, error) {
	if t.Endpoint == nil {
		return nil, errors.New("runner: target has no endpoint")
	}
	base := t.BaseURL
	if base == "" {
		base = t.Endpoint.BaseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("endpoint %s: base_url %q is not an http(s) URL", t.Name, redact.URL(base))
	}
	// A query on the base URL (Azure's ?api-version=...) belongs after every
	// path Runner appends, not before it.
	var query string
	if u.RawQuery != "" {
		query = "?" + u.RawQuery
	}
	u.RawQuery, u.Fragment = "", ""
	base = strings.TrimRight(u.String(), "/")
	e := &Engine{
		t:       t,
		opts:    opts,
		log:     opts.Logger.With().Str("endpoint", t.Name).Logger(),
		model:   t.Endpoint.Model,
		baseURL: base,
		query:   query,
		origin:  u.Scheme + "://" + u.Host,
		headers: http.Header{},
		timeout: t.Endpoint.Timeouts,
		nonces:  shardNonces(opts.Sharding, t.Name),
		calib:   map[calibKey]*synth.Sizer{},
	}
	for k, v := range t.Endpoint.Headers {
		e.headers.Set(k, v.Reveal())
	}
	if key := t.Endpoint.APIKey.Reveal(); key != "" {
		e.headers.Set("Authorization", "Bearer "+key)
	}
	e.headers.Set("Content-Type", "application/json")
	// Accept is the stage's protocol's media type, set on each request.
	if u.Scheme == "https" {
		if e.tlsConf, err = tlsConfig(t.Endpoint.TLS); err != nil {
			return nil, fmt.Errorf("endpoint %s: %w", t.Name, err)
		}
		if e.tlsConf.InsecureSkipVerify {
			e.warn("tls.insecure_skip_verify is set: the server's certificate is not checked")
		}
	}
	e.resize(64)
	return e, nil
}

// tlsConfig builds the TLS settings of an https endpoint. The extra CAs are
// the bytes the plan loader read from tls.ca_file after checking that the
// file is inside the plan's tree; the engine never opens a path a plan names.
func tlsConfig(o *scenario.TLS) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if o == nil {
		return c, nil
	}
	c.InsecureSkipVerify = o.InsecureSkipVerify
	c.ServerName = o.ServerName
	if o.CAFile != "" && len(o.CAPEM) == 0 {
		return nil, fmt.Errorf("tls.ca_file %s was not read by the plan loader (load plans with scenario.Load)", o.CAFile)
	}
	if len(o.CAPEM) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(o.CAPEM) {
			return nil, fmt.Errorf("tls.ca_file %s: no PEM certificates found", o.CAFile)
		}
		c.RootCAs = pool
	}
	return c, nil
}

// resize makes sure the transport keeps at least n idle connections per host,
// so a level of concurrency n reuses its connections instead of dialling
// inside a TTFT. A transport in use is not reconfigured: a bigger one
// replaces it between stages.
func (e *Engine) resize(n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.transport != nil && e.idleSize >= n {
		return
	}
	size := max(n, 64)
	tr := e.newTransport()
	tr.MaxIdleConnsPerHost = size + 8
	if e.transport != nil {
		e.transport.CloseIdleConnections()
	}
	e.transport = tr
	e.client = &http.Client{Transport: tr, CheckRedirect: e.sameOriginRedirect}
	e.idleSize = size
	if e.fresh == nil {
		// Re-sends after a connection the server closed (see worker.send)
		// go out on a connection of their own, dialled for them and closed
		// after them: a pooled one might be the next the server closed.
		fr := e.newTransport()
		fr.DisableKeepAlives = true
		e.fresh = &http.Client{Transport: fr, CheckRedirect: e.sameOriginRedirect}
	}
}

// newTransport is the endpoint's HTTP transport, without pool sizing.
func (e *Engine) newTransport() *http.Transport {
	connect := e.timeout.Connect.D()
	return &http.Transport{
		// No proxy from the environment: a benchmark measures the endpoint,
		// not a proxy in front of it.
		Proxy: nil,
		DialContext: (&net.Dialer{
			Timeout:   connect,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		TLSClientConfig:     e.tlsConf,
		TLSHandshakeTimeout: connect,
		ForceAttemptHTTP2:   true,
		// A gzip layer would delay and batch tokens; servers rarely compress
		// SSE, but asking for it is never wanted here.
		DisableCompression: true,
		MaxIdleConns:       0,
		IdleConnTimeout:    90 * time.Second,
	}
}

// clients returns the pooled keep-alive client and the one that dials a new
// connection for every request.
func (e *Engine) clients() (pooled, fresh *http.Client) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.client, e.fresh
}

// noteClosedKeepAlive says, once per endpoint, that the server closes
// kept-alive connections; every request this affects is still counted in
// its level's reconnects.
func (e *Engine) noteClosedKeepAlive(err error) {
	e.closedOnce.Do(func() {
		e.log.Warn().Str("error", sample([]byte(redact.Error(err).Error()))).Msg(
			"the server closed a kept-alive connection without saying so; requests that found their connection closed before any response are sent again once on a new connection (counted as reconnects)")
	})
}

// sameOriginRedirect refuses a redirect that leaves the endpoint's origin:
// Go's client would carry the plan's headers (an X-Api-Key, say) to the new
// host, and the job allowed the credentials for this host only. A redirect
// to another host is an error of the request, named in its sample.
func (e *Engine) sameOriginRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if origin := req.URL.Scheme + "://" + req.URL.Host; origin != via[0].URL.Scheme+"://"+via[0].URL.Host {
		return fmt.Errorf("redirect to another origin (%s) refused: the endpoint's credentials are for its own host only", redact.URL(origin))
	}
	return nil
}

func (e *Engine) warn(msg string) {
	e.mu.Lock()
	e.warnings = append(e.warnings, msg)
	e.mu.Unlock()
	e.log.Warn().Msg(msg)
}

// setAuth adds the API key and plan headers; never logged.
func (e *Engine) setAuth(req *http.Request) {
	for k, v := range e.headers {
		if k == "Content-Type" || k == "Accept" {
			continue
		}
		req.Header[k] = v
	}
}

// WaitReady polls GET <base>/models, falling back to <origin>/health, until
// either answers 200 or timeout passes. The error names the URLs tried.
func (e *Engine) WaitReady(ctx context.Context, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = scenario.DefaultReadyTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	urls := []string{e.url("/models"), e.origin + "/health"}
	var last error
	delay := 100 * time.Millisecond
	start := time.Now()
	every := readyLogEvery(timeout)
	next := start.Add(every)
	refused := false
	for {
		models, err := e.get(ctx, urls[0])
		if err == nil {
			e.checkModels(models)
			return nil
		}
		last = err
		if _, err := e.get(ctx, urls[1]); err == nil {
			e.checkBaseURL(last)
			return nil
		} else {
			last = err
		}
		if !refused && errors.Is(last, syscall.ECONNREFUSED) {
			// Said at once, not after the first interval: a mistyped port
			// must not look like a slow server. Not an error yet: a server
			// started beside the job (vLLM binds its port only once the
			// model is loaded) refuses until it is up.
			refused = true
			e.log.Warn().Str("url", redact.URL(e.origin)).Str("timeout", timeout.String()).
				Msg("connection refused: nothing listens there yet; waiting for a server to start (if it is already running, the host or port in base_url is wrong)")
		}
		if now := time.Now(); !now.Before(next) && ctx.Err() == nil {
			// A wrong port or path must not be a silent minute: say what
			// the endpoint answers (the error is redacted, as every URL is).
			e.log.Info().Str("waited", now.Sub(start).Round(every/5).String()).Str("timeout", timeout.String()).
				Str("last_error", sample([]byte(last.Error()))).Msg("still waiting for the endpoint")
			next = now.Add(every)
		}
		t := time.NewTimer(min(delay, max(time.Until(next), time.Millisecond)))
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("endpoint %s not ready after %s (tried %s): %w",
				e.t.Name, timeout, strings.Join(redact.URLs(urls), ", "), last)
		case <-t.C:
		}
		delay = min(2*delay, time.Second)
	}
}

// readyLogEvery is how often WaitReady says it is still waiting: every 5 s,
// or every quarter of a shorter timeout (at most twice a second).
func readyLogEvery(timeout time.Duration) time.Duration {
	return min(5*time.Second, max(timeout/4, 500*time.Millisecond))
}

// get fetches u and returns the start of its body (up to 1 MiB) when the
// server answers 200.
func (e *Engine) get(ctx context.Context, u string) ([]byte, error) {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	e.setAuth(req)
	e.mu.Lock()
	c := e.client
	e.mu.Unlock()
	resp, err := c.Do(req)
	if err != nil {
		return nil, redact.Error(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return nil, &httpStatusError{url: redact.URL(u), status: resp.StatusCode}
	}
	return body, nil
}

// Close releases the engine's idle connections.
func (e *Engine) Close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.transport != nil {
		e.transport.CloseIdleConnections()
	}
	if t := e.telTarget; t != nil && t.Client != nil {
		t.Client.CloseIdleConnections()
	}
}

// url is the API URL of path (e.g. "/chat/completions"): the base URL, the
// path, then the base URL's query.
func (e *Engine) url(path string) string { return e.baseURL + path + e.query }
