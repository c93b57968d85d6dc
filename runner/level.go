package runner

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/runner/body"
	"github.com/runnerbench/runner/runner/clock"
	"github.com/runnerbench/runner/runner/host"
	"github.com/runnerbench/runner/runner/servermetrics"
	"github.com/runnerbench/runner/runner/shape"
	"github.com/runnerbench/runner/runner/wire"
)

// durationGrace is how long in-flight requests may run on after a level's
// duration ends before they are cut (and recorded as interrupted).
const durationGrace = 30 * time.Second

// LevelRun is one level in progress: what its Dispatcher drives (through
// the exported methods) and its unit (one request or one conversation) fills.
type LevelRun struct {
	e    *Engine
	sp   *stagePlan
	idx  int
	lvl  shape.Level
	unit unit
	sink Sink

	total  int       // measured requests of the whole level; 0 = until the deadline
	stopAt time.Time // zero = no duration bound
	start  time.Time // set by begin: when the current replicate's window opened

	rep      int // the replicate being run, from 0
	repFirst int // the sequence number of its first request
	repTotal int // its requests; 0 = until the deadline

	ctx      context.Context         // the level's context
	cancel   context.CancelCauseFunc // cancels the level's context
	grace    *time.Timer
	stopProg func()

	claimed      atomic.Int64
	done, failed atomic.Int64
	outTok       atomic.Int64
	capWaits     atomic.Int64 // open-loop arrivals that waited for a max_concurrency slot
	unsent       atomic.Int64 // open-loop arrivals due before the duration's end, never sent
	// probeSeq numbers the level's probe requests (the probe stream's
	// goroutine alone counts them); probing is the stream of the replicate
	// under way (nil: none).
	probeSeq int
	probing  *probes
	inFlight atomic.Int64 // measured requests on the wire now
	peak     atomic.Int64 // the most there were at once

	itlMu   sync.Mutex
	itl     result.ITL    // every measured inter-token gap of the level
	batches []*itlBatch   // the workers' unflushed gaps and stamps
	stamps  result.Stamps // how the level's token chunks were timed
	// origin is when the level's first window opened (set by Begin, under
	// itlMu); itlSlices its gaps by slice of the spec's SliceNs, by when
	// each gap's token arrived, when the level is sliced.
	origin    time.Time
	itlSlices []result.ITL

	// live TTFT and ITL medians for the progress line, fed between a
	// worker's requests (never while it reads a stream).
	ttftLive, itlLive liveQuantile

	// looker answers the looks of a level with until: (nil: the level
	// sends its count); stop is what a look decided.
	looker Looker
	stop   atomic.Pointer[result.LevelStop]
}

// Claim hands out the next request's sequence number, or false when the
// level has sent all it should. A shard's n-th request is the level's
// request n·N+i (Part.global).
func (lr *LevelRun) Claim() (int, bool) {
	if !lr.stopAt.IsZero() && !time.Now().Before(lr.stopAt) {
		return 0, false
	}
	if lr.stop.Load() != nil {
		return 0, false // the level's until: rule is met
	}
	n := lr.claimed.Add(1) - 1
	if lr.repTotal > 0 && n >= int64(lr.repTotal) {
		return 0, false
	}
	return lr.lvl.Part.Global(lr.repFirst + int(n)), true
}

// replicates is how many times the level's load is started.
func (lr *LevelRun) replicates() int { return max(1, lr.lvl.Spec.Replicates) }

// startReplicate readies replicate r: its share of the level's requests
// (the first total mod k replicates take one more), its sequence numbers
// after the last replicate's (so no prompt or nonce repeats), and a fresh
// count of claims; the dispatcher then opens its window with begin.
func (lr *LevelRun) startReplicate(r int) {
	if r > 0 {
		granted := int(lr.claimed.Load())
		if lr.repTotal > 0 {
			granted = min(granted, lr.repTotal)
		}
		lr.repFirst += granted
	}
	lr.rep, lr.start, lr.stopAt = r, time.Time{}, time.Time{}
	lr.claimed.Store(0)
	if k := lr.replicates(); lr.total > 0 {
		lr.repTotal = lr.total / k
		if r < lr.total%k {
			lr.repTotal++
		}
	}
}

// NewWorker returns a worker whose token gaps count toward the level.
func (lr *LevelRun) NewWorker() shape.Worker { return lr.newWorker() }

func (lr *LevelRun) newWorker() *worker {
	b := &itlBatch{lr: lr}
	if lr.lvl.Spec.SliceNs > 0 {
		b.at = new([batchSize]time.Time)
	}
	lr.itlMu.Lock()
	lr.batches = append(lr.batches, b)
	lr.itlMu.Unlock()
	return &worker{Worker: wire.NewWorker(lr.e.c, lr.sp.proto, b), itl: b}
}

