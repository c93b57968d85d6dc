package runner

import (
	"context"
	"fmt"
	"math"
	neturl "net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/runner/aggregate"
	"github.com/runnerbench/runner/runner/servermetrics"
	"github.com/runnerbench/runner/scenario"
)

// durationGrace is how long in-flight requests may run on after a level's
// duration ends before they are cut (and recorded as interrupted).
const durationGrace = 30 * time.Second

// Client-bottleneck thresholds: when the runner itself is the limit, the
// latencies it reports are its own, not the server's.
const (
	cpuBusyShare  = 0.85 // of the cores the process may use
	lagP99LimitMs = 10.0
	// schedP90LimitMs bounds the Go runtime's scheduling latency p90 over a
	// level: a stream's reader that waits that long to run stamps its token
	// that late, which CPU share misses when other processes hold the cores.
	schedP90LimitMs  = 10.0
	lagP99TTFTShare  = 0.10 // of TTFT p50
	progressInterval = 100 * time.Millisecond
)

// dispatcher decides when a level's measured requests go out. The closed
// loop (N workers, each sending its next request as soon as its last one
// finished) is one; open-loop rate shapes plug in as another, using the
// levelRun's begin (once, when the measured window opens), claim,
// prepare/send or exec, and newWorker (one per goroutine).
type dispatcher interface {
	dispatch(ctx context.Context, lr *levelRun)
}

// levelRun is one level in progress.
type levelRun struct {
	e      *Engine
	sp     *stagePlan
	idx    int
	conc   int
	rate   *float64
	total  int       // measured requests to send; 0 = until the deadline
	stopAt time.Time // zero = no duration bound
	agg    *aggregate.Level
	start  time.Time // set by begin

	duration time.Duration           // level duration bound (0 = none)
	cancel   context.CancelCauseFunc // cancels the level's context
	label    string
	grace    *time.Timer
	stopProg func()

	claimed        atomic.Int64
	done, failed   atomic.Int64
	outTok         atomic.Int64
	interruptedReq atomic.Int64
	lenMismatch    atomic.Int64 // pinned successes whose output differs from their own max_tokens

	// Multi-turn levels: one aggregate per turn, and each worker's shards
	// of them (see multiturn.go).
	turnAggs    []*aggregate.Level
	convMu      sync.Mutex
	convWorkers map[*worker]*convWorker
}

// claim hands out the next request's sequence number, or false when the
// level has sent all it should.
func (lr *levelRun) claim() (int, bool) {
	if !lr.stopAt.IsZero() && !time.Now().Before(lr.stopAt) {
		return 0, false
	}
	n := lr.claimed.Add(1) - 1
	if lr.total > 0 && n >= int64(lr.total) {
		return 0, false
	}
	return int(n), true
}

// newWorker returns a worker recording into its own aggregate shard.
func (lr *levelRun) newWorker() *worker {
	return lr.e.newWorker(lr.sp.path, lr.agg.NewShard())
}

// begin opens the measured window: the dispatcher calls it once, right
// before the first measured request goes out (after preparing the first
// wave, so building bodies is not inside anyone's TTFT).
func (lr *levelRun) begin() {
	lr.start = time.Now()
	if lr.duration > 0 {
		lr.stopAt = lr.start.Add(lr.duration)
		lr.grace = time.AfterFunc(lr.duration+durationGrace, func() {
			lr.cancel(&interruptError{"cut at the level's grace deadline (duration + " + durationGrace.String() + ")"})
		})
	}
	lr.stopProg = lr.e.progress(lr, lr.label)
}

// prepared is a measured request built and waiting to be sent.
type prepared struct {
	rec  *result.Request
	job  *job
	err  error
	conv *conversation // multi-turn: the conversation this is the first turn of
}

// newRecord starts the record of measured request seq.
func (lr *levelRun) newRecord(seq int) *result.Request {
	rec := &result.Request{Stage: lr.sp.st.Name, Level: lr.idx, Concurrency: lr.conc, Seq: seq}
	if lr.rate != nil {
		rec.Concurrency, rec.Rate = 0, *lr.rate
	}
	return rec
}

