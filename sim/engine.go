package sim

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// seq is one request inside the engine. The engine goroutine owns the
// scheduling fields; the fields under mu are shared with the request's handler,
// which waits on notify and streams whatever has been generated.
type seq struct {
	// Set by the handler before submit, read-only afterwards.
	promptTokens int
	blockHashes  []uint64 // chained hashes of the prompt's whole blocks
	outputTokens int      // tokens this request will generate
	arrival      time.Duration
	rng          *rand.Rand // per-request, so acceptance draws do not depend on batching
	// pooled: a batch request (answered whole), whose one "token" is
	// its answer at the end of its prefill, not a generated token.
	pooled bool
	// drift0 is the engine's drift when the sequence was submitted: what
	// the schedule had already lost, which does not delay this sequence.
	drift0 time.Duration

	// Engine-owned.
	cachedTokens int
	started      bool // prefilled, has its first token
	skipped      bool // left in the queue by an admission pass (batch full)
	generated    int  // engine-side count (mirror of the shared one)
	kvBlocks     int  // KV-cache blocks held (Config.KVCacheBlocks)

	cancelled atomic.Bool   // handler gone: drop at the next step
	notify    chan struct{} // capacity 1: "something new under mu"

	mu sync.Mutex
	// Cumulative token count at the end of each step that gave this sequence
	// tokens; one entry per chunk group. Elements are never changed once
	// appended, so a handler may read a prefix of a slice header it copied
	// under mu without holding it.
	stepEnds []int32
	// Scheduled emission time (since the server epoch) of each generated token.
	sched        []time.Duration
	prefillStart time.Duration
	admitted     bool
	cached       int  // prefix-cache hit, in tokens
	queued       bool // waited in the queue behind max_num_seqs
	done         bool
	drafts       int // speculative-decoding steps for this sequence
	draftTokens  int
	accepted     int
	preemptions  int // times the engine preempted it (KV cache full)
	// driftFirst and driftLast are the engine's drift when this sequence's
	// first and latest tokens were emitted (see engine.drift); wakeLag is
	// how long after its arrival an idle engine woke to admit it.
	driftFirst, driftLast time.Duration
	wakeLag               time.Duration
}

// engine is the scheduler: one goroutine stepping the whole batch, like a
// real continuous-batching engine, so that batch effects (queueing, decode
// slowing with more sequences, prefill stalling decode) are real rather than
// each request sleeping on its own.
type engine struct {
	cfg   Config
	epoch time.Time
	m     *metrics

	mu      sync.Mutex
	waiting []*seq // FIFO
	closed  bool
	wake    chan struct{}
	quit    chan struct{} // closed by close

	running []*seq // engine goroutine only
	cache   prefixCache
	kvUsed  int // KV-cache blocks the running sequences hold (engine goroutine only)
	done    chan struct{}

	// drift is how far the engine's schedule has been pushed back against
	// its model since it started, in ns: each time it restarts its plan from
	// the clock because a step ended late, the time lost. The engine goroutine adds; a
	// handler reads it when it submits, so a sequence's lag is the drift
	// after its arrival, plus how late its own tokens were written.
	drift atomic.Int64
}

func newEngine(cfg Config, epoch time.Time, m *metrics) *engine {
	e := &engine{
		cfg:   cfg,
		epoch: epoch,
		m:     m,
		wake:  make(chan struct{}, 1),
		quit:  make(chan struct{}),
		done:  make(chan struct{}),
		cache: prefixCache{blocks: make(map[uint64]struct{}), max: cfg.PrefixCacheBlocks},
	}
	go e.loop()
	return e
}

func (e *engine) now() time.Duration { return time.Since(e.epoch) }

// submit queues s; it returns false when the engine is shut down.
func (e *engine) submit(s *seq) bool {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return false
	}
	s.drift0 = time.Duration(e.drift.Load())
	e.waiting = append(e.waiting, s)
	e.m.waiting.Store(int64(len(e.waiting)))
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
	return true
}

func (e *engine) close() {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return
	}
	e.closed = true
	e.mu.Unlock()
	close(e.quit)
	select {
	case e.wake <- struct{}{}:
	default:
	}
	<-e.done
}

