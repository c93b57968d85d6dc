package protocol

import "errors"

// The OpenAI-compatible APIs (chat.go, completions.go) share their request
// fields and their streamed answer: server-sent events of JSON chunks ending
// in [DONE], with usage in a chunk of its own when asked for.

// openAIReserved are body fields extra_body may not replace: the
// measurement depends on them (a non-streaming answer has no TTFT).
var openAIReserved = map[string]bool{"stream": true, "messages": true, "prompt": true}

// openAIBody is a streamed request's body: the stage's fields around the
// prompt fields that prompt sets (messages or prompt).
func openAIBody(r *Request, prompt func(body map[string]any)) map[string]any {
	body := streamedBody(r, openAIReserved, "max_tokens")
	// include_usage makes the server report usage (the preferred token
	// count); other stream_options from extra_body are kept.
	so := map[string]any{}
	if m, ok := r.Extra["stream_options"].(map[string]any); ok {
		for k, v := range m {
			so[k] = v
		}
	}
	so["include_usage"] = true
	body["stream_options"] = so
	if r.Pinned {
		// vLLM/SGLang extension: emit exactly max_tokens so levels and runs
		// are comparable; harmless on engines that ignore it. Never sent in
		// natural mode, where the point is where the model stops.
		body["ignore_eos"] = true
	} else if _, ok := r.Extra["ignore_eos"]; !ok {
		delete(body, "ignore_eos")
	}
	prompt(body)
	return body
}

// openAIProbe is the OpenAI APIs' probe: max_tokens 1, not streamed, and
// usage.prompt_tokens in the answer.
func openAIProbe(p Protocol, model, text string) (map[string]any, any, func() (int, error)) {
	body := p.Prompt(text)
	body["model"], body["max_tokens"], body["temperature"], body["stream"] = model, 1, 0, false
	out := &struct {
		Usage *struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}{}
	return body, out, func() (int, error) {
		if out.Usage == nil || out.Usage.PromptTokens <= 0 {
			return 0, errors.New("probe response carries no usage.prompt_tokens")
		}
		return out.Usage.PromptTokens, nil
	}
}

// baseBody is a request body's start: extra_body less reserved (the fields
// the measurement depends on), with room for n more fields, and the model.
func baseBody(r *Request, reserved map[string]bool, n int) map[string]any {
	body := make(map[string]any, n+len(r.Extra))
	for k, v := range r.Extra {
		if !reserved[k] {
			body[k] = v
		}
	}
	body["model"] = r.Model
	return body
}

// streamedBody is a streamed API's body start: baseBody, the output bound
// as field maxKey, the temperature (unless extra_body sets one) and stream.
func streamedBody(r *Request, reserved map[string]bool, maxKey string) map[string]any {
	body := baseBody(r, reserved, 10)
	body[maxKey] = r.MaxTokens
	if _, ok := r.Extra["temperature"]; !ok {
		body["temperature"] = r.Temperature
	}
	body["stream"] = true
	return body
}