// worker is a sending goroutine's state (the shape's opaque Worker): its
// wire, the batch its token gaps go to, and, in a multi-turn stage, the
// copy of its conversation's last reply.
type worker struct {
	*wire.Worker
	itl   *itlBatch
	reply *wire.Capture
}

// Begin opens the measured window: the dispatcher calls it once, right
// before the first measured request goes out (after preparing the first
// wave, so building bodies is not inside anyone's TTFT). A scheduled level
// waits for its slot's opening instant, and its duration and grace are
// counted from the schedule, so every shard's window closes together.
func (lr *LevelRun) Begin() {
	slot := lr.lvl.Slot
	if slot != nil {
		clock.SleepUntil(lr.ctx, slot.Open)
	}
	lr.start = time.Now()
	lr.itlMu.Lock()
	if lr.origin.IsZero() {
		lr.origin = lr.start
	}
	lr.itlMu.Unlock()
	if d := lr.lvl.Duration / time.Duration(lr.replicates()); d > 0 {
		stopAt, cutAt := lr.start.Add(d), lr.start.Add(d+durationGrace)
		why := "cut at the level's grace deadline (duration + " + durationGrace.String() + ")"
		if slot != nil {
			stopAt, cutAt = slot.Open.Add(d), slot.End
			why = "cut at the end of the level's scheduled slot (its drain bound)"
		}
		lr.stopAt = stopAt
		lr.grace = time.AfterFunc(time.Until(cutAt), func() { lr.cancel(wire.Interrupt(why)) })
	}
	lr.stopProg = lr.e.progress(lr)
	lr.probing = lr.startProbes()
}

// prepared is a measured request built and waiting to be sent.
type prepared struct {
	rec  *result.Request
	job  *body.Job
	err  error
	conv *body.Conversation // multi-turn: the conversation this is the first turn of
	// headers are the request's own (its traceparent), made with its record.
	headers []wire.Header
}

// Prepare builds measured request seq (a conversation's first turn, with
// turns) before its due time.
func (lr *LevelRun) Prepare(seq int) shape.Prepared { return lr.unit.prepare(lr, seq) }

// Send sends a prepared request on w (both from this level: its Prepare
// and NewWorker); due is when it should have gone out.
func (lr *LevelRun) Send(ctx context.Context, w shape.Worker, p shape.Prepared, due time.Time) {
	lr.unit.send(ctx, lr, w.(*worker), p.(*prepared), due)
}

// CapWaited counts an open-loop arrival that waited for a max_concurrency slot.
func (lr *LevelRun) CapWaited() { lr.capWaits.Add(1) }

// Unsent counts n open-loop arrivals due before the level's end that Claim
// refused, when it was the level's duration that refused them: a claim
// refused by the count (claimed has passed repTotal, so nothing is left)
// or by the until: rule is the level ending as planned.
func (lr *LevelRun) Unsent(n int) {
	if lr.stopAt.IsZero() || time.Now().Before(lr.stopAt) || lr.stop.Load() != nil {
		return
	}
	if lr.repTotal > 0 {
		n = min(n, lr.repTotal-int(lr.claimed.Load()))
	}
	if n > 0 {
		lr.unsent.Add(int64(n))
	}
}

// CoarseSends reports Options.CoarseSends: requests handed off when due,
// with no precise wait.
func (lr *LevelRun) CoarseSends() bool { return lr.e.opts.CoarseSends }

// newPrepared starts measured request seq: its record, and its own headers
// (a traceparent, unless the endpoint turns it off).
func (lr *LevelRun) newPrepared(seq int) *prepared {
	rec := &result.Request{Stage: lr.sp.st.Name, Level: lr.idx, Seq: seq, Replicate: lr.rep, Shard: lr.e.shardIndex()}
	if r := lr.lvl.Spec.Rate; r != nil {
		rec.Rate = *r
	} else {
		rec.Concurrency = lr.lvl.Spec.Concurrency
	}
	p := &prepared{rec: rec}
	if lr.e.t.Endpoint.SendsTraceparent() {
		h, id := newTraceparent()
		p.headers, rec.TraceID = append(p.headers, h), id
	}
	return p
}

