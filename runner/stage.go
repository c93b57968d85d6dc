package runner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync/atomic"

	"github.com/runnerbench/runner/internal/redact"
	"github.com/runnerbench/runner/protocol"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/runner/shape"
	"github.com/runnerbench/runner/runner/shard"
	"github.com/runnerbench/runner/runner/synth"
	"github.com/runnerbench/runner/scenario"
)

// Warm-up requests are small, like the reference's (32 input, 8 output
// tokens): they exist to open a connection and wake the engine, not to load it.
// prefixTagTokens is what a "[prefix-N] " group tag costs in a typical
// tokenizer (brackets, word, dash, digits, space).
const prefixTagTokens = 6

const (
	warmupInputTokens  = 32
	warmupOutputTokens = 8
)

// stagePlan is a stage compiled for sending: how to build request i's body.
type stagePlan struct {
	st        *scenario.LoadPlan // the stage, compiled by the plan
	proto     protocol.Protocol  // the API the stage speaks
	pinned    bool
	temp      float64
	seed      int64
	extra     map[string]any
	output    scenario.Length
	input     scenario.Length // synthetic prompts only
	synthetic bool
	loaded    []scenario.Prompt
	sizer     *synth.Sizer
	shared    *scenario.SharedPrefix // synthetic prompts sharing prefixes on purpose
	nonces    *synth.Nonces
	model     string
	turns     int     // multi-turn conversations of this many turns (chat only); ≤ 1 = single requests
	warmups   int     // unmeasured warm-up requests before each level
	replay    *replay // a stage over trace prompts (replay.go)
	// A batch API's texts per request: embeddings' inputs (0: the prompt
	// alone), rerank's documents and their length (batch.go).
	inputs, docs int
	docLen       scenario.Length
	images       *synth.Images // a prompt set's images (runner/synth); nil: none
	tools        []protocol.Tool
	choice       protocol.ToolChoice

	// served: a request of the stage succeeded, so the endpoint serves its
	// API; notServed is the first answer that showed, before any success,
	// that it does not (see judgeServed).
	served    atomic.Bool
	notServed atomic.Pointer[string]
}

// judgeServed notes what request rec, just sent on w, shows of whether the
// endpoint serves the stage's API, and reports whether the stage must stop:
// an answer that says it does not (a 404, 405 or 501 at the API's path, an
// event stream of another API or where a JSON answer was due, another API's
// JSON answer) before any request of the stage succeeded. One
// clear stage error then says so, instead of a level of failed requests.
// Once a request has succeeded, a 404 is that request's failure only.
func (sp *stagePlan) judgeServed(w *Worker, rec *result.Request) bool {
	if rec.OK {
		sp.served.Store(true)
		return false
	}
	if _, stops := sp.proto.(protocol.NotServedStops); !stops || w.notServed == "" || sp.served.Load() {
		return false
	}
	msg := fmt.Sprintf("api %s: %s: the endpoint does not serve the %s API at this path (is base_url right, and does the server implement it?)",
		sp.proto.Name(), w.notServed, sp.proto.Name())
	sp.notServed.CompareAndSwap(nil, &msg)
	return true
}

// notServedErr is the stage's error when the endpoint does not serve its API.
func (sp *stagePlan) notServedErr() error {
	if m := sp.notServed.Load(); m != nil {
		return errors.New(*m)
	}
	return nil
}

// unit is what one claimed request of this stage is.
func (sp *stagePlan) unit() unit {
	if sp.turns > 1 {
		return &conversations{bufs: map[*Worker]*replyBuf{}}
	}
	return single{}
}

// sweep is the stage's load shape across levels (shape.For picks it).
func (sp *stagePlan) sweep() shape.Sweep {
	st := shape.Stage{Plan: sp.st, Spec: sp.levelSpec}
	if rp := sp.replay; rp != nil {
		st.Replay = &shape.Replay{Times: rp.times, Summary: &rp.summary}
	}
	return shape.For(st)
}

// levelSpec is the spec of a level of this stage: what was requested, and
// the objectives its metrics are judged against.
func (sp *stagePlan) levelSpec(label string, conc int, rate *float64) result.LevelSpec {
	spec := result.LevelSpec{
		Label:        label,
		Concurrency:  conc,
		Rate:         rate,
		OutputTokens: sp.output.Nominal(),
		Pinned:       sp.pinned,
		Turns:        sp.turns,
		// Shared prefixes and multi-turn histories are cached on purpose.
		ExpectPrefixHits: sp.shared != nil || sp.turns > 1,
		SliceNs:          int64(sp.st.Slices),
		Tools:            len(sp.tools) > 0,
	}
	if sp.synthetic {
		spec.InputTokens = sp.input.Nominal()
	}
	if slo := sp.st.SLO; slo != nil {
		spec.SLO = &result.SLO{TTFTMs: slo.TTFTMs, TPOTMs: slo.TPOTMs, E2EMs: slo.E2EMs}
	}
	return spec
}

