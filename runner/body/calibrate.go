package body

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/rs/zerolog"

	"github.com/runnerbench/runner/protocol"
	"github.com/runnerbench/runner/runner/client"
	"github.com/runnerbench/runner/runner/synth"
)

// Calibrator sizes synthetic prompts in the server's tokens: it measures
// how many tokens the endpoint's tokenizer and chat template make of
// filler text, once per model and API for a run (a Calibrator lives as
// long as its engine).
type Calibrator struct {
	c     *client.Client
	model string
	log   zerolog.Logger

	mu     sync.Mutex
	sizers map[calibKey]*synth.Sizer
}

// NewCalibrator is the calibrator of model on the endpoint c serves.
func NewCalibrator(c *client.Client, model string, log zerolog.Logger) *Calibrator {
	return &Calibrator{c: c, model: model, log: log, sizers: map[calibKey]*synth.Sizer{}}
}

// calibKey names a calibration: tokenizers and chat templates differ by model
// and by API, so each pair gets its own.
type calibKey struct {
	model string
	api   string
}

// tokenizeCounter counts with a vLLM-style /tokenize at the server's origin.
func (cal *Calibrator) tokenizeCounter(p protocol.Protocol) synth.Counter {
	return func(ctx context.Context, text string) (int, error) {
		body := p.Prompt(text)
		body["model"] = cal.model
		var out struct {
			Count *int `json:"count"`
		}
		if err := cal.c.PostJSON(ctx, cal.c.Origin()+"/tokenize", body, &out, nil); err != nil {
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
func (cal *Calibrator) probeCounter(p protocol.Protocol) synth.Counter {
	pr, ok := p.(protocol.Prober)
	return func(ctx context.Context, text string) (int, error) {
		if !ok {
			return 0, errors.New("api " + p.Name() + " has no token-counting probe")
		}
		body, answer, tokens := pr.Probe(cal.model, text)
		if err := cal.c.PostJSON(ctx, cal.c.APIURL(p), body, answer, cal.c.Header(p)); err != nil {
			return 0, err
		}
		return tokens()
	}
}

// Sizer returns a stage's prompt sizer for api (reference: the
// reference's fixed estimate, no calibration), calibrating once per model
// and API, and a warning when calibration was impossible.
func (cal *Calibrator) Sizer(ctx context.Context, api protocol.Protocol, reference bool) (*synth.Sizer, string) {
	if reference {
		return &synth.Sizer{Reference: true, Source: "reference"}, ""
	}
	key := calibKey{cal.model, api.Name()}
	cal.mu.Lock()
	defer cal.mu.Unlock()
	if s, ok := cal.sizers[key]; ok {
		return s, ""
	}
	var s *synth.Sizer
	var warn string
	if o, w, err := synth.Calibrate(ctx, cal.tokenizeCounter(api)); err == nil {
		s = &synth.Sizer{Overhead: o, PerWord: w, Source: "tokenize"}
	} else if o, w, err2 := synth.Calibrate(ctx, cal.probeCounter(api)); err2 == nil {
		s = &synth.Sizer{Overhead: o, PerWord: w, Source: "probe"}
		cal.log.Debug().Err(err).Msg("no /tokenize; calibrated prompt length with a probe request")
	} else {
		// Neither works: keep going with the reference's estimate, and say so,
		// since "1024 input tokens" is then a guess (mean_input_tokens shows
		// what the server actually counted when it reports usage).
		s = &synth.Sizer{PerWord: 0.75, Source: "estimate"} // the reference's 0.75 tokens per word
		warn = fmt.Sprintf("could not calibrate prompt length for model %q (%v; %v); using the 0.75-tokens-per-word estimate", cal.model, err, err2)
	}
	cal.sizers[key] = s
	return s, warn
}
