// Package body builds a stage's request bodies, before any clock starts:
// synthetic prompts sized in the server's tokens (calibrated once per model
// and API on its /tokenize or a probe request), supplied prompts cycled
// with a nonce leading each, a batch API's inputs and documents, a trace
// replay's prompts (blocks shared as the trace shares them), and the turns
// of a multi-turn conversation. Every body is the stage's protocol's Encode
// (a prompt alone written from a template Encode made, byte for byte the
// same: template.go); the package never asks which API it is.
//
// A request's prompt, lengths and images are a function of the stage's
// seed and the request's level and sequence number alone, so which worker
// takes which request does not change what is sent.
package body

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/runnerbench/runner/protocol"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/runner/synth"
	"github.com/runnerbench/runner/scenario"
)

// Warm-up requests are small, like the reference's (32 input, 8 output
// tokens): they exist to open a connection and wake the engine, not to load it.
// prefixTagTokens is what a "[prefix-N] " group tag costs in a typical
// tokenizer (brackets, word, dash, digits, space).
const prefixTagTokens = 6

const (
	// WarmupInputTokens is a warm-up request's prompt length.
	WarmupInputTokens = 32
	// WarmupOutputTokens is a warm-up request's output bound.
	WarmupOutputTokens = 8
)

// Job is one request ready to send: its body is built before the clock
// starts.
type Job struct {
	// Nonce leads the request's prompt, so no cache serves it.
	Nonce string
	// Body is the request's JSON body, as the stage's API encodes it.
	Body []byte
	// MaxTokens is the output bound asked for (0: none sent).
	MaxTokens int
	// Inputs is the texts a batch API's request carries (embeddings'
	// inputs, rerank's documents; 0 for one prompt), Results how many
	// items its answer must hold (0: not judged).
	Inputs, Results int
	// ImageBytes is the images' bytes, before their base64 encoding.
	ImageBytes int
	// GiveUpAfter and GiveUpTokens are when the client gives up on the
	// request (the stage's cancel_*, drawn for it; zero: never).
	GiveUpAfter  time.Duration
	GiveUpTokens int
	// Model is the model the request asks for, when the stage spreads its
	// requests over several ("": the endpoint's).
	Model string
}

// Stage is a stage's request bodies, compiled once: how to build request
// seq of a level.
type Stage struct {
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
	replay    *replay // a stage over trace prompts (replay.go)
	// A batch API's texts per request: embeddings' inputs (0: the prompt
	// alone), rerank's documents and their length (batch.go).
	inputs, docs int
	docLen       scenario.Length
	images       *synth.Images // a prompt set's images (runner/synth); nil: none
	tools        []protocol.Tool
	choice       protocol.ToolChoice
	templates    templates // bodies around a prompt text alone, by model and output bound
}

// Compile prepares st's bodies for model in API proto, drawing nonces from
// nonces and sizing prompts with cal. It trusts the plan as scenario
// loaded it (validated, defaults applied); the warnings are the
// calibration's and the trace's.
func Compile(ctx context.Context, st *scenario.LoadPlan, proto protocol.Protocol, model string, nonces *synth.Nonces, cal *Calibrator) (*Stage, []string, error) {
	s := &Stage{
		st: st, proto: proto, pinned: st.Pinned,
		temp: st.Temperature, seed: st.Seed,
		model: model, nonces: nonces, extra: st.ExtraBody, output: st.OutputTokens,
		tools: st.Tools, choice: st.ToolChoice,
	}
	ps := st.Prompts
	s.inputs, s.docs = st.InputsPerRequest, st.DocumentsPerRequest
	s.images = synth.NewImages(ps.Images, st.Seed, st.Name)
	if !protocol.Streams(proto) {
		s.output = scenario.Length{} // no output tokens: max_tokens 0, not sent
	}
	if ps.Turns > 1 {
		if _, ok := proto.(protocol.Conversational); !ok {
			return nil, nil, fmt.Errorf("stage %s: api %s has no conversation history for turns: %d", st.Name, st.API, ps.Turns)
		}
		s.turns = ps.Turns
	}
	if ps.Trace != nil {
		return s, s.compileReplay(ctx, cal, ps.Trace), nil
	}
	if ps.Synthetic == nil {
		s.loaded = ps.Loaded
		return s, append(s.probeSizer(ctx, cal), s.compileDocs(ctx, cal, nil)...), nil
	}
	s.synthetic = true
	s.input = ps.Synthetic.InputTokens
	if st.InputTokens != nil {
		s.input = *st.InputTokens
	}
	s.shared = ps.Synthetic.SharedPrefix
	var warns []string
	sz, w := cal.Sizer(ctx, s.proto, ps.Synthetic.Sizing == scenario.SizingReference)
	if w != "" {
		warns = append(warns, w)
	}
	s.sizer = sz
	return s, append(warns, s.compileDocs(ctx, cal, &s.input)...), nil
}

// Describe fills in what a level's requests are: their mode, turns and
// tools, and whether prefix-cache hits are expected (the lengths asked for
// are the plan's, scenario.LoadPlan.Requested).
func (s *Stage) Describe(spec *result.LevelSpec) {
	spec.Pinned = s.pinned
	spec.Turns = s.turns
	// Shared prefixes and multi-turn histories are cached on purpose.
	spec.ExpectPrefixHits = s.shared != nil || s.turns > 1
	spec.Tools = len(s.tools) > 0
	if c := s.st.Cancel; c != nil {
		spec.Cancel = &result.CancelSpec{AfterMs: float64(c.After) / float64(time.Millisecond), Tokens: c.Tokens, Share: c.Share}
	}
	if pr := s.st.Probe; pr != nil {
		spec.Probes = &result.ProbeSpec{RatePerS: pr.Rate, InputTokens: pr.InputTokens, OutputTokens: pr.OutputTokens}
	}
	for _, m := range s.st.Models {
		if m.Share() > 0 { // a model of weight 0 takes no request: no point
			spec.Models = append(spec.Models, m.Name)
		}
	}
}

