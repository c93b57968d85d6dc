// Package export sends what a run measures to where a team already looks:
// Prometheus remote write and OpenTelemetry (OTLP/HTTP), live during each
// level (its running figures every few seconds) and at each level's end (its
// final point from the metric catalogue).
//
// It is never in the way of the measurement: the workers' hot path (Request,
// Gaps) adds to a small delta under a lock held for a few additions; one
// goroutine takes the delta, computes the figures and queues a batch; one
// goroutine per target sends. Each target's queue is bounded: a slow, down or
// refusing receiver costs dropped samples, counted and warned about, never a
// wait in the engine or memory that grows.
package export

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runnerbench/runner/result"
)

// DefaultInterval is how often a level's running figures are sent.
const DefaultInterval = 5 * time.Second

// queueBatches bounds each target's queue: at the default interval, a
// minute of live batches (and the final points between them).
const queueBatches = 16

// sendTimeout bounds one send, so a receiver that never answers costs a
// dropped batch, not a sender stuck until the end of the run.
const sendTimeout = 10 * time.Second

// Options configure an Exporter.
type Options struct {
	Targets []Target
	// Plan and RunID identify the run; Labels are the run's own labels.
	Plan, RunID string
	Labels      map[string]string
	// Interval is how often running figures are sent (0: DefaultInterval).
	Interval time.Duration
	// Warn is told once per target when it first drops samples, with a
	// message that holds no credential; may be nil.
	Warn func(msg string)
	// Client sends the batches (nil: a client of its own, which never
	// follows a redirect).
	Client *http.Client
}

// Exporter sends one run's figures. Its methods other than Close are safe
// for concurrent use and never block on a receiver.
type Exporter struct {
	o       Options
	base    []label
	hot     hot
	ctrl    chan event
	done    chan struct{}
	senders []*sender
	closed  atomic.Bool
	lost    atomic.Int64 // events the exporter's goroutine could not take
}

// event is what the engine's goroutines hand the exporter's goroutine.
type event struct {
	kind     int
	key      levelKey
	label    string
	endpoint string
	d        *delta
	point    *result.Point
	itl      *result.ITL
	started  int64
	inFlight int64
}

const (
	evStart = iota
	evDelta
	evDone
	evProgress
)

// New starts an exporter's goroutines. Close stops them.
func New(o Options) (*Exporter, error) {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.Client == nil {
		o.Client = newClient()
	}
	e := &Exporter{
		o: o, base: runLabels(o.Plan, o.RunID, o.Labels),
		ctrl: make(chan event, 256), done: make(chan struct{}),
	}
	for _, t := range o.Targets {
		s, err := newSender(t, o.Client, o.Warn)
		if err != nil {
			return nil, err
		}
		e.senders = append(e.senders, s)
	}
	for _, s := range e.senders {
		go s.run()
	}
	go e.loop()
	return e, nil
}

// newClient is the exporter's HTTP client: it never follows a redirect, so
// a credential in a header cannot be carried to another host.
func newClient() *http.Client {
	return &http.Client{
		Timeout: sendTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return errors.New("the receiver redirected: export does not follow redirects")
		},
	}
}

// LevelStarted begins a level's figures (before its first request). The
// level's delta is allocated here, outside its measured window.
func (e *Exporter) LevelStarted(stage string, index int, label, endpoint string) {
	d := newDelta()
	e.hot.mu.Lock()
	e.hot.key, e.hot.cur = levelKey{stage, index}, d
	e.hot.mu.Unlock()
	e.send(event{kind: evStart, key: levelKey{stage, index}, label: label, endpoint: endpoint})
}

// Request records a finished request; warm-ups and requests of another
// level than the running one are ignored. Called concurrently by workers.
func (e *Exporter) Request(r *result.Request) {
	if r.Warmup {
		return
	}
	h := &e.hot
	h.mu.Lock()
	if h.cur != nil && h.key.stage == r.Stage && h.key.level == r.Level {
		h.cur.request(r)
	}
	h.mu.Unlock()
}

// Gaps records inter-token gaps of the running level's measured requests.
// It does not keep g.
func (e *Exporter) Gaps(g []time.Duration) {
	h := &e.hot
	h.mu.Lock()
	if h.cur != nil {
		h.cur.gaps(g)
	}
	h.mu.Unlock()
}

// Progress records the engine's count of started and in-flight requests.
func (e *Exporter) Progress(stage string, index int, started, inFlight int) {
	e.send(event{kind: evProgress, key: levelKey{stage, index}, started: int64(started), inFlight: int64(inFlight)})
}

// LevelDone sends the level's last running figures and its final point.
// itl, when not nil, is the level's every inter-token gap (its record's).
func (e *Exporter) LevelDone(stage string, index int, p *result.Point, itl *result.ITL) {
	d, k := e.hot.swap(nil)
	if k != (levelKey{stage, index}) {
		d = nil
	}
	cp := *p
	e.send(event{kind: evDone, key: levelKey{stage, index}, d: d, point: &cp, itl: itl})
}

