package scenario

import "time"

// Defaults applied by ApplyDefaults. They are documented in docs/plans.md's plan
// reference; keep the two in step.
const (
	DefaultAPI          = APIChat
	DefaultMode         = ModePinned
	DefaultOutputTokens = 256
	DefaultWarmup       = 1
	DefaultSeed         = 1
	DefaultScope        = ScopeLevel
	DefaultSeverity     = SeverityFail
	DefaultArrival      = ArrivalPoisson
	DefaultSimModel     = "sim"
	DefaultSizing       = SizingCalibrated
	DefaultFormat       = FormatAuto
	DefaultColumn       = "prompt"
	DefaultTurns        = 1
	DefaultBlockTokens  = 512 // Mooncake's
	DefaultSpeedup      = 1.0

	DefaultReadyTimeout      = 60 * time.Second
	DefaultConnectTimeout    = 10 * time.Second
	DefaultFirstTokenTimeout = 120 * time.Second
	DefaultIdleTimeout       = 30 * time.Second
	DefaultRequestTimeout    = 10 * time.Minute
)

// ApplyDefaults fills every unset field with its default, in one pass after
// decoding, so the rest of the program never has to know a default. It is
// idempotent. Stage.Requests is left 0 when unset: its default depends on the
// level (the level's concurrency, or rate × duration), which the engine knows.
func (p *Plan) ApplyDefaults() {
	for _, e := range p.Endpoints {
		if e != nil {
			e.applyDefaults()
		}
	}
	for _, ps := range p.Prompts {
		if ps != nil {
			ps.applyDefaults()
		}
	}
	for _, s := range p.Stages {
		if s == nil {
			continue
		}
		setStr(&s.API, DefaultAPI)
		if streams(s.API) { // an answer that is not streamed has no length to pin or leave free: no mode
			setStr(&s.Mode, DefaultMode)
		}
		switch {
		case batchesInputs(s.API):
			if s.InputsPerRequest == 0 {
				s.InputsPerRequest = 1
			}
		case scoresDocuments(s.API):
			if s.DocumentsPerRequest == 0 {
				s.DocumentsPerRequest = DefaultDocumentsPerRequest
			}
		}
		if s.OutputTokens.IsZero() && !p.replays(s) && streams(s.API) { // a replay's come from its trace; a batch API has none
			s.OutputTokens = Length{Fixed: DefaultOutputTokens}
		}
		p.replayDefaults(s)
		if s.Search != nil {
			s.Search.applyDefaults()
		}
		if s.OpenLoop() {
			setStr(&s.Arrival, DefaultArrival)
			if s.Arrival == ArrivalGamma && s.Burstiness == 0 {
				s.Burstiness = 1
			}
		}
		if !s.Until.IsZero() || s.StopAtSaturation {
			if s.Confidence == 0 {
				s.Confidence = DefaultConfidence
			}
			setStr(&s.Undecided, DefaultUndecided)
		}
		if s.Warmup == nil {
			w := DefaultWarmup
			s.Warmup = &w
		}
		s.Probe.applyDefaults(streams(s.API))
		if s.Series != nil && s.Slices == 0 {
			s.Slices = Duration(s.Series.defaultSlices())
		}
		if s.Temperature == nil {
			t := 0.0
			s.Temperature = &t
		}
		if s.Seed == nil {
			seed := int64(DefaultSeed)
			s.Seed = &seed
		}
		for _, c := range s.Checks {
			if c == nil {
				continue
			}
			setStr(&c.Name, c.Expr)
			setStr(&c.Scope, DefaultScope)
			setStr(&c.Severity, DefaultSeverity)
		}
	}
}

// applyDefaults fills the endpoint's unset fields.
func (e *Endpoint) applyDefaults() {
	if e.Simulator != nil && e.Model == "" {
		e.Model = e.Simulator.Model
		if e.Model == "" {
			e.Model = DefaultSimModel
		}
	}
	setDur(&e.ReadyTimeout, DefaultReadyTimeout)
	setDur(&e.Timeouts.Connect, DefaultConnectTimeout)
	setDur(&e.Timeouts.FirstToken, DefaultFirstTokenTimeout)
	setDur(&e.Timeouts.Idle, DefaultIdleTimeout)
	setDur(&e.Timeouts.Request, DefaultRequestTimeout)
}

// applyDefaults fills the prompt set's unset fields.
func (ps *PromptSet) applyDefaults() {
	if ps.File != "" {
		setStr(&ps.Format, DefaultFormat)
		setStr(&ps.Column, DefaultColumn)
	}
	if ps.Turns == 0 {
		ps.Turns = DefaultTurns
	}
	if im := ps.Images; im != nil {
		if im.Count == 0 {
			im.Count = 1
		}
		if len(im.Files) == 0 {
			setStr(&im.Format, ImagePNG)
		}
	}
	if ps.Synthetic != nil {
		setStr(&ps.Synthetic.Sizing, DefaultSizing)
	}
	if ps.Trace != nil && ps.Trace.BlockTokens == 0 {
		ps.Trace.BlockTokens = DefaultBlockTokens
	}
}

// replays reports whether s is a replay: its prompts are a trace.
func (p *Plan) replays(s *Stage) bool {
	ps := p.Prompts[s.Prompts]
	return ps != nil && ps.Trace != nil
}

// replayDefaults gives a stage over trace prompts its replay settings.
func (p *Plan) replayDefaults(s *Stage) {
	if !p.replays(s) {
		return
	}
	if s.Replay == nil {
		s.Replay = &Replay{}
	}
	if s.Replay.Speedup == 0 {
		s.Replay.Speedup = DefaultSpeedup
	}
}

func setStr[T ~string](s *T, def T) {
	if *s == "" {
		*s = def
	}
}

func setDur(d *Duration, def time.Duration) {
	if *d == 0 {
		*d = Duration(def)
	}
}

// Endpoint returns the endpoint of that name, or nil.
func (p *Plan) Endpoint(name string) *Endpoint { return p.Endpoints[name] }

// PromptSet returns the prompt set of that name, or nil.
func (p *Plan) PromptSet(name string) *PromptSet { return p.Prompts[name] }
