// Package telemetry samples Prometheus pages while a level runs: the
// endpoint's own /metrics and the plan's telemetry targets (a DCGM exporter,
// AMD's device metrics exporter, a node exporter, another engine replica).
// Each target is read on a goroutine of its own, with its own connections,
// a timeout per read and a bounded body, so a slow, huge, failing or
// hostile target costs missing samples and a warning, never a send, a
// token read or a stalled level. Every read becomes one
// result.TelemetryScrape (a line of telemetry.jsonl).
//
// A level's reads bracket its measured window: one round as the level
// starts (Level, awaited by WaitFirst before the window opens), one every
// interval, and a last round after the window closes (Stop), so counters can
// be interpolated at both edges.
package telemetry

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runnerbench/runner/internal/redact"
	"github.com/runnerbench/runner/result"
)

// Bounds on one read.
const (
	// MaxBody bounds the bytes a read takes of a page (after any gzip): a
	// DCGM exporter's page of eight GPUs is tens of KiB, a node exporter's
	// a few hundred.
	MaxBody = 8 << 20
	// MaxLine bounds one line of a page.
	MaxLine = 64 << 10
	// MaxSamples bounds the samples a read keeps; the rest are counted as
	// dropped.
	MaxSamples = 20_000
)

// Target is one page to read.
type Target struct {
	// Name names it in the records; Endpoint marks the stage's endpoint.
	Name     string
	Endpoint bool
	URL      string
	// Header is sent with every read (credentials the plan allowed for
	// the URL's host).
	Header http.Header
	// Keep says which samples to keep, by metric name (a histogram's
	// _bucket, _sum and _count by the histogram's name too).
	Keep func(metric string) bool
	// Client reads it (nil: the sampler's own: no proxy, no redirects).
	Client *http.Client

	reads, failed atomic.Int64
	mu            sync.Mutex
	lastErr       string
	absent        atomic.Bool // an endpoint without /metrics: not read again
}

// Sampler reads targets during levels. One Sampler serves a whole run; its
// targets' accounts add up over the levels.
type Sampler struct {
	interval, timeout time.Duration
	targets           []*Target
	client            *http.Client
}