func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

// loop runs scheduler steps until close. Each step's end time is computed from
// the model, the goroutine sleeps until then (real wall time, since the client
// measures with real clocks), and then hands the step's tokens to the
// sequences, stamped with that scheduled time.
func (e *engine) loop() {
	defer close(e.done)
	defer e.abortAll()
	var (
		stepStart time.Duration
		admitted  []*seq
		timer     = time.NewTimer(time.Hour)
	)
	timer.Stop()
	idle := true
	for {
		var ok bool
		if admitted, ok = e.admit(admitted[:0]); !ok {
			return
		}
		if len(admitted) == 0 && len(e.running) == 0 {
			e.m.running.Store(0)
			<-e.wake
			idle = true
			continue
		}
		stepStart = e.replan(stepStart, idle, admitted)
		idle = false
		stepEnd := stepStart + e.stepCost(admitted, stepStart)
		e.m.running.Store(int64(len(e.running) + len(admitted)))
		if wait := stepEnd - e.now(); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-e.quit: // do not make Close wait out a long prefill
				timer.Stop()
				return
			}
		}
		e.stepLate(e.now() - stepEnd)
		e.emitStep(admitted, stepEnd)
		e.m.running.Store(int64(len(e.running)))
		stepStart = stepEnd
	}
}

// replanAfter is how far behind its plan the engine may fall before it
// restarts the plan from the clock: less is timer slack, made up by the
// next step; more would make later steps collapse into a burst.
const replanAfter = 2 * time.Millisecond

// replan is the start of the next step: the previous step's planned end
// (stepStart) while the engine keeps its schedule, or now after idling or
// when it fell behind by more than replanAfter. What a restart loses is
// added to the drift, and what a late wake-up from idle cost the sequences
// that were due to each of them: the model would have started the step then.
func (e *engine) replan(stepStart time.Duration, idle bool, admitted []*seq) time.Duration {
	now := e.now()
	if e.cfg.ZeroLatency {
		return now // the model takes no time, so nothing can be late against it
	}
	switch {
	case idle:
		// Each sequence was due when it arrived: its own wait, not the
		// schedule's, so it is the sequence's (the next ones did not wait).
		for _, s := range admitted {
			s.mu.Lock()
			s.wakeLag = max(0, now-s.arrival)
			s.mu.Unlock()
		}
	case now-stepStart > replanAfter:
		e.drift.Add(int64(now - stepStart))
	default:
		return stepStart
	}
	return now
}

// stepLate counts a step that ended late against its planned end: the
// model's cost after its planned start. Late by more than LateStep counts
// as a late step (less is the operating system's timer slack).
func (e *engine) stepLate(late time.Duration) {
	if e.cfg.ZeroLatency {
		return
	}
	e.m.steps.Add(1)
	if late > LateStep {
		e.m.lateSteps.Add(1)
		e.m.stepLatenessNs.Add(int64(late))
	}
}

// admit moves waiting sequences into the batch from the FIFO queue, up to
// max_num_seqs and (with a bounded KV cache) the blocks free, dropping
// those whose client went away, and returns them (appended to admitted).
// With a bounded KV cache it first makes room for the running sequences'
// next tokens, preempting the latest admitted when there is none; a step
// that preempted admits nothing, as vLLM's scheduler does. false means the
// engine is closed.
func (e *engine) admit(admitted []*seq) ([]*seq, bool) {
	e.running = e.dropCancelled(e.running)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return admitted, false
	}
	preempted := e.reserveDecode()
	free := e.cfg.MaxNumSeqs - len(e.running)
	n := 0
	for n < len(e.waiting) && len(admitted) < free && !preempted {
		s := e.waiting[n]
		if s.cancelled.Load() {
			n++
			continue
		}
		need := e.blocks(s, 1)
		if e.cfg.KVCacheBlocks > 0 && e.kvUsed+need > e.cfg.KVCacheBlocks {
			break // first come first served: the head waits for room
		}
		n++
		s.kvBlocks, e.kvUsed = need, e.kvUsed+need
		admitted = append(admitted, s)
	}
	if n > 0 {
		copy(e.waiting, e.waiting[n:])
		clear(e.waiting[len(e.waiting)-n:])
		e.waiting = e.waiting[:len(e.waiting)-n]
	}
	// Whoever is still waiting now was held back by a full batch.
	for _, s := range e.waiting {
		s.skipped = true
	}
	e.m.waiting.Store(int64(len(e.waiting)))
	e.m.kvUsed.Store(int64(e.kvUsed))
	return admitted, true
}