// compileStage prepares st for sending. It trusts the plan as scenario
// loaded it (validated, defaults applied): nothing is checked or defaulted
// twice, but a plan built in code may name an api nobody registered.
func (e *Engine) compileStage(ctx context.Context, st *scenario.LoadPlan) (*stagePlan, []string, error) {
	proto, ok := protocol.Lookup(string(st.API))
	if !ok {
		return nil, nil, fmt.Errorf("stage %s: api %q is not one of %s", st.Name, st.API, strings.Join(protocol.Names(), ", "))
	}
	sp := &stagePlan{
		st: st, proto: proto, pinned: st.Pinned,
		temp: st.Temperature, seed: st.Seed, warmups: st.Warmup,
		model: e.model, nonces: e.nonces, extra: st.ExtraBody, output: st.OutputTokens,
		tools: st.Tools, choice: st.ToolChoice,
	}
	ps := st.Prompts
	sp.inputs, sp.docs = st.InputsPerRequest, st.DocumentsPerRequest
	sp.images = synth.NewImages(ps.Images, st.Seed, st.Name)
	if !protocol.Streams(proto) {
		sp.output = scenario.Length{} // no output tokens: max_tokens 0, not sent
	}
	if ps.Turns > 1 {
		if _, ok := proto.(protocol.Conversational); !ok {
			return nil, nil, fmt.Errorf("stage %s: api %s has no conversation history for turns: %d", st.Name, st.API, ps.Turns)
		}
		sp.turns = ps.Turns
	}
	if ps.Trace != nil {
		return sp, e.compileReplay(ctx, sp, ps.Trace), nil
	}
	if ps.Synthetic == nil {
		sp.loaded = ps.Loaded
		return sp, e.compileDocs(ctx, sp, st, nil), nil
	}
	sp.synthetic = true
	sp.input = ps.Synthetic.InputTokens
	if st.InputTokens != nil {
		sp.input = *st.InputTokens
	}
	sp.shared = ps.Synthetic.SharedPrefix
	var warns []string
	s, w := e.sizerFor(ctx, sp.proto, ps.Synthetic.Sizing == scenario.SizingReference)
	if w != "" {
		warns = append(warns, w)
	}
	sp.sizer = s
	return sp, append(warns, e.compileDocs(ctx, sp, st, &sp.input)...), nil
}

// levelRNG gives each (level, request) its own stream, so prompts and lengths
// do not depend on which worker happened to take which request.
func (sp *stagePlan) rng(level, seq int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(sp.seed), uint64(level)<<32|uint64(uint32(seq))))
}

// build makes request seq of a level. Warm-ups get a small synthetic prompt.
func (sp *stagePlan) build(level, seq int, warmup bool) (*job, error) {
	j := &job{nonce: sp.nonces.Next()}
	var text string
	var messages []scenario.Message
	var inputs, docs []string // a batch API's texts (batch.go)
	switch {
	case warmup:
		j.maxTokens = warmupOutputTokens
		words := synth.ReferenceWords(warmupInputTokens)
		if sp.sizer != nil {
			words = sp.sizer.Words(warmupInputTokens)
		}
		text = synth.LeadNonce(j.nonce, synth.Filler(words))
		if sp.docs > 0 {
			j.inputs = 1
			docs = []string{synth.LeadNonce(sp.nonces.Next(), synth.Filler(words))}
		}
	case sp.replay != nil:
		text, messages = sp.replay.prompt(sp.sizer, seq, j.nonce)
		j.maxTokens = sp.replay.reqs[seq].Output // the trace's output length, pinned
	case sp.synthetic:
		r := sp.rng(level, seq)
		text = sp.synthText(r, seq, j.nonce) // input length first, then output: the draw order is part of the seed's meaning
		j.maxTokens = sp.output.Sample(r)
		inputs = sp.synthInputs(r, seq, text, j)
		docs = sp.documents(r, j)
	default:
		// Cycle rather than repeat (the reference's prompts[i % len]): every
		// concurrent request gets a different prompt.
		p := sp.loaded[seq%len(sp.loaded)]
		j.maxTokens = p.MaxTokens
		if j.maxTokens <= 0 {
			j.maxTokens = sp.output.Sample(sp.rng(level, seq))
		}
		text, messages = filePrompt(p, j.nonce)
		inputs = sp.fileInputs(seq, text, messages, j)
		docs = sp.documents(sp.rng(level, seq), j)
	}
	var images []string
	if sp.images != nil && !warmup {
		images, j.imageBytes = sp.images.ForRequest(level, seq)
	}
	if err := sp.encode(j, text, messages, inputs, docs, images); err != nil {
		return nil, err
	}
	return j, nil
}

// filePrompt is a file or inline prompt with the nonce leading it (its first
// message's, for chat messages): reusing a real prompt would otherwise let
// the engine serve it from cache.
func filePrompt(p scenario.Prompt, nonce string) (string, []scenario.Message) {
	if len(p.Messages) > 0 {
		messages := append([]scenario.Message(nil), p.Messages...)
		messages[0].Content = synth.LeadNonce(nonce, messages[0].Content)
		return "", messages
	}
	return synth.LeadNonce(nonce, p.Text), nil
}

