package runner

import (
	"context"
	"errors"
	"fmt"

	"github.com/runnerbench/runner/protocol"
	"github.com/runnerbench/runner/runner/synth"
)

// calibKey names a calibration: tokenizers and chat templates differ by model
// and by API, so each pair gets its own.
type calibKey struct {
	model string
	api   string
}

// tokenizeCounter counts with a vLLM-style /tokenize at the server's origin.
func (e *Engine) tokenizeCounter(p protocol.Protocol) synth.Counter {
	return func(ctx context.Context, text string) (int, error) {
		body := p.Prompt(text)
		body["model"] = e.model
		var out struct {
			Count *int `json:"count"`
		}
		if err := e.c.PostJSON(ctx, e.c.Origin()+"/tokenize", body, &out, nil); err != nil {
			return 0, err
		}
		if out.Count == nil {
			return 0, errors.New("/tokenize answered without a count")
		}
		return *out.Count, nil
	}
}

// probeCounter counts with a one-token request and the usage its answer
// reports, as the protocol says; an API without a probe cannot count so.
func (e *Engine) probeCounter(p protocol.Protocol) synth.Counter {
	pr, ok := p.(protocol.Prober)
	return func(ctx context.Context, text string) (int, error) {
		if !ok {
			return 0, errors.New("api " + p.Name() + " has no token-counting probe")
		}
		body, answer, tokens := pr.Probe(e.model, text)
		if err := e.c.PostJSON(ctx, e.c.APIURL(p), body, answer, e.c.Header(p)); err != nil {
			return 0, err
		}
		return tokens()
	}
}

// sizerFor returns the stage's prompt sizer, calibrating once per model and
// API for the engine's lifetime (a run).
func (e *Engine) sizerFor(ctx context.Context, api protocol.Protocol, reference bool) (*synth.Sizer, string) {
	if reference {
		return &synth.Sizer{Reference: true, Source: "reference"}, ""
	}
	key := calibKey{e.model, api.Name()}
	e.calMu.Lock()
	defer e.calMu.Unlock()
	if s, ok := e.calib[key]; ok {
		return s, ""
	}
	var s *synth.Sizer
	var warn string
	if o, w, err := synth.Calibrate(ctx, e.tokenizeCounter(api)); err == nil {
		s = &synth.Sizer{Overhead: o, PerWord: w, Source: "tokenize"}
	} else if o, w, err2 := synth.Calibrate(ctx, e.probeCounter(api)); err2 == nil {
		s = &synth.Sizer{Overhead: o, PerWord: w, Source: "probe"}
		e.log.Debug().Err(err).Msg("no /tokenize; calibrated prompt length with a probe request")
	} else {
		// Neither works: keep going with the reference's estimate, and say so,
		// since "1024 input tokens" is then a guess (mean_input_tokens shows
		// what the server actually counted when it reports usage).
		s = &synth.Sizer{PerWord: 0.75, Source: "estimate"} // the reference's 0.75 tokens per word
		warn = fmt.Sprintf("could not calibrate prompt length for model %q (%v; %v); using the 0.75-tokens-per-word estimate", e.model, err, err2)
	}
	e.calib[key] = s
	return s, warn
}
