package runner

import (
	"github.com/runnerbench/runner/internal/redact"
	"github.com/runnerbench/runner/protocol"
	"github.com/runnerbench/runner/runner/synth"

	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
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
		if err := e.postJSON(ctx, e.origin+"/tokenize", body, &out); err != nil {
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
		if err := e.postJSONAs(ctx, e.apiURL(p), body, answer, e.headersFor(p)); err != nil {
			return 0, err
		}
		return tokens()
	}
}

// postJSON posts body as JSON and decodes a 200 answer into out.
func (e *Engine) postJSON(ctx context.Context, url string, body, out any) error {
	return e.postJSONAs(ctx, url, body, out, nil)
}

// postJSONAs is postJSON with the headers h (nil: the endpoint's).
func (e *Engine) postJSONAs(ctx context.Context, url string, body, out any, h http.Header) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	if h != nil {
		req.Header = h
	} else {
		e.setAuth(req)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.client.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s: %w", redact.URL(url), err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("POST %s: %w", redact.URL(url), err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: http %d: %s", redact.URL(url), resp.StatusCode, sample(data))
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("POST %s: decoding answer: %w", redact.URL(url), err)
	}
	return nil
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