// promptIndex is the index of the file or inline prompt measured request seq
// sends (build's choice), for its record; nil for a generated prompt.
func (sp *stagePlan) promptIndex(seq int) *int {
	switch {
	case sp.replay != nil && sp.replay.prompts != nil && sp.replay.reqs[seq].Prompt >= 0:
		return result.Ptr(sp.replay.reqs[seq].Prompt)
	case sp.replay == nil && !sp.synthetic && len(sp.loaded) > 0:
		return result.Ptr(sp.loaded[seq%len(sp.loaded)].Index) // its place in the file
	}
	return nil
}

// encode sets j's body: the stage's request fields around either chat
// messages (nil: text is the prompt), as the stage's API encodes them.
func (sp *stagePlan) encode(j *job, text string, messages []scenario.Message, inputs, docs, images []string) error {
	b, err := sp.proto.Encode(protocol.Request{
		Model: sp.model, MaxTokens: j.maxTokens, Temperature: sp.temp, Pinned: sp.pinned,
		Extra: sp.extra, Messages: messages, Text: text, Tools: sp.tools, ToolChoice: sp.choice,
		Inputs: inputs, Documents: docs, Images: images,
	})
	if err != nil {
		return err
	}
	j.body = b
	return nil
}

// synthText draws a synthetic prompt's length from r and builds it around
// nonce: the nonce leads, or, with shared prefixes, follows the group's prefix.
func (sp *stagePlan) synthText(r *rand.Rand, seq int, nonce string) string {
	n := sp.input.Sample(r)
	sh := sp.shared
	if sh == nil {
		return synth.LeadNonce(nonce, synth.Filler(sp.sizer.Words(n)))
	}
	// Measuring prefix caching on purpose: the group's prefix comes first and
	// the nonce after it, so requests of a group share exactly the prefix and
	// nothing more.
	g := seq % sh.Groups
	// The "[prefix-g] " tag costs about as much as a nonce tag
	// (prefixTagTokens); the rest of the prompt carries the nonce and any
	// chat-template overhead that sizer.words accounts for.
	pw := max(1, int(math.Round(float64(sh.PrefixTokens-prefixTagTokens)/sp.sizer.TokensPerWord())))
	prefix := fmt.Sprintf("[prefix-%d] %s", g, synth.Filler(pw))
	return prefix + " " + synth.LeadNonce(nonce, synth.Filler(sp.sizer.Words(max(1, n-sh.PrefixTokens))))
}

// RunStage runs every level of st (a stage the plan compiled: see
// scenario.Plan.LoadPlan), sending the stage's records to sink as they are
// made, and stops early when ctx is cancelled (the cut level marked
// Interrupted, its in-flight requests recorded as interrupted). It returns an
// error only when the stage could not run at all, or stopped before its
// levels were done for a reason other than ctx.
func (e *Engine) RunStage(ctx context.Context, st *scenario.LoadPlan, sink Sink) error {
	info := &result.StageRecord{
		Name: st.Name,
		Endpoint: result.Endpoint{
			Name: e.t.Name, BaseURL: redact.URL(e.baseURL), Model: e.model,
			Simulator: e.t.Endpoint.Simulator != nil,
		},
		API: string(st.API), Mode: string(st.Mode), Load: st.Kind,
	}
	sp, warns, err := e.compileStage(ctx, st)
	if err != nil {
		sink.StageStarted(info)
		return err
	}
	sweep := shard.Coordinate(e.opts.Sharding, st.Name, sp.sweep())
	if sp.replay != nil {
		info.Trace = &sp.replay.summary
	}
	e.mu.Lock()
	info.Warnings = append(append(info.Warnings, e.warnings...), warns...)
	e.mu.Unlock()
	sink.StageStarted(info)

	e.resize(sweep.MaxConns())
	scraper := e.scraper()
	if sp.turns > 1 {
		defer e.tapReplies()()
	}
	var last *result.Point
	for idx := 0; ctx.Err() == nil; idx++ {
		lvl, ok := sweep.Next(last)
		if !ok {
			break
		}
		rec := e.runLevel(ctx, sp, idx, lvl, scraper, sink)
		p := sink.LevelDone(rec)
		last = &p
		if err := sp.notServedErr(); err != nil {
			return err
		}
		if ss, ok := sink.(SweepStopper); ok && st.StopAtSaturation && ss.StopSweep() {
			ss.Skipped(rest(sweep, last))
			break
		}
	}
	return shape.Err(sweep)
}

// rest are the levels a sweep had left, which a stop at saturation skips.
func rest(sweep shape.Sweep, last *result.Point) []result.LevelSpec {
	var out []result.LevelSpec
	for {
		lvl, ok := sweep.Next(last)
		if !ok {
			return out
		}
		out = append(out, lvl.Spec)
	}
}