// prepare builds measured request seq (in multi-turn stages, the first turn
// of conversation seq).
func (lr *levelRun) prepare(seq int) prepared {
	if lr.sp.turns > 1 {
		return lr.prepareConversation(seq)
	}
	rec := lr.newRecord(seq)
	j, err := lr.sp.build(lr.idx, seq, false)
	if j != nil {
		rec.Nonce = j.nonce
	}
	return prepared{rec: rec, job: j, err: err}
}

// exec builds and sends measured request seq on w; due is when it should have gone out.
func (lr *levelRun) exec(ctx context.Context, w *worker, seq int, due time.Time) {
	lr.send(ctx, w, lr.prepare(seq), due)
}

// send sends a prepared request on w and records it; a conversation's first
// turn goes on with the conversation's later turns.
func (lr *levelRun) send(ctx context.Context, w *worker, p prepared, due time.Time) {
	if p.conv != nil {
		lr.converse(ctx, w, p, due)
		return
	}
	lr.sendOne(ctx, w, p, due)
}

// sendOne sends one prepared request on w and records it.
func (lr *levelRun) sendOne(ctx context.Context, w *worker, p prepared, due time.Time) {
	rec := p.rec
	if p.err != nil {
		rec.Start = time.Now()
		fail(rec, result.ErrMalformed, p.err.Error())
	} else {
		rec.MaxTokens = p.job.maxTokens
		w.do(ctx, p.job, rec)
		if rec.OK && lr.sp.pinned && rec.OutputTokens != rec.MaxTokens {
			lr.lenMismatch.Add(1)
		}
	}
	rec.DispatchLagMs = max(0, ms(rec.Start.Sub(due)))
	if lr.rate != nil && !rec.Start.IsZero() {
		// Open loop: the latency a user arriving on schedule saw, lag included.
		late := ms(rec.Start.Sub(due))
		rec.E2EFromScheduleMs = result.Ptr(rec.E2EMs + late)
		if rec.TTFTMs != nil {
			rec.TTFTFromScheduleMs = result.Ptr(*rec.TTFTMs + late)
		}
	}
	w.shard.Add(rec)
	lr.done.Add(1)
	if rec.OK {
		lr.outTok.Add(int64(rec.OutputTokens))
	} else {
		lr.failed.Add(1)
		if rec.ErrorKind == result.ErrInterrupted {
			lr.interruptedReq.Add(1)
		}
	}
	if f := lr.e.opts.OnRequest; f != nil {
		f(rec)
	}
}

// closedLoop keeps conc requests in flight: each worker sends its next
// request as soon as its previous one finished.
type closedLoop struct {
	conc int
	ramp time.Duration
}

func (c closedLoop) dispatch(ctx context.Context, lr *levelRun) {
	// Every worker builds its first request before the window opens, so
	// the first wave leaves together instead of behind conc body builds.
	var wg, ready sync.WaitGroup
	open := make(chan struct{})
	ready.Add(c.conc)
	for i := range c.conc {
		wg.Go(func() {
			w := lr.newWorker()
			seq, ok := lr.claim()
			var first prepared
			if ok {
				first = lr.prepare(seq)
			}
			ready.Done()
			<-open
			if !ok || ctx.Err() != nil {
				return // never sent: not a request of the level
			}
			// Without a ramp the first wave is due as each worker wakes:
			// putting conc requests on the wire at once takes the client
			// some milliseconds, a spread that is not lateness against any
			// schedule (counting it would flag every large single-wave level
			// as client-bound; the scheduling latency still catches a
			// starved client).
			due := time.Now()
			if c.ramp > 0 {
				due = lr.start.Add(c.ramp * time.Duration(i) / time.Duration(c.conc))
				if !sleepUntil(ctx, due) {
					lr.send(ctx, w, first, due) // recorded as interrupted
					return
				}
			}
			lr.send(ctx, w, first, due)
			due = time.Now() // the worker is free: its next request is due now
			for ctx.Err() == nil {
				seq, ok := lr.claim()
				if !ok {
					return
				}
				lr.exec(ctx, w, seq, due)
				due = time.Now()
			}
		})
	}
	ready.Wait()
	lr.begin()
	close(open)
	wg.Wait()
}

