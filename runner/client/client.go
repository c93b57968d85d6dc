// Package client is the load engine's HTTP client for one endpoint: its
// URLs (the base URL's query kept after every path), the headers that carry
// its credentials, TLS, the keep-alive transport sized to the level, the
// redirect rule that keeps credentials on the endpoint's own origin, the
// re-send after a kept-alive connection the server closed under a request,
// and readiness (WaitReady, with its warnings about the model list and
// base_url). Every dial goes through one DialContext (newTransport), which
// wraps the connection in internal/rxtime so that its reads carry the
// kernel's receive time (unless UserTimes asked for the runner's clock).
//
// It measures nothing: runner/wire sends a request on it and times the
// stream.
package client

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/runnerbench/runner/internal/redact"
	"github.com/runnerbench/runner/protocol"
	"github.com/runnerbench/runner/scenario"
)

// Client is the HTTP client of one endpoint. Its methods are safe for
// concurrent use; Resize replaces the pooled transport between stages.
type Client struct {
	name    string
	ep      *scenario.Endpoint
	log     zerolog.Logger
	baseURL string // without trailing slash or query
	query   string // "?..." from the base URL, appended after every path
	origin  string // scheme://host[:port]
	headers http.Header
	tlsConf *tls.Config

	mu        sync.Mutex
	transport *http.Transport
	pooled    *http.Client
	fresh     *http.Client // one new connection per request (see Do)
	idleSize  int
	warnings  []string
	// reqHeaders are RequestHeader's, by API name.
	reqHeaders map[string]http.Header

	closedOnce sync.Once // the log line about closed keep-alive connections
	primeOnce  sync.Once // the warning about a Prime that stalled
	// dialing counts the connections being opened (Prime waits while any
	// is: at tens of thousands of connections its answers pause while
	// connections are still opening).
	dialing atomic.Int64
	// userTimes: connections are dialled plain, their reads without kernel
	// times (UserTimes).
	userTimes atomic.Bool
}

// UserTimes makes the connections dialled from now on plain ones, whose
// reads carry no kernel receive time, so runner/wire times token chunks
// with the runner's clock as it did before kernel times: for measuring what
// they change (the engine's Options.UserTimes).
func (c *Client) UserTimes() { c.userTimes.Store(true) }

// New is the client of endpoint name (ep as the plan loader left it,
// defaults applied) at base (its base URL, or the simulator's). log is the
// endpoint's logger.
func New(name string, ep *scenario.Endpoint, base string, log zerolog.Logger) (*Client, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("endpoint %s: base_url %q is not an http(s) URL", name, redact.URL(base))
	}
	// A query on the base URL (Azure's ?api-version=...) belongs after every
	// path Runner appends, not before it.
	var query string
	if u.RawQuery != "" {
		query = "?" + u.RawQuery
	}
	u.RawQuery, u.Fragment = "", ""
	c := &Client{
		name:    name,
		ep:      ep,
		log:     log,
		baseURL: strings.TrimRight(u.String(), "/"),
		query:   query,
		origin:  u.Scheme + "://" + u.Host,
		headers: http.Header{},
	}
	for k, v := range ep.Headers {
		c.headers.Set(k, v.Reveal())
	}
	if key := ep.APIKey.Reveal(); key != "" {
		c.headers.Set("Authorization", "Bearer "+key)
	}
	c.headers.Set("Content-Type", "application/json")
	// Accept is the stage's protocol's media type, set by runner/wire.
	if u.Scheme == "https" {
		if c.tlsConf, err = tlsConfig(ep.TLS); err != nil {
			return nil, fmt.Errorf("endpoint %s: %w", name, err)
		}
		if c.tlsConf.InsecureSkipVerify {
			c.warn("tls.insecure_skip_verify is set: the server's certificate is not checked")
		}
	}
	c.Resize(64)
	return c, nil
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

// Resize makes sure the transport keeps at least n idle connections per
// host, so a level of concurrency n reuses its connections instead of
// dialling inside a TTFT. A transport in use is not reconfigured: a bigger
// one replaces it between stages.
func (c *Client) Resize(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.transport != nil && c.idleSize >= n {
		return
	}
	size := max(n, 64)
	tr := c.newTransport()
	tr.MaxIdleConnsPerHost = size + 8
	if c.transport != nil {
		c.transport.CloseIdleConnections()
	}
	c.transport = tr
	c.pooled = &http.Client{Transport: tr, CheckRedirect: c.sameOriginRedirect}
	c.idleSize = size
	if c.fresh == nil {
		// Re-sends after a connection the server closed (see Do) go out
		// on a connection of their own, dialled for them and closed after
		// them: a pooled one might be the next the server closed.
		fr := c.newTransport()
		fr.DisableKeepAlives = true
		c.fresh = &http.Client{Transport: fr, CheckRedirect: c.sameOriginRedirect}
	}
}

// newTransport is the endpoint's HTTP transport, without pool sizing. Its
// DialContext is the one place a connection to the endpoint is made.
func (c *Client) newTransport() *http.Transport {
	connect := c.ep.Timeouts.Connect.D()
	return &http.Transport{
		// No proxy from the environment: a benchmark measures the endpoint,
		// not a proxy in front of it.
		Proxy: nil,
		DialContext: c.dial(&net.Dialer{
			Timeout:   connect,
			KeepAlive: 30 * time.Second,
		}),
		TLSClientConfig:     c.tlsConf,
		TLSHandshakeTimeout: connect,
		ForceAttemptHTTP2:   true,
		// A gzip layer would delay and batch tokens; servers rarely compress
		// SSE, but asking for it is never wanted here.
		DisableCompression: true,
		MaxIdleConns:       0,
		IdleConnTimeout:    90 * time.Second,
	}
}