// New returns a sampler of targets, reading each every interval with at
// most timeout per read.
func New(targets []*Target, interval, timeout time.Duration) *Sampler {
	tr := &http.Transport{
		Proxy:               nil, // a page is read where the plan says, not through the job's proxy
		DialContext:         (&net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout: timeout,
		MaxIdleConnsPerHost: 2,
		IdleConnTimeout:     90 * time.Second,
	}
	client := &http.Client{
		Transport: tr,
		// A redirect is not followed: the plan's credentials for this host
		// must not go to another, and a page that moved is a wrong URL.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return &Sampler{interval: interval, timeout: timeout, targets: targets, client: client}
}

// Interval is the time between two reads of a target.
func (s *Sampler) Interval() time.Duration { return s.interval }

// Timeout bounds one read.
func (s *Sampler) Timeout() time.Duration { return s.timeout }

// Stats are the plan's targets' accounts so far (the endpoints' are not
// included: their reads are in the records).
func (s *Sampler) Stats() []result.TelemetryStat {
	var out []result.TelemetryStat
	for _, t := range s.targets {
		t.mu.Lock()
		last := t.lastErr
		t.mu.Unlock()
		out = append(out, result.TelemetryStat{Target: t.Name, URL: redact.URL(t.URL), Reads: int(t.reads.Load()), Failed: int(t.failed.Load()), LastError: last})
	}
	return out
}

// Close releases idle connections.
func (s *Sampler) Close() {
	if s == nil {
		return
	}
	s.client.CloseIdleConnections()
}

// LevelRun is one level's sampling in progress.
type LevelRun struct {
	first  sync.WaitGroup
	done   sync.WaitGroup
	stop   chan struct{}
	cancel context.CancelFunc
	once   sync.Once
}

// Level starts reading the sampler's targets and extra (the stage's
// endpoint) for one level: a round now, then one every interval, until
// Stop. emit receives every read, from the targets' goroutines; it must be
// quick and safe for concurrent use. A nil sampler reads nothing.
func (s *Sampler) Level(ctx context.Context, stage string, level, shard int, extra []*Target, emit func(*result.TelemetryScrape)) *LevelRun {
	lr := &LevelRun{stop: make(chan struct{})}
	if s == nil {
		return lr
	}
	ctx, lr.cancel = context.WithCancel(context.WithoutCancel(ctx))
	all := append(append([]*Target(nil), s.targets...), extra...)
	for _, t := range all {
		if t == nil || t.absent.Load() {
			continue
		}
		lr.first.Add(1)
		lr.done.Add(1)
		go s.loop(ctx, lr, t, stage, level, shard, emit)
	}
	return lr
}

// WaitFirst waits for every target's first read of the level (at most one
// timeout) to be read and handed to emit.
func (lr *LevelRun) WaitFirst() { lr.first.Wait() }

// Stop ends the level's sampling: a read in flight is abandoned, each
// target is read once more (the read after the window), and Stop returns
// when those reads are done (at most one timeout).
func (lr *LevelRun) Stop() {
	lr.once.Do(func() { close(lr.stop) })
	lr.done.Wait()
	if lr.cancel != nil {
		lr.cancel()
	}
}

func (s *Sampler) loop(ctx context.Context, lr *LevelRun, t *Target, stage string, level, shard int, emit func(*result.TelemetryScrape)) {
	defer lr.done.Done()
	tag := func(r *result.TelemetryScrape) *result.TelemetryScrape {
		r.Target, r.Endpoint, r.Stage, r.Level, r.Shard = t.Name, t.Endpoint, stage, level, shard
		return r
	}
	r := s.read(ctx, t)
	if t.Endpoint && r.Error != "" {
		// The endpoint's /metrics is optional (hosted APIs have none, or
		// keep it behind other credentials): one that does not answer the
		// level's first read is not read in this level, and says nothing.
		if r.Error == errAbsent {
			t.absent.Store(true)
		}
		lr.first.Done()
		return
	}
	s.account(t, r)
	emit(tag(r))
	lr.first.Done() // after emit: WaitFirst's caller finds the read handed on
	tick := time.NewTicker(s.interval)
	defer tick.Stop()
	for {
		select {
		case <-lr.stop:
			r := s.read(ctx, t)
			s.account(t, r)
			emit(tag(r))
			return
		case <-tick.C:
		}
		rctx, cancel := context.WithCancel(ctx)
		got := make(chan *result.TelemetryScrape, 1)
		go func() { got <- s.read(rctx, t) }()
		select {
		case r := <-got:
			cancel()
			s.account(t, r)
			emit(tag(r))
		case <-lr.stop:
			// The window has closed: the read in flight would land inside
			// or outside it by chance. Abandon it and read once more.
			cancel()
			<-got
			r := s.read(ctx, t)
			s.account(t, r)
			emit(tag(r))
			return
		}
	}
}

func (s *Sampler) account(t *Target, r *result.TelemetryScrape) {
	t.reads.Add(1)
	if r.Error != "" {
		t.failed.Add(1)
		t.mu.Lock()
		t.lastErr = r.Error
		t.mu.Unlock()
	}
}

// errAbsent is the error of an endpoint read answered 404: no /metrics.
const errAbsent = "HTTP 404: no metrics page"

// read reads t once.
func (s *Sampler) read(ctx context.Context, t *Target) *result.TelemetryScrape {
	start := time.Now()
	out := &result.TelemetryScrape{}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	fail := func(err error) *result.TelemetryScrape {
		out.Time = time.Now().Round(0).UTC()
		out.TookMs = result.Round(float64(time.Since(start))/float64(time.Millisecond), 3)
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within %s", s.timeout)
		}
		out.Error = sampleText(redact.Error(err).Error())
		out.Samples = nil
		return out
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.URL, nil)
	if err != nil {
		return fail(err)
	}
	for k, vs := range t.Header {
		req.Header[k] = vs
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	client := t.Client
	if client == nil {
		client = s.client
	}
	resp, err := client.Do(req)
	if err != nil {
		return fail(err)
	}
	defer resp.Body.Close()
	at := time.Now()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		if resp.StatusCode == http.StatusNotFound && t.Endpoint {
			return fail(errors.New(errAbsent))
		}
		return fail(fmt.Errorf("HTTP %d", resp.StatusCode))
	}
	samples, dropped, err := Parse(resp.Body, t.Keep)
	if err != nil {
		return fail(err)
	}
	out.Time = at.Round(0).UTC()
	out.TookMs = result.Round(float64(time.Since(start))/float64(time.Millisecond), 3)
	out.Samples, out.Dropped = samples, dropped
	return out
}

// sampleText shortens an error to one line of at most 200 bytes.
func sampleText(s string) string {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\n", " "), "\r", " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// errTooLarge is a page past MaxBody.
var errTooLarge = fmt.Errorf("page larger than %d MiB", MaxBody>>20)

// countReader counts what it reads and fails past MaxBody.
type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.n > MaxBody {
		return n, errTooLarge
	}
	return n, err
}

// Parse reads Prometheus text exposition (or OpenMetrics text), keeping the
// samples whose metric keep accepts (nil: every sample), at most
// MaxSamples (dropped counts the rest). A line that is not a sample is
// skipped; a page none of whose lines is a sample, but some are not, is not
// Prometheus text (an HTML error page, garbage) and is an error, as is a
// page past MaxBody or a line past MaxLine.
func Parse(r io.Reader, keep func(string) bool) (samples []result.TelemetrySample, dropped int, err error) {
	sc := bufio.NewScanner(&countReader{r: r})
	sc.Buffer(make([]byte, 0, 16<<10), MaxLine)
	valid, invalid := 0, 0
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		name, labels, v, ok := parseLine(line, keep)
		if !ok {
			invalid++
			continue
		}
		valid++
		if math.IsNaN(v) || math.IsInf(v, 0) || (keep != nil && !keep(name) && !keep(histogramBase(name))) {
			continue
		}
		if len(samples) >= MaxSamples {
			dropped++
			continue
		}
		samples = append(samples, result.TelemetrySample{Metric: name, Labels: labels, Value: v})
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, 0, fmt.Errorf("a line longer than %d KiB: not a Prometheus page", MaxLine>>10)
		}
		return nil, 0, err
	}
	if valid == 0 && invalid > 0 {
		return nil, 0, errors.New("not Prometheus text")
	}
	return samples, dropped, nil
}