func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-tm.C:
		return true
	}
}

// RunStage runs every level of st and returns the stage's result. It returns
// the points measured so far when ctx is cancelled (the cut level marked
// Interrupted, its in-flight requests recorded as interrupted), and an error
// only when the stage could not run at all. Checks are not evaluated here.
func (e *Engine) RunStage(ctx context.Context, plan *scenario.Plan, st *scenario.Stage) (*result.Stage, error) {
	if st == nil {
		return nil, fmt.Errorf("runner: nil stage")
	}
	out := &result.Stage{
		Name: st.Name,
		Endpoint: result.Endpoint{
			Name: e.t.Name, BaseURL: redactURL(e.baseURL), Model: e.model,
			Simulator: e.t.Endpoint.Simulator != nil,
		},
		API:    st.API,
		Mode:   st.Mode,
		Load:   "concurrency",
		Points: []result.Point{},
		Checks: []result.CheckOutcome{},
	}
	if len(st.Rate) > 0 {
		out.Load = "rate"
	} else if len(st.Concurrency) == 0 {
		return out, fmt.Errorf("stage %s: %w", st.Name, errNoLevels)
	}
	sp, warns, err := e.compileStage(ctx, plan, st)
	if err != nil {
		return out, err
	}
	out.API = sp.api
	out.Mode = modeNatural
	if sp.pinned {
		out.Mode = modePinned
	}
	e.mu.Lock()
	out.Warnings = append(append(out.Warnings, e.warnings...), warns...)
	e.mu.Unlock()
	maxConc := st.MaxConcurrency
	for _, c := range st.Concurrency {
		maxConc = max(maxConc, c)
	}
	for _, r := range st.Rate {
		maxConc = max(maxConc, rateConns(r, st.MaxConcurrency))
	}
	e.resize(maxConc)
	scraper := e.scraper()
	seed := sp.seed
	if sp.turns > 1 {
		defer e.tapReplies()()
	}

	if out.Load == "rate" {
		for i, rate := range st.Rate {
			if ctx.Err() != nil {
				break
			}
			if !(rate > 0) || math.IsInf(rate, 0) {
				return out, fmt.Errorf("stage %s: rate %g is not a positive number of requests per second", st.Name, rate)
			}
			ol := &openLoop{rate: rate, arrival: st.Arrival, burstiness: st.Burstiness, seed: seed, maxConc: st.MaxConcurrency}
			p, turns := e.runLevel(ctx, sp, i, levelShape{conc: st.MaxConcurrency, rate: &rate}, ol, scraper)
			p.AchievedRate = ol.achievedRate()
			out.Points = append(append(out.Points, p), turns...)
			e.levelDone(st.Name, i)
		}
		return out, nil
	}
	for i, conc := range st.Concurrency {
		if ctx.Err() != nil {
			break
		}
		if conc < 1 {
			return out, fmt.Errorf("stage %s: concurrency %d is not positive", st.Name, conc)
		}
		p, turns := e.runLevel(ctx, sp, i, levelShape{conc: conc}, closedLoop{conc: conc, ramp: st.Ramp.D()}, scraper)
		out.Points = append(append(out.Points, p), turns...)
		e.levelDone(st.Name, i)
	}
	return out, nil
}

// levelDone tells the caller a level is measured, so it can make the
// level's records durable and close its progress bar.
func (e *Engine) levelDone(stage string, level int) {
	if f := e.opts.OnLevelDone; f != nil {
		f(stage, level)
	}
}