// Pooled is the keep-alive client (the server's counters are read on it too).
func (c *Client) Pooled() *http.Client {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pooled
}

// Side is a client of its own for reads beside the load (the endpoint's
// /metrics as a telemetry target): the endpoint's TLS settings and redirect
// rule, its own connections (at most maxIdle kept).
func (c *Client) Side(maxIdle int) *http.Client {
	tr := c.newTransport()
	tr.MaxIdleConnsPerHost = maxIdle
	return &http.Client{Transport: tr, CheckRedirect: c.sameOriginRedirect}
}

// sameOriginRedirect refuses a redirect that leaves the endpoint's origin:
// Go's client would carry the plan's headers (an X-Api-Key, say) to the new
// host, and the job allowed the credentials for this host only. A redirect
// to another host is an error of the request, named in its sample.
func (c *Client) sameOriginRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if origin := req.URL.Scheme + "://" + req.URL.Host; origin != via[0].URL.Scheme+"://"+via[0].URL.Host {
		return fmt.Errorf("redirect to another origin (%s) refused: the endpoint's credentials are for its own host only", redact.URL(origin))
	}
	return nil
}

// Close releases the client's idle connections.
func (c *Client) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.transport != nil {
		c.transport.CloseIdleConnections()
	}
}

// warn keeps a warning for the stages' records, and logs it.
func (c *Client) warn(msg string) {
	c.mu.Lock()
	c.warnings = append(c.warnings, msg)
	c.mu.Unlock()
	c.log.Warn().Msg(msg)
}

// Warnings are what the client found wrong with the endpoint so far (an
// unchecked certificate, a model the server does not list, a base_url
// without /v1), for each stage's record.
func (c *Client) Warnings() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.warnings...)
}

// BaseURL is the endpoint's API root, without its query.
func (c *Client) BaseURL() string { return c.baseURL }

// Model is the endpoint's model, as the requests name it.
func (c *Client) Model() string { return c.ep.Model }

// Origin is the endpoint's scheme://host[:port].
func (c *Client) Origin() string { return c.origin }

// Timeouts are the endpoint's request timeouts.
func (c *Client) Timeouts() scenario.Timeouts { return c.ep.Timeouts }

// URL is the API URL of path (e.g. "/models"): the base URL, the path, then
// the base URL's query.
func (c *Client) URL(path string) string { return c.baseURL + path + c.query }

// APIURL is where p's requests go: the API root's URL of its path (a Rooted
// API's path is at the server's root), then the base URL's query.
func (c *Client) APIURL(p protocol.Protocol) string { return protocol.URL(p, c.baseURL) + c.query }

// Header is the endpoint's headers for requests of API p (a copy): an API
// that carries the key in headers of its own (Anthropic's x-api-key) gets
// them instead of the bearer token, and the headers it requires
// (anthropic-version); a header the plan sets itself is kept as it is.
func (c *Client) Header(p protocol.Protocol) http.Header {
	h := c.headers.Clone()
	a, ok := p.(protocol.Authenticator)
	if !ok {
		return h
	}
	key := c.ep.APIKey.Reveal()
	extra, bearer := a.Headers(key)
	if key != "" && !bearer {
		h.Del("Authorization") // made from api_key (validation refuses both)
	}
	for k, v := range extra {
		if h.Get(k) != "" {
			continue // the plan's own header
		}
		h.Set(k, v)
	}
	return h
}

// RequestHeader is Header(p) with p's Accept: the headers every request of
// API p starts from, made once per API and shared by every worker, so it
// must not be changed (clone it).
func (c *Client) RequestHeader(p protocol.Protocol) http.Header {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h, ok := c.reqHeaders[p.Name()]; ok {
		return h
	}
	h := c.Header(p)
	h.Set("Accept", p.MediaType())
	if c.reqHeaders == nil {
		c.reqHeaders = map[string]http.Header{}
	}
	c.reqHeaders[p.Name()] = h
	return h
}

// setAuth adds the API key and plan headers; never logged.
func (c *Client) setAuth(req *http.Request) {
	for k, v := range c.headers {
		if k == "Content-Type" || k == "Accept" {
			continue
		}
		req.Header[k] = v
	}
}

// MetricsURL is the endpoint's /metrics and the headers to read it with.
// A /metrics behind the API's own auth needs its credentials, but they are
// sent only to the API's own origin, never to another host named by
// metrics_url (nil header).
func (c *Client) MetricsURL() (string, http.Header) {
	u := c.ep.MetricsURL
	if u == "" {
		u = c.origin + "/metrics"
	}
	if !sameOrigin(u, c.origin) {
		return u, nil
	}
	h := c.headers.Clone()
	h.Del("Content-Type")
	return u, h
}

// sameOrigin reports whether u is on origin (scheme://host[:port]).
func sameOrigin(u, origin string) bool {
	pu, err := url.Parse(u)
	if err != nil {
		return false
	}
	return pu.Scheme+"://"+pu.Host == origin
}