// Turns is the turns of the stage's conversations (≤ 1: single requests).
func (s *Stage) Turns() int { return s.turns }

// Trace is a trace replay's send times (on the replay's clock, in order)
// and summary; nil when the stage is no replay.
func (s *Stage) Trace() ([]time.Duration, *result.TraceSummary) {
	if s.replay == nil {
		return nil, nil
	}
	return s.replay.times, &s.replay.summary
}

// rng gives each (level, request) its own stream, so prompts and lengths
// do not depend on which worker happened to take which request.
func (s *Stage) rng(level, seq int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(s.seed), uint64(level)<<32|uint64(uint32(seq))))
}

// Build makes request seq of a level (a trace replay's: request seq of
// its window). Warm-ups get a small synthetic prompt.
func (s *Stage) Build(level, seq int, warmup bool) (*Job, error) {
	j := &Job{Nonce: s.nonces.Next()}
	if !warmup && len(s.st.Models) > 0 {
		j.Model = s.modelFor(level, seq)
	}
	var text string
	var messages []scenario.Message
	var inputs, docs []string // a batch API's texts (batch.go)
	switch {
	case warmup:
		j.MaxTokens = WarmupOutputTokens
		words := synth.ReferenceWords(WarmupInputTokens)
		if s.sizer != nil {
			words = s.sizer.Words(WarmupInputTokens)
		}
		text = synth.LeadNonce(j.Nonce, synth.Filler(words))
		if s.docs > 0 {
			j.Inputs = 1
			docs = []string{synth.LeadNonce(s.nonces.Next(), synth.Filler(words))}
		}
	case s.replay != nil:
		text, messages = s.replay.prompt(s.sizer, seq, j.Nonce)
		j.MaxTokens = s.replay.reqs[seq].Output // the trace's output length, pinned
	case s.synthetic:
		r := s.rng(level, seq)
		text = s.synthText(r, seq, j.Nonce) // input length first, then output: the draw order is part of the seed's meaning
		j.MaxTokens = s.output.Sample(r)
		inputs = s.synthInputs(r, seq, text, j)
		docs = s.documents(r, j)
	default:
		// Cycle rather than repeat (the reference's prompts[i % len]): every
		// concurrent request gets a different prompt.
		p := s.loaded[seq%len(s.loaded)]
		j.MaxTokens = p.MaxTokens
		if j.MaxTokens <= 0 {
			j.MaxTokens = s.output.Sample(s.rng(level, seq))
		}
		text, messages = filePrompt(p, j.Nonce)
		inputs = s.fileInputs(seq, text, messages, j)
		docs = s.documents(s.rng(level, seq), j)
	}
	var images []string
	if s.images != nil && !warmup {
		images, j.ImageBytes = s.images.ForRequest(level, seq)
	}
	if err := s.encode(j, text, messages, inputs, docs, images); err != nil {
		return nil, err
	}
	if !warmup {
		s.giveUp(j, level, seq)
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

// PromptIndex is the index of the file or inline prompt measured request seq
// sends (Build's choice), for its record; nil for a generated prompt.
func (s *Stage) PromptIndex(seq int) *int {
	switch {
	case s.replay != nil && s.replay.prompts != nil && s.replay.reqs[seq].Prompt >= 0:
		return result.Ptr(s.replay.reqs[seq].Prompt)
	case s.replay == nil && !s.synthetic && len(s.loaded) > 0:
		return result.Ptr(s.loaded[seq%len(s.loaded)].Index) // its place in the file
	}
	return nil
}

// encode sets j's body: the stage's request fields around either chat
// messages (nil: text is the prompt), as the stage's API encodes them.
func (s *Stage) encode(j *Job, text string, messages []scenario.Message, inputs, docs, images []string) error {
	model := s.model
	if j.Model != "" {
		model = j.Model
	}
	r := protocol.Request{
		Model: model, MaxTokens: j.MaxTokens, Temperature: s.temp, Pinned: s.pinned,
		Extra: s.extra, Messages: messages, Text: text, Tools: s.tools, ToolChoice: s.choice,
		Inputs: inputs, Documents: docs, Images: images,
	}
	if t := s.templates.get(s.proto, r); t != nil {
		j.Body = t.Body(text)
		return nil
	}
	b, err := s.proto.Encode(r)
	if err != nil {
		return err
	}
	j.Body = b
	return nil
}

// synthText draws a synthetic prompt's length from r and builds it around
// nonce: the nonce leads, or, with shared prefixes, follows the group's prefix.
func (s *Stage) synthText(r *rand.Rand, seq int, nonce string) string {
	n := s.input.Sample(r)
	sh := s.shared
	if sh == nil {
		return synth.LeadNonce(nonce, synth.Filler(s.sizer.Words(n)))
	}
	// Measuring prefix caching on purpose: the group's prefix comes first and
	// the nonce after it, so requests of a group share exactly the prefix and
	// nothing more.
	g := seq % sh.Groups
	// The "[prefix-g] " tag costs about as much as a nonce tag
	// (prefixTagTokens); the rest of the prompt carries the nonce and any
	// chat-template overhead that sizer.words accounts for.
	pw := max(1, int(math.Round(float64(sh.PrefixTokens-prefixTagTokens)/s.sizer.TokensPerWord())))
	prefix := fmt.Sprintf("[prefix-%d] %s", g, synth.Filler(pw))
	return prefix + " " + synth.LeadNonce(nonce, synth.Filler(s.sizer.Words(max(1, n-sh.PrefixTokens))))
}