// scraper reads the endpoint's Prometheus counters.
func (e *Engine) scraper() *servermetrics.Scraper {
	url := e.t.Endpoint.MetricsURL
	if url == "" {
		url = e.origin + "/metrics"
	}
	var names servermetrics.Names
	if c := e.t.Endpoint.Counters; c != nil {
		names = servermetrics.Names{
			SpecDrafts: c.SpecDrafts, SpecDraftTokens: c.SpecDraftTokens, SpecAcceptedTokens: c.SpecAcceptedTokens,
			PrefixCacheQueries: c.PrefixCacheQueries, PrefixCacheHits: c.PrefixCacheHits,
		}
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

// lenMismatchWarning identifies the aggregate's ignore_eos warning, which
// assumes one output length for the whole level.
const lenMismatchWarning = "returned a number of output tokens other than the"

// levelShape is what a level is named by: its concurrency (closed loop), or
// its rate and in-flight cap (open loop; conc 0 when uncapped).
type levelShape struct {
	conc int
	rate *float64
}

// runLevel runs one level: warm-ups, counter read, the measured window, counter read.
// A multi-turn level also returns one point per turn.
func (e *Engine) runLevel(ctx context.Context, sp *stagePlan, idx int, shape levelShape, d dispatcher, scraper *servermetrics.Scraper) (result.Point, []result.Point) {
	st := sp.st
	conc := shape.conc
	spec := aggregate.Spec{
		Concurrency:  conc,
		Rate:         shape.rate,
		OutputTokens: sp.output.Nominal(),
		Pinned:       sp.pinned,
	}
	if sp.synthetic {
		spec.InputTokens = sp.input.Nominal()
	}
	// Shared prefixes and multi-turn histories are cached on purpose.
	spec.ExpectPrefixHits = sp.shared != nil || sp.turns > 1
	if st.SLO != nil {
		spec.SLO = &aggregate.SLO{TTFTMs: st.SLO.TTFTMs, TPOTMs: st.SLO.TPOTMs, E2EMs: st.SLO.E2EMs}
	}
	lr := &levelRun{e: e, sp: sp, idx: idx, conc: conc, rate: shape.rate, agg: aggregate.NewLevel(spec)}
	if sp.turns > 1 {
		lr.convWorkers = map[*worker]*convWorker{}
		for t := 1; t <= sp.turns; t++ {
			ts := spec
			ts.Turn = t
			lr.turnAggs = append(lr.turnAggs, aggregate.NewLevel(ts))
		}
	}
	lr.total = st.Requests
	label := "c=" + fmt.Sprint(conc)
	// conns is how many requests may be in flight at once: the connections
	// to open and the warm-ups' parallelism.
	conns := conc
	if shape.rate != nil {
		lr.total = rateLevelTotal(st.Requests, st.Duration.D(), *shape.rate)
		label = "rate=" + strconv.FormatFloat(*shape.rate, 'g', -1, 64)
		conns = rateConns(*shape.rate, conc)
	} else if lr.total <= 0 && st.Duration <= 0 {
		lr.total = conc // the reference's single wave
	}
	log := e.log.With().Str("stage", st.Name).Str("level_label", label).Logger()

	warm := 1
	if st.Warmup != nil {
		warm = max(0, *st.Warmup)
	}
	e.primeConnections(ctx, conns)
	e.warmup(ctx, sp, idx, conns, warm)

	before := e.readCounters(ctx, scraper)
	var ru0 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	sched0 := ReadSched()

	// The level's context: cancelled when the run is, or at the grace
	// deadline after a duration-bounded level's end.
	lctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	lr.cancel, lr.duration, lr.label = cancel, st.Duration.D(), label
	d.dispatch(lctx, lr)
	if lr.start.IsZero() {
		lr.begin() // a dispatcher that sent nothing
	}
	wall := time.Since(lr.start)
	if lr.grace != nil {
		lr.grace.Stop()
	}
	lr.stopProg()

	var ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	var schedP90 *float64
	if _, lat, ok := SchedLatency(sched0, ReadSched(), 0.90); ok {
		schedP90 = result.Ptr(result.Round(float64(lat)/float64(time.Millisecond), 3))
	}
	after := e.readCounters(context.WithoutCancel(ctx), scraper)

	p := lr.agg.Finish(wall, servermetrics.Diff(before, after))
	p.Concurrency = conc
	if ctx.Err() != nil {
		p.Interrupted = true
	}
	cpu := cpuTime(&ru1) - cpuTime(&ru0)
	var capWaits int64
	if ol, ok := d.(*openLoop); ok {
		capWaits = ol.capWaits.Load()
	}
	if wall > 0 {
		// Requests that waited for a max_concurrency slot were late by the
		// plan's design, not the client's: their lag does not flag it.
		lag := p.DispatchLagP99Ms
		if capWaits > 0 {
			p.DispatchLagP99Ms = nil
		}
		markBottleneck(&p, 100*float64(cpu)/float64(wall), runtime.GOMAXPROCS(0), schedP90)
		p.DispatchLagP99Ms = lag
	}
	if capWaits > 0 {
		p.Warnings = append(p.Warnings, fmt.Sprintf(
			"%d of %d requests waited for a free max_concurrency slot (%d): the schedule offered more than the cap lets through, and the waits show as dispatch lag and in the latency from the schedule",
			capWaits, p.NRequests, conc))
	}
	log.Debug().Int("completed", p.Completed).Int("failed", p.Failed).Dur("wall", wall).Msg("level done")
	turns := lr.finishTurns(wall, conc)
	for i := range turns {
		turns[i].Interrupted = p.Interrupted
	}
	if sp.varyOut && sp.pinned {
		// The aggregate judges ignore_eos against the level's nominal length;
		// with lengths varying per request, judge each against its own.
		p.OutputLenMismatch = int(lr.lenMismatch.Load())
		p.Warnings = slices.DeleteFunc(p.Warnings, func(w string) bool { return strings.Contains(w, lenMismatchWarning) })
		if p.OutputLenMismatch > 0 {
			p.Warnings = append(p.Warnings, fmt.Sprintf(
				"%d of %d successful requests returned a number of output tokens other than their max_tokens: the engine did not honour ignore_eos, so tokens/s is not comparable across levels or runs",
				p.OutputLenMismatch, p.Completed))
		}
		for i := range turns {
			turns[i].OutputLenMismatch = 0 // counted for the level only
			turns[i].Warnings = slices.DeleteFunc(turns[i].Warnings, func(w string) bool { return strings.Contains(w, lenMismatchWarning) })
		}
	}
	return p, turns
}

// markBottleneck sets the client CPU share (percent of one core) and the
// runtime's scheduling latency p90, and flags the level when the runner itself
// may have been the limit: its CPU near the cores it may use, its goroutines
// waiting to run longer than schedLimitMs allows, or requests leaving late
// (dispatch lag p99 above 10 ms or above 10% of the TTFT p50, whichever is
// smaller).
func markBottleneck(p *result.Point, cpuPct float64, procs int, schedP90Ms *float64) {
	p.ClientCPUPercent = result.Ptr(result.Round(cpuPct, 1))
	p.ClientSchedP90Ms = schedP90Ms
	if limit := schedLimitMs(p); schedP90Ms != nil && *schedP90Ms > limit {
		p.ClientBottleneck = true
		p.Warnings = append(p.Warnings, fmt.Sprintf(
			"client scheduling latency p90 %.2f ms exceeds %.2f ms: the runner's readers waited for a core (its own load or other processes'), so token times are late by up to that much", *schedP90Ms, limit))
	}
	if cpuPct >= cpuBusyShare*100*float64(procs) {
		p.ClientBottleneck = true
		p.Warnings = append(p.Warnings, fmt.Sprintf(
			"client CPU at %.0f%% of %d usable cores: the runner may be the bottleneck, latencies include its own delays", cpuPct, procs))
	}
	if lag := p.DispatchLagP99Ms; lag != nil {
		limit := lagP99LimitMs
		if p.TTFTP50Ms != nil {
			limit = min(limit, lagP99TTFTShare**p.TTFTP50Ms)
		}
		if *lag > limit {
			p.ClientBottleneck = true
			p.Warnings = append(p.Warnings, fmt.Sprintf(
				"dispatch lag p99 %.2f ms exceeds %.2f ms: requests left the client late, the runner may be the bottleneck", *lag, limit))
		}
	}
}

func cpuTime(r *syscall.Rusage) time.Duration {
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}

// readCounters reads the server's counters; a server without them gives nil.
func (e *Engine) readCounters(ctx context.Context, s *servermetrics.Scraper) *servermetrics.Snapshot {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	snap, err := s.Read(ctx)
	if err != nil {
		e.log.Debug().Err(err).Msg("reading server metrics")
		return nil
	}
	return snap
}

// primeConnections opens conc keep-alive connections before the measured
// window by sending conc concurrent GETs of the model list: otherwise every
// worker's first TTFT would include a TCP (and TLS) handshake, and at high
// concurrency the burst of dials would delay the streams already running.
func (e *Engine) primeConnections(ctx context.Context, conc int) {
	if conc <= 1 {
		return
	}
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() { _ = e.get(ctx, e.url("/models")) })
	}
	wg.Wait()
}