// sendOne sends one prepared request on w and records it; reply, when
// set, receives a copy of its answer.
func (lr *LevelRun) sendOne(ctx context.Context, w *worker, p *prepared, due time.Time, reply *wire.Capture) {
	rec := p.rec
	if p.err != nil {
		rec.Start = time.Now()
		wire.Fail(rec, result.ErrMalformed, p.err.Error())
	} else {
		rec.MaxTokens = p.job.MaxTokens
		rec.Inputs = p.job.Inputs
		rec.ImageBytes = p.job.ImageBytes
		lr.enter()
		w.Do(ctx, wire.Request{Body: p.job.Body, Results: p.job.Results, Reply: reply, Headers: p.headers,
			GiveUp: wire.GiveUp{After: p.job.GiveUpAfter, Tokens: p.job.GiveUpTokens}}, rec)
		lr.inFlight.Add(-1)
		lr.live(w, rec)
		// A cancelled request that had a token was served as much as a success.
		if lr.sp.served.judge(rec.OK || (rec.Cancelled && rec.Chunks > 0), w.NotServed(), w.NoModel()) {
			lr.cancel(wire.Interrupt("stopped: the endpoint does not serve the stage's API"))
		}
	}
	lr.lateBy(rec, due)
	lr.done.Add(1)
	switch {
	case rec.OK:
		lr.outTok.Add(int64(rec.OutputTokens))
	case !rec.Cancelled:
		lr.failed.Add(1)
	}
	lr.sink.Request(rec)
	lr.look()
}

// lateBy records how late rec went out against due, and, in open loop,
// the latencies a user arriving on schedule saw.
func (lr *LevelRun) lateBy(rec *result.Request, due time.Time) {
	late := wire.Ms(rec.Start.Sub(due))
	rec.DispatchLagMs = max(0, late)
	if lr.lvl.Spec.Rate != nil && !rec.Start.IsZero() {
		// Open loop: the latency a user arriving on schedule saw, lag included.
		rec.E2EFromScheduleMs = result.Ptr(rec.E2EMs + late)
		if rec.TTFTMs != nil {
			rec.TTFTFromScheduleMs = result.Ptr(*rec.TTFTMs + late)
		}
	}
}

// look asks the level's until: rule, once a request has finished, whether
// the level has its answer; the first stop ends the level's claims.
func (lr *LevelRun) look() {
	if lr.looker == nil || lr.stop.Load() != nil || lr.start.IsZero() {
		return
	}
	now := time.Now()
	rec := &result.LevelRecord{Stage: lr.sp.st.Name, Level: lr.idx, Spec: lr.lvl.Spec,
		Start: lr.start.Round(0), End: now.Round(0), WallNs: int64(now.Sub(lr.start))}
	if st := lr.looker.Look(rec, int(lr.done.Load())); st != nil {
		lr.stop.CompareAndSwap(nil, st)
	}
}

// untilStop is the stop of a level with until: for its record: what a look
// decided, else the cap it reached (nil for another level, or one
// interrupted before either).
func (lr *LevelRun) untilStop(interrupted bool) *result.LevelStop {
	if lr.lvl.Spec.Until == "" {
		return nil
	}
	if st := lr.stop.Load(); st != nil {
		return st
	}
	if interrupted {
		return nil
	}
	cap := "max_duration"
	if lr.total > 0 && int(lr.claimed.Load()) >= lr.total {
		cap = "max_requests"
	}
	return &result.LevelStop{Rule: lr.lvl.Spec.Until, Reason: result.StopCapped, Cap: cap}
}

// enter counts a measured request going on the wire, for the level's live
// peak in flight (what its record carries past the exact limit).
func (lr *LevelRun) enter() {
	n := lr.inFlight.Add(1)
	for {
		p := lr.peak.Load()
		if n <= p || lr.peak.CompareAndSwap(p, n) {
			return
		}
	}
}

// unit is what one claimed request of a level is: a single request, or a
// whole multi-turn conversation (multiturn.go).
type unit interface {
	prepare(lr *LevelRun, seq int) *prepared
	send(ctx context.Context, lr *LevelRun, w *worker, p *prepared, due time.Time)
}

// single is the unit of a stage without turns: one request.
type single struct{}

func (single) prepare(lr *LevelRun, seq int) *prepared {
	p := lr.newPrepared(seq)
	p.rec.Prompt = lr.sp.body.PromptIndex(seq)
	p.job, p.err = lr.sp.body.Build(lr.idx, seq, false)
	if p.job != nil {
		p.rec.Nonce, p.rec.Model = p.job.Nonce, p.job.Model
		lr.session(p, p.job.Nonce) // a request alone is a conversation of one turn
	}
	return p
}

// session sends p as a request of the session id (its conversation's
// nonce) in the stage's session header, and records it; nothing without
// a session header.
func (lr *LevelRun) session(p *prepared, id string) {
	if h := lr.sp.st.SessionHeader; h != "" {
		p.headers = append(p.headers, wire.Header{Name: h, Value: id})
		p.rec.Session = id
	}
}

func (single) send(ctx context.Context, lr *LevelRun, w *worker, p *prepared, due time.Time) {
	lr.sendOne(ctx, w, p, due, nil)
}

