package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/runnerbench/runner/internal/redact"
	"github.com/runnerbench/runner/scenario"
)

// WaitReady polls GET <base>/models, falling back to <origin>/health, until
// either answers 200 or timeout passes. The error names the URLs tried.
func (c *Client) WaitReady(ctx context.Context, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = scenario.DefaultReadyTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	urls := []string{c.URL("/models"), c.origin + "/health"}
	var last error
	delay := 100 * time.Millisecond
	start := time.Now()
	every := readyLogEvery(timeout)
	next := start.Add(every)
	refused := false
	for {
		models, err := c.Get(ctx, urls[0])
		if err == nil {
			c.checkModels(models)
			return nil
		}
		last = err
		if _, err := c.Get(ctx, urls[1]); err == nil {
			c.checkBaseURL(last)
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
			c.log.Warn().Str("url", redact.URL(c.origin)).Str("timeout", timeout.String()).
				Msg("connection refused: nothing listens there yet; waiting for a server to start (if it is already running, the host or port in base_url is wrong)")
		}
		if now := time.Now(); !now.Before(next) && ctx.Err() == nil {
			// A wrong port or path must not be a silent minute: say what
			// the endpoint answers (the error is redacted, as every URL is).
			c.log.Info().Str("waited", now.Sub(start).Round(every/5).String()).Str("timeout", timeout.String()).
				Str("last_error", Excerpt([]byte(last.Error()))).Msg("still waiting for the endpoint")
			next = now.Add(every)
		}
		t := time.NewTimer(min(delay, max(time.Until(next), time.Millisecond)))
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("endpoint %s not ready after %s (tried %s): %w",
				c.name, timeout, strings.Join(redact.URLs(urls), ", "), last)
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

// Get fetches u with the endpoint's credentials and returns the start of
// its body (up to 1 MiB) when the server answers 200.
func (c *Client) Get(ctx context.Context, u string) ([]byte, error) {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	c.setAuth(req)
	resp, err := c.Pooled().Do(req)
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

// Prime opens n keep-alive connections before a measured window by sending
// n GETs of the model list, up to primeSenders at a time: otherwise every
// worker's first TTFT would include a TCP (and TLS) handshake, and at high
// concurrency the burst of dials would delay the streams already running.
//
// Each GET holds its connection until every GET has its answer: a GET that
// read its answer at once would hand its connection back to the pool for
// the next one, and at 16,384 GETs fewer than half then got a connection of
// their own (the rest were dialled inside the measured window, their
// handshakes in its first TTFTs).
//
// Prime gives up once primeStall passes without an answer and with no
// connection being opened: a server that
// stops answering costs a level that much, while one that is slowly opening
// tens of thousands of connections (5-6 s for 16,384 on two cores, answers
// arriving all along) is waited for. Giving up, it hands the answered GETs'
// connections back to the pool and cancels the rest. A server that serves
// a limited number of connections at once stops answering at that number;
// llama-server with fewer HTTP threads than GETs stops short of them,
// though not at its thread count nor every time (4 slots, 16 GETs: with 2
// HTTP threads 2, 3, 9 and 13 answered in four tries, with 6 threads 6, 11
// and 15, with 1, 3 or its default all 16 once each), and with its defaults
// a level of 8 streams waited out the bound (then 5 s). The first time
// Prime gives up it says so, with what was answered.
//
// At tens of thousands of streams this is a level's largest cost before its
// window opens, so each GET is bare: one context for them all, the body
// discarded into io.Discard's pooled buffer rather than kept.
func (c *Client) Prime(ctx context.Context, n int) {
	if n <= 1 {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	u, pooled := c.URL("/models"), c.Pooled()
	// One request, its URL parsed and headers set once; each GET is a
	// shallow copy (net/http only reads them, and clones the headers it
	// changes).
	base, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return
	}
	c.setAuth(base)
	p := &priming{n: n, all: make(chan struct{}), release: make(chan struct{})}
	stalled := make(chan bool, 1)
	go func() { stalled <- p.watch(ctx, cancel, &c.dialing) }()
	// primeSenders send the GETs, one after another each. An answered GET's
	// response waits in answered, its body unread, which holds its
	// connection: a GET that read its answer at once would hand its
	// connection back to the pool for the next one.
	answered := make(chan *http.Response, n)
	var left atomic.Int64
	left.Store(int64(n))
	var senders, drainers sync.WaitGroup
	for range min(n, primeSenders) {
		senders.Go(func() {
			for left.Add(-1) >= 0 {
				resp, err := pooled.Do(base.WithContext(ctx))
				if err == nil {
					p.served.Add(1) // before ended: watch reads served once done stalls
					answered <- resp
				}
				p.ended()
			}
		})
	}
	// Once every GET has ended, or Prime gives up, each answer is read to
	// its end (within a bound), so its connection goes back to the pool.
	select {
	case <-p.all:
	case <-p.release:
	case <-ctx.Done():
	}
	for range min(n, primeSenders) {
		drainers.Go(func() {
			for resp := range answered {
				_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
				resp.Body.Close()
				p.kept.Add(1)
			}
		})
	}
	senders.Wait() // the GETs left end when watch cancels them
	close(answered)
	drainers.Wait()
	cancel() // ends the watch if the GETs ended otherwise
	if <-stalled {
		c.notePrimeStall(u, int(p.served.Load()), n)
	}
}

// primeSenders bounds the GETs Prime has in flight. Sent all at once, 16,384
// GETs were 16,384 goroutines, each with its dial's goroutine beside it,
// every stack fresh memory; a few hundred at a time reuse their stacks, and
// a server sees its connections opened at the pace it accepts them.
const primeSenders = 512

// priming is one Prime's count of its GETs.
type priming struct {
	n            int
	done         atomic.Int64  // GETs ended, answered or not
	served, kept atomic.Int64  // GETs answered; of those, connections handed back to the pool
	all, release chan struct{} // closed when every GET ended; when Prime gives up
}

// ended counts a GET that ended; the last closes all.
func (p *priming) ended() {
	if p.done.Add(1) == int64(p.n) {
		close(p.all)
	}
}

// watch gives up when primeStall passes without a GET ending and without a
// connection being opened (dialing, the client's count; true): it releases
// the answered GETs, whose connections go back to the pool, then cancels
// the rest. It ends when every GET has ended (all closed) or ctx does.
//
// A connection still being opened is progress however long it takes (the
// endpoint's connect timeout bounds it): at 16,384 GETs on two cores the
// answers paused for 0.30 to 1.26 s in five tries, always while connections
// were being opened, and counting those, no 20 ms tick went by without
// progress. On answers alone, Prime gave up in one of 16 such tries.
func (p *priming) watch(ctx context.Context, cancel context.CancelFunc, dialing *atomic.Int64) (stalled bool) {
	tick := time.NewTicker(primeStall / 50)
	defer tick.Stop()
	last, lastAt := int64(0), time.Now()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-p.all:
			return false
		case now := <-tick.C:
			if a := p.done.Load(); a > last || dialing.Load() > 0 {
				last, lastAt = a, now
				continue
			} else if now.Sub(lastAt) < primeStall {
				continue
			}
			close(p.release)
			// Each released GET reads the rest of a small answer already
			// received; cancelling before they have would close their
			// connections with the pending GETs'.
			for wait := time.Now().Add(primeStall); p.kept.Load() < p.served.Load() && time.Now().Before(wait); {
				time.Sleep(time.Millisecond)
			}
			cancel()
			return true
		}
	}
}

// primeStall bounds Prime: how long it waits with no GET answered and no
// connection being opened.
const primeStall = time.Second

// notePrimeStall logs, once per endpoint, that Prime gave up with answered
// of its n GETs of u answered.
func (c *Client) notePrimeStall(u string, answered, n int) {
	c.primeOnce.Do(func() {
		c.log.Warn().Str("url", redact.URL(u)).Int("connections", n).Int("answered", answered).Msg(primeStallText(answered, n))
	})
}

// primeStallText is notePrimeStall's sentence.
func primeStallText(answered, n int) string {
	if answered == 0 {
		return fmt.Sprintf("the GETs of the model list sent on %d connections, to open them before a level, were answered on none within %v; the level went on, its requests opening their connections", n, primeStall)
	}
	return fmt.Sprintf("the GETs of the model list sent on %d connections, to open them before a level, were answered on %d, then on none for %v; the level went on, its requests opening the connections it lacked. Servers that serve a limited number of connections at once do this (llama-server does, with fewer HTTP threads than connections: --threads-http)",
		n, answered, primeStall)
}

// httpStatusError is a GET answered with a status other than 200.
type httpStatusError struct {
	url    string // redacted
	status int
}

func (e *httpStatusError) Error() string { return fmt.Sprintf("GET %s: http %d", e.url, e.status) }

// maxListedModels bounds how many of the server's models a warning names.
const maxListedModels = 10

// checkModels warns when the server's model list (GET /v1/models, an
// OpenAI list: {"data": [{"id": ...}]}) does not name the plan's model:
// every request would then fail, or be served by another model than the one
// the report names. Nothing is said of an answer that is not such a list.
func (c *Client) checkModels(body []byte) {
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if json.Unmarshal(body, &list) != nil || len(list.Data) == 0 {
		return
	}
	model := c.ep.Model
	var ids []string
	for _, m := range list.Data {
		if m.ID == model {
			return
		}
		ids = append(ids, m.ID)
	}
	slices.Sort(ids)
	shown := make([]string, 0, min(len(ids), maxListedModels)+1)
	for i, id := range ids {
		if i == maxListedModels {
			shown = append(shown, fmt.Sprintf("and %d more", len(ids)-maxListedModels))
			break
		}
		shown = append(shown, strconv.Quote(id)) // server text: quoted, so it cannot break a log line
	}
	c.warn(fmt.Sprintf("model %q is not among the models %s lists (%s): requests may fail, or be answered by another model than the report names; set the endpoint's model to one of them",
		model, redact.URL(c.URL("/models")), strings.Join(shown, ", ")))
}

// checkBaseURL warns when the server answered its health check but not
// <base_url>/models with a 404, and base_url has no /v1: the mistake behind
// most "every request failed with 404" runs (OpenAI-compatible servers
// serve under /v1, and base_url is the API root, /v1 included).
func (c *Client) checkBaseURL(modelsErr error) {
	var se *httpStatusError
	if !errors.As(modelsErr, &se) || se.status != http.StatusNotFound {
		return
	}
	u, err := url.Parse(c.baseURL)
	if err != nil || slices.Contains(strings.Split(u.Path, "/"), "v1") {
		return
	}
	base := redact.URL(c.baseURL)
	c.warn(fmt.Sprintf("GET %s answered 404 and base_url %s has no /v1: OpenAI-compatible servers serve /v1/models and /v1/chat/completions; did you mean base_url: %s/v1?",
		se.url, base, base))
}