// warmup sends n unmeasured requests, up to conc at a time, so the level's
// first measured requests find open connections and a warm engine.
func (e *Engine) warmup(ctx context.Context, sp *stagePlan, idx, conc, n int) {
	if n <= 0 {
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(n, conc) {
		wg.Go(func() {
			w := e.newWorker(sp.path, nil)
			for ctx.Err() == nil {
				seq := int(next.Add(1) - 1)
				if seq >= n {
					return
				}
				rec := &result.Request{Stage: sp.st.Name, Level: idx, Concurrency: conc, Seq: seq, Warmup: true}
				j, err := sp.build(idx, seq, true)
				if err != nil {
					rec.Start = time.Now()
					fail(rec, result.ErrMalformed, err.Error())
				} else {
					rec.Nonce = j.nonce
					w.do(ctx, j, rec)
				}
				if !rec.OK {
					e.log.Debug().Str("kind", rec.ErrorKind).Str("error", rec.Error).Msg("warm-up request failed")
				}
				if f := e.opts.OnRequest; f != nil {
					f(rec)
				}
			}
		})
	}
	wg.Wait()
}

// progress reports the level's progress every progressInterval until stopped.
func (e *Engine) progress(lr *levelRun, label string) (stop func()) {
	f := e.opts.OnProgress
	if f == nil {
		return func() {}
	}
	snap := func() {
		el := time.Since(lr.start)
		p := Progress{
			Stage: lr.sp.st.Name, Level: lr.idx, Label: label,
			Done: int(lr.done.Load()), Total: lr.total * max(1, lr.sp.turns), Failed: int(lr.failed.Load()), Elapsed: el,
		}
		if s := el.Seconds(); s > 0 {
			p.OutputTPS = float64(lr.outTok.Load()) / s
		}
		f(p)
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(progressInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				snap()
			}
		}
	}()
	return func() {
		close(done)
		<-finished
		snap() // the final count
	}
}

// schedLimitMs is how long (p90) the runner's goroutines may wait for a core
// before its token times are suspect: 10% of the level's ITL p50 (a reader
// that late skews single gaps by that share), at least 1 ms (the runtime's
// own jitter) and at most 10 ms.
func schedLimitMs(p *result.Point) float64 {
	limit := schedP90LimitMs
	if p.ITLP50Ms != nil {
		limit = min(limit, max(1, 0.10**p.ITLP50Ms))
	}
	return limit
}