// blocks is the KV-cache blocks s needs to hold its prompt, its tokens so
// far and k more (no more than its whole output).
func (e *engine) blocks(s *seq, k int) int {
	tokens := s.promptTokens + min(s.generated+k, max(s.outputTokens, s.generated+1))
	return (tokens + e.cfg.BlockSize - 1) / e.cfg.BlockSize
}

// reserveDecode gives each running sequence the blocks its next step's
// tokens need, preempting the most recently admitted sequences (back to
// the head of the queue, their blocks freed) while the cache has none free.
// It reports whether it preempted. Under e.mu.
func (e *engine) reserveDecode() bool {
	if e.cfg.KVCacheBlocks <= 0 {
		return false
	}
	preempted := false
	for i := 0; i < len(e.running); i++ {
		s := e.running[i]
		need := e.blocks(s, 1+e.cfg.SpecK) - s.kvBlocks
		for need > 0 && e.kvUsed+need > e.cfg.KVCacheBlocks && i < len(e.running) {
			v := e.running[len(e.running)-1]
			e.running = e.running[:len(e.running)-1]
			e.release(v)
			v.mu.Lock()
			v.preemptions++
			v.mu.Unlock()
			e.m.preemptions.Add(1)
			e.waiting = append([]*seq{v}, e.waiting...)
			preempted = true
		}
		if i < len(e.running) && need > 0 {
			s.kvBlocks, e.kvUsed = s.kvBlocks+need, e.kvUsed+need
		}
	}
	return preempted
}

// release frees the KV-cache blocks s holds.
func (e *engine) release(s *seq) {
	e.kvUsed -= s.kvBlocks
	s.kvBlocks = 0
}

// dropCancelled is ss without the sequences whose client went away, their
// blocks freed.
func (e *engine) dropCancelled(ss []*seq) []*seq {
	kept := ss[:0]
	for _, s := range ss {
		if s.cancelled.Load() {
			e.release(s)
			continue
		}
		kept = append(kept, s)
	}
	clear(ss[len(kept):])
	return kept
}

// stepCost is what the step starting at stepStart costs: prefill for the
// newly admitted sequences (their uncached prompt tokens, after a prefix-cache
// lookup), plus a decode step for the running ones.
func (e *engine) stepCost(admitted []*seq, stepStart time.Duration) time.Duration {
	var dur time.Duration
	if len(admitted) > 0 {
		uncached := 0
		for _, s := range admitted {
			if s.started {
				// Readmitted after a preemption: its prompt and tokens are
				// computed again.
				uncached += s.promptTokens + s.generated
				continue
			}
			s.cachedTokens = e.cache.lookupInsert(s, e.cfg)
			uncached += s.promptTokens - s.cachedTokens
			e.m.promptTokens.Add(int64(s.promptTokens))
			e.m.cacheQueries.Add(int64(s.promptTokens))
			e.m.cacheHits.Add(int64(s.cachedTokens))
			s.mu.Lock()
			s.prefillStart = stepStart
			e.m.queue.observe((stepStart - s.arrival).Seconds())
			s.queued = s.skipped
			s.admitted = true
			s.cached = s.cachedTokens
			s.mu.Unlock()
		}
		dur += ms(e.cfg.TTFTMs) + time.Duration(float64(uncached)*e.cfg.PrefillMsPerToken*float64(time.Millisecond))
	}
	if decoding := len(e.running); decoding > 0 {
		dur += ms(e.cfg.ITLMs) + time.Duration(decoding-1)*ms(e.cfg.ITLMsPerSeq)
	}
	if e.cfg.ZeroLatency {
		return 0
	}
	return dur
}