// histogramBase is a histogram sample's family name (name without
// _bucket, _sum or _count), or name.
func histogramBase(name string) string {
	for _, suf := range []string{"_bucket", "_sum", "_count"} {
		if b, ok := strings.CutSuffix(name, suf); ok {
			return b
		}
	}
	return name
}

// parseLine splits one sample line: `name{label="value",...} value [ts]`.
// Blanks around labels and commas are allowed (the DCGM exporter writes
// `{gpu="0", UUID="..."}`), and so is a trailing comma.
//
// A sample keep rejects has its labels checked but not built (nil labels):
// most of a page is not kept, and building its label maps would be most of
// a read's garbage.
func parseLine(line string, keep func(string) bool) (name string, labels map[string]string, v float64, ok bool) {
	i := 0
	for i < len(line) && isNameChar(line[i], i == 0) {
		i++
	}
	if i == 0 {
		return "", nil, 0, false
	}
	name, rest := line[:i], line[i:]
	if strings.HasPrefix(rest, "{") {
		var n int
		build := keep == nil || keep(name) || keep(histogramBase(name))
		labels, n, ok = parseLabels(rest, build)
		if !ok {
			return "", nil, 0, false
		}
		rest = rest[n:]
	}
	if rest == "" || (rest[0] != ' ' && rest[0] != '\t') {
		return "", nil, 0, false
	}
	fields := strings.Fields(rest)
	if len(fields) < 1 || len(fields) > 2 {
		return "", nil, 0, false
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return "", nil, 0, false
	}
	return name, labels, v, true
}

// parseLabels parses `{...}` at the start of s; n is its length. Without
// build it only checks them (labels stays nil).
func parseLabels(s string, build bool) (labels map[string]string, n int, ok bool) {
	i, count := 1, 0
	skip := func() {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
	}
	for {
		skip()
		if i < len(s) && s[i] == '}' {
			return labels, i + 1, true
		}
		j := i
		for i < len(s) && isNameChar(s[i], i == j) {
			i++
		}
		if i == j {
			return nil, 0, false
		}
		key := s[j:i]
		skip()
		if i >= len(s) || s[i] != '=' {
			return nil, 0, false
		}
		i++
		skip()
		if i >= len(s) || s[i] != '"' {
			return nil, 0, false
		}
		i++
		var b strings.Builder
		for {
			if i >= len(s) {
				return nil, 0, false
			}
			c := s[i]
			if c == '"' {
				i++
				break
			}
			if c == '\\' && i+1 < len(s) {
				i++
				if build {
					switch s[i] {
					case 'n':
						b.WriteByte('\n')
					default:
						b.WriteByte(s[i])
					}
				}
				i++
				continue
			}
			if build {
				b.WriteByte(c)
			}
			i++
		}
		count++
		if count > 64 {
			return nil, 0, false // no real sample has that many labels
		}
		if build {
			if labels == nil {
				labels = map[string]string{}
			}
			labels[key] = b.String()
		}
		skip()
		if i < len(s) && s[i] == ',' {
			i++
			continue
		}
		skip()
		if i < len(s) && s[i] == '}' {
			return labels, i + 1, true
		}
		return nil, 0, false
	}
}

func isNameChar(c byte, first bool) bool {
	return c == '_' || c == ':' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || !first && '0' <= c && c <= '9'
}

// KeepFor is the Keep of a plan target: the known metrics
// (result.TelemetryKept) and the target's own names and prefixes (a name
// ending in *).
func KeepFor(extra []string) func(string) bool {
	exact := map[string]bool{}
	var prefixes []string
	for _, m := range extra {
		if p, ok := strings.CutSuffix(m, "*"); ok {
			prefixes = append(prefixes, p)
		} else {
			exact[m] = true
		}
	}
	return func(name string) bool {
		if result.TelemetryKept(name) || exact[name] {
			return true
		}
		for _, p := range prefixes {
			if strings.HasPrefix(name, p) {
				return true
			}
		}
		return false
	}
}