// send hands ev to the exporter's goroutine without waiting: a full
// channel (the goroutine starved for a long time) loses the event, counted.
func (e *Exporter) send(ev event) {
	if e.closed.Load() {
		return
	}
	select {
	case e.ctrl <- ev:
	default:
		e.lost.Add(1)
	}
}

// Close stops the live figures, gives the queued batches until ctx ends to
// be sent, and returns each target's account. Call it once, after the last
// level.
func (e *Exporter) Close(ctx context.Context) []result.ExportStat {
	e.closed.Store(true)
	close(e.ctrl)
	<-e.done
	var wg sync.WaitGroup
	for _, s := range e.senders {
		wg.Add(1)
		go func() { defer wg.Done(); s.close(ctx) }()
	}
	wg.Wait()
	out := make([]result.ExportStat, 0, len(e.senders))
	for _, s := range e.senders {
		st := s.stat()
		if n := e.lost.Load(); n > 0 {
			st.LostEvents = int(n)
		}
		out = append(out, st)
	}
	return out
}

// Warning is a report warning for a target that dropped samples ("" when it
// dropped none).
func Warning(st result.ExportStat) string {
	if st.Dropped == 0 && st.LostEvents == 0 {
		return ""
	}
	msg := fmt.Sprintf("export %s to %s: %d of %d samples dropped", st.To, st.URL, st.Dropped, st.Sent+st.Dropped)
	if st.LostEvents > 0 {
		msg += fmt.Sprintf(", %d level events lost", st.LostEvents)
	}
	if st.LastError != "" {
		msg += " (" + st.LastError + ")"
	}
	return msg
}

// loop is the exporter's goroutine: it folds the workers' deltas into the
// level's figures, and queues a batch every interval and at each level's end.
func (e *Exporter) loop() {
	defer close(e.done)
	t := time.NewTicker(e.o.Interval)
	defer t.Stop()
	var cur *level
	spare := newDelta()
	for {
		select {
		case ev, ok := <-e.ctrl:
			if !ok {
				return
			}
			cur = e.handle(cur, ev)
		case <-t.C:
			if cur == nil {
				continue
			}
			d, k := e.hot.swapIf(cur.key(), spare)
			if d == nil {
				continue // the level ended; its last delta comes with evDone
			}
			_ = k
			cur.sum.add(d)
			d.reset()
			spare = d
			e.enqueue(&batch{at: time.Now(), start: cur.start, series: cur.liveSeries()})
		}
	}
}

// handle applies one event to the level in progress and returns it.
func (e *Exporter) handle(cur *level, ev event) *level {
	switch ev.kind {
	case evStart:
		return &level{stage: ev.key.stage, index: ev.key.level, label: ev.label, endpoint: ev.endpoint,
			start: time.Now(), labels: levelLabels(e.base, ev.key.stage, ev.label, ev.endpoint), sum: newDelta()}
	case evProgress:
		if cur != nil && cur.key() == ev.key {
			cur.started, cur.inFlight = ev.started, ev.inFlight
		}
	case evDone:
		if cur == nil || cur.key() != ev.key {
			return cur
		}
		if ev.d != nil {
			cur.sum.add(ev.d)
		}
		cur.inFlight = 0
		if ev.itl != nil && ev.itl.Hist != nil {
			// The record's gaps, every one (the live ones miss the workers'
			// unflushed batches); copied, since the record is shared.
			cur.sum.itl.Reset()
			cur.sum.itl.Merge(ev.itl.Hist)
			cur.sum.itlSum = float64(ev.itl.SumNs) / 1e6
		}
		if ev.point.Label() != "" {
			cur.labels = levelLabels(e.base, cur.stage, ev.point.Label(), cur.endpoint)
		}
		series := append(cur.liveSeries(), pointSeries(ev.point, cur.labels)...)
		e.enqueue(&batch{at: time.Now(), start: cur.start, series: series})
		return nil
	}
	return cur
}

func (l *level) key() levelKey { return levelKey{l.stage, l.index} }

// swapIf swaps in next when the running level is k.
func (h *hot) swapIf(k levelKey, next *delta) (*delta, levelKey) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cur == nil || h.key != k {
		return nil, h.key
	}
	d := h.cur
	h.cur = next
	return d, k
}

func (e *Exporter) enqueue(b *batch) {
	for _, s := range e.senders {
		s.enqueue(b)
	}
}

// RunID identifies a run in every sample (the run_id label): the first 12
// hex digits of the sha256 of its plan's hash and its start instant, so a
// live run and a later `runner export` of its records carry the same one.
func RunID(planHash string, startedAt time.Time) string {
	sum := sha256.Sum256([]byte(planHash + "\n" + startedAt.UTC().Format(time.RFC3339Nano)))
	return hex.EncodeToString(sum[:6])
}