// emitStep ends a step at stepEnd: one token to each newly admitted
// sequence (its prefill's output), 1 + accepted drafts to each decoding one.
// A sequence that finished or whose client went away frees its blocks.
func (e *engine) emitStep(admitted []*seq, stepEnd time.Duration) {
	kept := e.running[:0]
	for _, s := range e.running {
		if s.cancelled.Load() {
			e.release(s)
			continue
		}
		k, acc := 1, 0
		if e.cfg.SpecK > 0 {
			for acc < e.cfg.SpecK && s.rng.Float64() < e.cfg.SpecAcceptance {
				acc++
			}
			if rem := s.outputTokens - s.generated - 1; acc > rem {
				acc = rem
			}
			k += acc
		}
		if e.emit(s, k, stepEnd, e.cfg.SpecK > 0, acc) {
			kept = append(kept, s)
		} else {
			e.release(s)
		}
	}
	clear(e.running[len(kept):])
	e.running = kept
	for _, s := range admitted {
		if s.cancelled.Load() {
			e.release(s)
			continue
		}
		if !s.started {
			s.started = true
			e.m.ttft.observe((stepEnd - s.arrival).Seconds())
			e.m.prefill.observe((stepEnd - s.prefillStart).Seconds())
		}
		if e.emit(s, 1, stepEnd, false, 0) {
			e.running = append(e.running, s)
		} else {
			e.release(s)
		}
	}
	e.m.kvUsed.Store(int64(e.kvUsed))
}

// emit gives s k tokens scheduled at t and wakes its handler; it reports
// whether s still has tokens to generate.
func (e *engine) emit(s *seq, k int, t time.Duration, spec bool, acc int) bool {
	s.generated += k
	if !s.pooled {
		e.m.genTokens.Add(int64(k))
	}
	if spec {
		e.m.specDrafts.Add(1)
		e.m.specDraftTokens.Add(int64(e.cfg.SpecK))
		e.m.specAccepted.Add(int64(acc))
	}
	finished := s.generated >= s.outputTokens
	s.mu.Lock()
	for range k {
		s.sched = append(s.sched, t)
	}
	s.stepEnds = append(s.stepEnds, int32(s.generated))
	s.driftLast = time.Duration(e.drift.Load())
	if len(s.sched) == k {
		s.driftFirst = s.driftLast
	}
	if spec {
		s.drafts++
		s.draftTokens += e.cfg.SpecK
		s.accepted += acc
	}
	s.done = finished
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
	return !finished
}

// abortAll releases every handler still waiting when the engine stops.
func (e *engine) abortAll() {
	e.mu.Lock()
	all := append(e.waiting, e.running...)
	e.waiting = nil
	e.mu.Unlock()
	e.running = nil
	for _, s := range all {
		s.cancelled.Store(true)
		select {
		case s.notify <- struct{}{}:
		default:
		}
	}
}

// prefixCache is a set of chained block hashes, like vLLM's automatic prefix
// caching: a block hits only if every block before it hit too, which is why a
// unique nonce at the start of the prompt defeats it entirely.
type prefixCache struct {
	blocks map[uint64]struct{}
	max    int
}

// lookupInsert returns how many of s's prompt tokens are served from cache
// and then caches all of s's whole blocks.
func (c *prefixCache) lookupInsert(s *seq, cfg Config) int {
	if cfg.NoPrefixCache {
		return 0
	}
	hit := 0
	for _, h := range s.blockHashes {
		if _, ok := c.blocks[h]; !ok {
			break
		}
		hit++
	}
	for _, h := range s.blockHashes[hit:] {
		if len(c.blocks) >= c.max {
			for k := range c.blocks { // random eviction: map order is random
				delete(c.blocks, k)
				break
			}
		}
		c.blocks[h] = struct{}{}
	}
	cached := hit * cfg.BlockSize
	// As in vLLM, a fully cached prompt still computes its last token, since
	// the logits for the first output token need it.
	if cached >= s.promptTokens && cached > 0 {
		cached = s.promptTokens - 1
	}
	return cached
}
