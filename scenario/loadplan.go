package scenario

import (
	"net/textproto"
	"time"

	"github.com/runnerbench/runner/protocol"
	"github.com/runnerbench/runner/result"
)

// LoadPlan is a stage compiled for the load engine, once, from the plan as
// Load returned it (validated, defaults applied): every value the engine
// reads, resolved (no pointers to defaults, durations as time.Duration), and
// the prompt sets it names. The engine reads nothing else of the plan.
type LoadPlan struct {
	Name string
	API  API
	Mode Mode
	// Pinned: no mode natural. Mode pinned: every request emits exactly its
	// max_tokens; an API without output (no mode) leaves no length free
	// either, so none of natural mode's numbers apply to it.
	Pinned bool
	// Kind is what the levels vary.
	Kind result.LoadKind

	// The levels: listed concurrencies (closed loop) or rates (open loop),
	// or a capacity search, or (Prompts.Trace) the trace's one level.
	Concurrency []int
	Rate        []float64
	Search      *Search
	Requests    PerLevel
	Duration    time.Duration
	// Until is each level's until: rule (UntilRule.Fixed for a level that
	// sends Requests or Duration); an until level sends at most
	// MaxRequests (0: no count cap) for at most MaxDuration (0: no time
	// cap), and its Sink's looks may stop it sooner.
	Until       UntilRules
	MaxRequests PerLevel
	MaxDuration time.Duration
	// StopAtSaturation: the sweep may end before its last level, when its
	// sink says the server is saturated.
	StopAtSaturation bool
	Ramp             time.Duration
	Replicates       int
	// Slices is the width of each level's time slices (0: none).
	Slices time.Duration
	// Open loop: the arrival process and the in-flight cap (0: none).
	Arrival        Arrival
	Burstiness     float64
	MaxConcurrency int
	// Replay's window and speed (trace stages).
	ReplayStart, ReplayEnd time.Duration
	ReplaySpeedup          float64

	// Each request.
	// InputsPerRequest is an embeddings request's batch (0: one prompt);
	// DocumentsPerRequest a rerank request's documents, of DocumentTokens
	// each (the prompt set's input_tokens when the stage gives none).
	InputsPerRequest    int
	DocumentsPerRequest int
	DocumentTokens      *Length
	OutputTokens        Length
	InputTokens         *Length // the stage's override of a synthetic set's length
	Temperature         float64
	Seed                int64
	Warmup              int
	ExtraBody           map[string]any
	SLO                 *SLO
	// Tools and ToolChoice are the stage's tools (none: nil).
	Tools      []protocol.Tool
	ToolChoice protocol.ToolChoice
	// Cancel is when the stage's requests are given up on (nil: never).
	Cancel *Cancel
	// Users are the users levels (each user one conversation at a time),
	// Think how long a user waits before each request after their first
	// (nil: not at all), SessionHeader the header that carries a
	// conversation's session id ("": none).
	Users         []int
	Think         *ThinkTime
	SessionHeader string
	// Models are the model names the requests spread over, by weight (nil:
	// the endpoint's model alone).
	Models []ModelWeight
	// Probe is the probe requests sent beside each level's load (nil: none).
	Probe *Probe
	// Series is the rate or concurrency a series stage's one level follows
	// (nil: none); Duration is then its length.
	Series *result.Series

	// Prompts is the stage's prompt set; TracePrompts a runner trace's
	// prompt set (nil when the trace names none).
	Prompts      *PromptSet
	TracePrompts *PromptSet
}

// LoadPlan compiles st, a stage of p, for the load engine.
func (p *Plan) LoadPlan(st *Stage) *LoadPlan {
	ps := p.PromptSet(st.Prompts)
	lp := &LoadPlan{
		Name: st.Name, API: st.API, Mode: st.Mode, Pinned: st.Mode != ModeNatural,
		Kind:        st.loadKind(ps),
		Concurrency: st.Concurrency, Rate: st.Rate, Search: st.Search, Requests: st.Requests,
		Until: st.Until, MaxRequests: st.MaxRequests, MaxDuration: st.MaxDuration.D(), StopAtSaturation: st.StopAtSaturation,
		Duration: st.Duration.D(), Ramp: st.Ramp.D(), Replicates: st.Replicates, Slices: st.Slices.D(),
		Arrival: st.Arrival, Burstiness: st.Burstiness, MaxConcurrency: st.MaxConcurrency,
		OutputTokens: st.OutputTokens, InputTokens: st.InputTokens,
		ExtraBody: st.ExtraBody, SLO: st.SLO, Prompts: ps,
		InputsPerRequest: st.InputsPerRequest, DocumentsPerRequest: st.DocumentsPerRequest, DocumentTokens: st.DocumentTokens,
		Tools: protocolTools(st.Tools), ToolChoice: protocolChoice(st.ToolChoice),
	}
	if st.Temperature != nil {
		lp.Temperature = *st.Temperature
	}
	if st.Seed != nil {
		lp.Seed = *st.Seed
	}
	if st.Warmup != nil {
		lp.Warmup = *st.Warmup
	}
	if r := st.Replay; r != nil {
		lp.ReplayStart, lp.ReplayEnd, lp.ReplaySpeedup = r.Start.D(), r.End.D(), r.Speedup
	}
	lp.Cancel = st.cancel()
	lp.Models, lp.Probe = st.models(), st.Probe
	if st.Series != nil {
		lp.Series = st.Series.Compiled()
		lp.Duration = lp.Series.Duration()
	}
	lp.Users, lp.Think, lp.SessionHeader = st.Users, st.ThinkTime, textproto.CanonicalMIMEHeaderKey(st.SessionHeader)
	if ps != nil && ps.Trace != nil && ps.Trace.Prompts != "" {
		lp.TracePrompts = p.PromptSet(ps.Trace.Prompts)
	}
	return lp
}

// UntilAt is level i's until: rule (fixed when none).
func (lp *LoadPlan) UntilAt(i int) UntilRule {
	r, _ := ParseUntil(lp.Until.At(i))
	return r
}

// Requested is the tokens each request of the stage asks for, as its
// levels report them (a point's input_tokens and output_tokens): a synthetic
// prompt set's input length (the stage's override first), and the output
// length of an API with output; 0 where it is not fixed (prompts from a
// file, a trace's own lengths, an API without output).
func (lp *LoadPlan) Requested() (input, output int) {
	if protocol.NameStreams(string(lp.API)) {
		output = lp.OutputTokens.Nominal()
	}
	if ps := lp.Prompts; ps != nil && ps.Trace == nil && ps.Synthetic != nil {
		l := ps.Synthetic.InputTokens
		if lp.InputTokens != nil {
			l = *lp.InputTokens
		}
		input = l.Nominal()
	}
	return input, output
}

// LoadPlans compiles every stage of stages.
func (p *Plan) LoadPlans(stages []*Stage) []*LoadPlan {
	out := make([]*LoadPlan, len(stages))
	for i, st := range stages {
		out[i] = p.LoadPlan(st)
	}
	return out
}

// loadKind is what the stage's levels vary.
func (s *Stage) loadKind(ps *PromptSet) result.LoadKind {
	switch {
	case ps != nil && ps.Trace != nil:
		return result.LoadTrace
	case s.Search != nil:
		return s.Search.Over
	case s.Series != nil:
		return s.Series.Over
	case len(s.Rate) > 0:
		return result.LoadRate
	case len(s.Users) > 0:
		return result.LoadUsers
	}
	return result.LoadConcurrency
}
