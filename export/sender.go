package export

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/runnerbench/runner/internal/redact"
	"github.com/runnerbench/runner/result"
)

// Protocols a target speaks.
const (
	PrometheusRW = "prometheus-rw"
	OTLP         = "otlp"
)

// Target is one receiver.
type Target struct {
	// To is PrometheusRW or OTLP.
	To string
	// URL is the remote-write URL (e.g. http://host:9090/api/v1/write), or
	// the OTLP endpoint as in OTEL_EXPORTER_OTLP_ENDPOINT (Runner appends
	// /v1/metrics).
	URL string
	// Headers are sent with every request (credentials: never shown).
	Headers map[string]string
}

// ParseTarget reads --export's value, PROTOCOL=URL.
func ParseTarget(s string) (Target, error) {
	to, u, ok := strings.Cut(s, "=")
	if !ok {
		return Target{}, fmt.Errorf("%q: want %s=URL or %s=URL", redact.URL(s), PrometheusRW, OTLP)
	}
	t := Target{To: to, URL: u}
	return t, t.Check()
}

// Check says what is wrong with t, never showing a credential.
func (t Target) Check() error {
	if t.To != PrometheusRW && t.To != OTLP {
		return fmt.Errorf("unknown export protocol %q: want %s or %s", t.To, PrometheusRW, OTLP)
	}
	u, err := url.Parse(t.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s: %s is not an http(s) URL with a host", t.To, redact.URL(t.URL))
	}
	return nil
}

// endpoint is where t's batches are posted.
func (t Target) endpoint() string {
	if t.To != OTLP {
		return t.URL
	}
	u, _ := url.Parse(t.URL)
	u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/metrics"
	return u.String()
}

// urlInText finds URLs in an error's text.
var urlInText = regexp.MustCompile(`https?://[^\s"'<>]+`)

// scrub is an error's text without credentials: every URL in it as
// redact.URL shows it (errors from the libraries quote the request's URL
// whole), and no header value of t.
func (t Target) scrub(msg string) string {
	msg = urlInText.ReplaceAllStringFunc(msg, redact.URL)
	for _, v := range t.Headers {
		if len(v) >= 4 {
			msg = strings.ReplaceAll(msg, v, redact.Marker)
		}
	}
	return msg
}

// Shown is t's URL as reports and logs show it.
func (t Target) Shown() string { return redact.URL(t.endpoint()) }

// sender posts one target's batches from its bounded queue.
type sender struct {
	t      Target
	client *http.Client
	warn   func(string)
	q      chan *batch
	done   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	post   func(ctx context.Context, b *batch) error

	sent, dropped atomic.Int64
	mu            sync.Mutex
	lastErr       string
	warned        bool
}

func newSender(t Target, client *http.Client, warn func(string)) (*sender, error) {
	if err := t.Check(); err != nil {
		return nil, err
	}
	s := &sender{t: t, client: client, warn: warn, q: make(chan *batch, queueBatches), done: make(chan struct{})}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	switch t.To {
	case PrometheusRW:
		w, err := newRemoteWrite(t, client)
		if err != nil {
			return nil, err
		}
		s.post = w.post
	default:
		s.post = s.postOTLP
	}
	return s, nil
}

// enqueue queues b without waiting: a full queue drops it, counted.
func (s *sender) enqueue(b *batch) {
	select {
	case s.q <- b:
	default:
		s.drop(b, errors.New("queue full: the receiver is slower than the run"))
	}
}

func (s *sender) run() {
	defer close(s.done)
	for b := range s.q {
		ctx, cancel := context.WithTimeout(s.ctx, sendTimeout)
		err := s.post(ctx, b)
		cancel()
		if err != nil {
			s.drop(b, err)
			continue
		}
		s.sent.Add(int64(b.samples(s.t.To)))
	}
}

// drop counts b's samples as dropped and warns, once, why.
func (s *sender) drop(b *batch, err error) {
	s.dropped.Add(int64(b.samples(s.t.To)))
	msg := s.t.scrub(err.Error())
	s.mu.Lock()
	s.lastErr = msg
	first := !s.warned
	s.warned = true
	s.mu.Unlock()
	if first && s.warn != nil {
		s.warn(fmt.Sprintf("export %s to %s: dropping samples (%s); the run goes on, the count is in the report", s.t.To, s.t.Shown(), msg))
	}
}

// close lets the queued batches go until ctx ends, then abandons the rest.
func (s *sender) close(ctx context.Context) {
	close(s.q)
	select {
	case <-s.done:
	case <-ctx.Done():
		s.cancel()
		<-s.done
	}
	s.cancel()
}

func (s *sender) stat() result.ExportStat {
	s.mu.Lock()
	defer s.mu.Unlock()
	return result.ExportStat{To: s.t.To, URL: s.t.Shown(), Sent: int(s.sent.Load()), Dropped: int(s.dropped.Load()), LastError: s.lastErr}
}

// postOTLP sends b as an OTLP/HTTP protobuf request.
func (s *sender) postOTLP(ctx context.Context, b *batch) error {
	body, err := encodeOTLP(b)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.t.endpoint(), bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	for k, v := range s.t.Headers {
		req.Header.Set(k, v)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("the receiver answered %s", resp.Status)
	}
	return nil
}

// headerTransport adds a target's headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.headers {
		r.Header.Set(k, v)
	}
	return h.base.RoundTrip(r)
}