// runLevel measures one level: warm-ups, a counter read, the measured
// window, a counter read. It returns the level's record; its requests have
// gone to the sink as they finished.
func (e *Engine) runLevel(ctx context.Context, sp *stagePlan, idx int, lvl shape.Level, scraper *servermetrics.Scraper, sink Sink) *result.LevelRecord {
	rec := &result.LevelRecord{Stage: sp.st.Name, Level: idx, Spec: lvl.Spec}
	lvl.Part.Describe(rec)
	sink.LevelStarted(rec)
	if !e.slotBegins(ctx, lvl) {
		return rec // this shard's part of the level is empty
	}
	lr := &LevelRun{e: e, sp: sp, idx: idx, lvl: lvl, unit: sp.unit(), sink: sink, total: lvl.Requests}
	if l, ok := sink.(Looker); ok && lvl.Spec.Until != "" {
		lr.looker = l
	}
	// Telemetry reads start with the level (their first round beside the
	// warm-ups, awaited before the window opens) and end with a round
	// after the window closes, so both edges are bracketed.
	tel := e.levelTelemetry(ctx, sp.st.Name, idx, sink)
	defer tel.Stop()
	conns := lvl.Load.Conns()
	e.c.Prime(ctx, conns)
	e.warmup(ctx, sp, idx, conns, sp.warmups, sink)
	if sp.served.Err() != nil {
		return rec // the endpoint does not serve the API: nothing to measure
	}
	nearOpen(ctx, lvl)
	tel.WaitFirst()

	before := e.readCounters(ctx, scraper)
	var ru0, ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	sched0 := host.ReadSched()

	// The level's context: cancelled when the run is, or at the grace
	// deadline after a duration-bounded level's end.
	lctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	lr.ctx, lr.cancel = lctx, cancel
	lr.measure(rec)
	if lvl.Slot != nil {
		rec.LateStartMs = max(0, result.Round(wire.Ms(lr.start.Sub(lvl.Slot.Open)), 3))
	}

	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	rec.Client = result.ClientLoad{CPUNs: int64(cpuTime(&ru1) - cpuTime(&ru0)), Procs: runtime.GOMAXPROCS(0)}
	if _, lat, ok := host.SchedLatency(sched0, host.ReadSched(), 0.90); ok {
		rec.Client.SchedP90Ms = result.Ptr(result.Round(float64(lat)/float64(time.Millisecond), 3))
	}
	atSlotEnd(ctx, lvl)
	after := e.readCounters(context.WithoutCancel(ctx), scraper)
	tel.Stop()
	rec.Server = servermetrics.Diff(before, after)
	for _, b := range lr.batches { // every worker has stopped
		b.flush()
	}
	rec.ITL = lr.itl
	rec.ITLSlices = lr.itlSlices
	if lr.stamps.Kernel+lr.stamps.User > 0 {
		rec.Client.Stamps = &lr.stamps
	}
	rec.CapWaits = lr.capWaits.Load()
	rec.Unsent = lr.unsent.Load()
	rec.MaxInFlight = int(lr.peak.Load())
	rec.Interrupted = ctx.Err() != nil
	rec.Stop = lr.untilStop(rec.Interrupted)
	e.log.Debug().Str("stage", sp.st.Name).Str("level_label", lvl.Spec.Label).
		Int64("done", lr.done.Load()).Int64("failed", lr.failed.Load()).Dur("wall", rec.Wall()).Msg("level done")
	return rec
}

// measure runs the level's replicates (one, unless the plan asks for more)
// and sets the record's window: from the first opening to the last
// completion, its length the sum of the replicates' windows (the time under
// load, without the instant between one replicate's last completion and the
// next one's first send).
func (lr *LevelRun) measure(rec *result.LevelRecord) {
	k := lr.replicates()
	for r := range k {
		if r > 0 && lr.ctx.Err() != nil {
			break // interrupted: the level is the replicates run so far
		}
		lr.startReplicate(r)
		lr.lvl.Load.Dispatch(lr.ctx, lr)
		if lr.start.IsZero() {
			lr.Begin() // a dispatcher that sent nothing
		}
		end := time.Now()
		lr.probing.end() // the load is done: no probe after it, the last ones finish
		if lr.grace != nil {
			lr.grace.Stop()
		}
		lr.stopProg()
		w := result.Window{Start: lr.start.Round(0), End: end.Round(0), WallNs: int64(end.Sub(lr.start))}
		if r == 0 {
			rec.Start = w.Start
		}
		rec.End, rec.WallNs = w.End, rec.WallNs+w.WallNs
		if k > 1 {
			rec.Windows = append(rec.Windows, w)
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

// Start is when the current replicate's measured window opened (zero
// before Begin).
func (lr *LevelRun) Start() time.Time { return lr.start }

// Level is the level being run.
func (lr *LevelRun) Level() shape.Level { return lr.lvl }
