package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// The typed event streams: the OpenAI Responses API (/v1/responses) and the
// Anthropic Messages API (/v1/messages). Each event is "event: NAME" and a
// JSON data line whose type repeats the name. The token schedule is the
// same as chat's: one delta event per chunk of tokens, written when the
// engine produced them; the events around the deltas (a response's
// created/in_progress/item added, a message's message_start/content
// block/ping) go out with the first token, as the engines send them, and
// the closing ones (the item's done events and response.completed with the
// usage; content_block_stop, message_delta with the usage, message_stop)
// with the last. Neither API ends with [DONE].

// apiTool is a tool in any API's form: chat's {function: {name}},
// Responses' and Messages' {name}.
type apiTool struct {
	Name     string `json:"name"`
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

func (t apiTool) name() string {
	if t.Name != "" {
		return t.Name
	}
	return t.Function.Name
}

// toolCall decides whether the response is a tool call: the request has
// tools and its tool_choice asks for one (required, any, a named function
// or tool), or is auto (or absent) and a draw falls under rate; none never.
func toolCall(req *apiRequest, rng *rand.Rand, rate float64) bool {
	if len(req.Tools) == 0 {
		return false
	}
	mode, _ := toolChoice(req.ToolChoice)
	switch mode {
	case "none":
		return false
	case "required", "any", "function", "tool":
		return true
	}
	return rate > 0 && rng.Float64() < rate
}

// toolChoice reads a tool_choice in any API's form: its mode (auto, none,
// required; any, tool; function) and the function it names.
func toolChoice(raw json.RawMessage) (mode, name string) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] == 'n' {
		return "auto", ""
	}
	if raw[0] == '"' {
		_ = json.Unmarshal(raw, &mode)
		return mode, ""
	}
	var c struct {
		Type     string `json:"type"`
		Name     string `json:"name"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	_ = json.Unmarshal(raw, &c)
	if c.Name == "" {
		c.Name = c.Function.Name
	}
	return c.Type, c.Name
}

// calledTool is the name of the function a tool-call response calls: the
// one the choice names, or the first tool.
func calledTool(req *apiRequest) string {
	if _, name := toolChoice(req.ToolChoice); name != "" {
		return name
	}
	if len(req.Tools) > 0 {
		return req.Tools[0].name()
	}
	return ""
}

// responsesParts is the text a Responses request's prompt tokens are
// counted on: the input string, or its messages' texts joined by "\n" (as
// chat's), with the instructions first; and the tokens of its images
// (input_image parts: see imageTokens).
func responsesParts(req *apiRequest) (string, int, int, error) {
	in := bytes.TrimSpace(req.Input)
	if len(in) == 0 || in[0] == 'n' {
		return "", -1, 0, errors.New("input is required")
	}
	if in[0] == '"' {
		var s string
		if err := json.Unmarshal(in, &s); err != nil {
			return "", -1, 0, fmt.Errorf("input: %w", err)
		}
		return s, -1, 0, nil
	}
	var items []apiMessage
	if err := json.Unmarshal(in, &items); err != nil || len(items) == 0 {
		return "", -1, 0, errors.New("input must be a string or a non-empty array of messages")
	}
	var sb strings.Builder
	images := 0
	for i, m := range items {
		txt, img, err := contentImages(m.Content)
		if err != nil {
			return "", -1, 0, fmt.Errorf("input[%d].content: %w", i, err)
		}
		images += img
		if i > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString(txt)
	}
	return sb.String(), -1, images, nil
}

// messagesInput is the text a Messages request's prompt tokens are counted
// on: the system prompt, then the messages' texts, joined by "\n" (as
// chat's, whose system message the Messages API carries apart).
func messagesInput(req *apiRequest) (string, int, error) {
	if len(req.Messages) == 0 {
		return "", -1, errors.New("messages: at least one message is required")
	}
	var sb strings.Builder
	if sys := bytes.TrimSpace(req.System); len(sys) > 0 && sys[0] != 'n' {
		txt, err := contentText(sys)
		if err != nil {
			return "", -1, fmt.Errorf("system: %w", err)
		}
		sb.WriteString(txt)
		sb.WriteByte('\n')
	}
	for i, m := range req.Messages {
		txt, err := contentText(m.Content)
		if err != nil {
			return "", -1, fmt.Errorf("messages[%d].content: %w", i, err)
		}
		if i > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString(txt)
	}
	return sb.String(), -1, nil
}

// typed reports whether the stream speaks a typed API.
func (st *stream) typed() bool { return st.api == apiResponses || st.api == apiMessages }

// hexID is the response's id without its prefix, shared by its items' ids.
func (st *stream) hexID() string {
	if i := strings.IndexByte(st.id, '_'); i >= 0 {
		return st.id[i+1:]
	}
	return st.id
}

// event starts an event: its name line and the data line's opening,
// {"type":NAME. (OpenAI numbers Responses events with sequence_number, and
// places them with output_index and content_index; llama-server and
// llm-d-inference-sim send none of these, nor does the simulator.)
func (st *stream) event(b []byte, name string) []byte {
	b = append(b, "event: "...)
	b = append(b, name...)
	b = append(b, "\ndata: {\"type\":\""...)
	b = append(b, name...)
	return append(b, '"')
}

func endEvent(b []byte) []byte { return append(b, "}\n\n"...) }

// block is what an output item (Responses) or content block (Messages) holds.
type block uint8

const (
	blockText block = iota
	blockReasoning
	blockTool
)

// blockAt is the block token i of the response goes in.
func (st *stream) blockAt(i int) block {
	switch {
	case st.tool:
		return blockTool
	case i < st.reasoning:
		return blockReasoning
	}
	return blockText
}

// blockIndex is the block's index in the output (reasoning comes first).
func (st *stream) blockIndex(k block) int {
	if k == blockText && st.reasoning > 0 {
		return 1
	}
	return 0
}

// appendTypedOpen appends the events that open the response, and its
// first block, before the first delta.
func (st *stream) appendTypedOpen(b []byte) []byte {
	st.roleSent = true
	if st.api == apiResponses {
		for _, name := range []string{"response.created", "response.in_progress"} {
			b = st.event(b, name)
			b = append(b, `,"response":`...)
			b = st.appendResponse(b, "in_progress", false)
			b = endEvent(b)
		}
	} else {
		b = st.event(b, "message_start")
		b = append(b, `,"message":{"id":"`...)
		b = append(b, st.id...)
		b = append(b, `","type":"message","role":"assistant","model":`...)
		b = strconv.AppendQuote(b, st.s.cfg.Model)
		b = append(b, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":`...)
		b = st.appendMessagesInput(b)
		b = append(b, `,"output_tokens":0}}`...)
		b = endEvent(b)
	}
	b = st.appendBlockOpen(b, st.blockAt(0))
	if st.api == apiMessages {
		b = append(b, "event: ping\ndata: {\"type\":\"ping\"}\n\n"...)
	}
	return b
}

// appendMessagesInput opens a Messages usage object with its input
// counts, as Anthropic and llama-server count them: the prompt tokens the
// prefix cache served in cache_read_input_tokens, the rest in input_tokens.
func (st *stream) appendMessagesInput(b []byte) []byte {
	st.sq.mu.Lock()
	cached := st.sq.cached
	st.sq.mu.Unlock()
	in := st.usagePrompt()
	if in > 0 {
		in -= cached
	} else {
		cached = 0
	}
	b = append(b, `{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(in), 10)
	b = append(b, `,"cache_creation_input_tokens":0,"cache_read_input_tokens":`...)
	return strconv.AppendInt(b, int64(cached), 10)
}

// usagePrompt is the prompt tokens usage reports (FaultBadUsage: a
// negative count).
func (st *stream) usagePrompt() int {
	if st.rec.t.Fault == FaultBadUsage {
		return badPromptTokens
	}
	return st.rec.t.PromptTokens
}

// appendBlockOpen opens block k: Responses' output_item.added (and a
// message's content_part.added), Messages' content_block_start.
func (st *stream) appendBlockOpen(b []byte, k block) []byte {
	if st.api == apiMessages {
		idx := st.blockIndex(k)
		b = st.event(b, "content_block_start")
		b = append(b, `,"index":`...)
		b = strconv.AppendInt(b, int64(idx), 10)
		switch k {
		case blockTool:
			b = append(b, `,"content_block":{"type":"tool_use","id":"toolu_`...)
			b = append(b, st.hexID()...)
			b = append(b, `","name":`...)
			b = strconv.AppendQuote(b, st.toolName)
			b = append(b, `,"input":{}}`...)
		case blockReasoning:
			b = append(b, `,"content_block":{"type":"thinking","thinking":"","signature":""}`...)
		default:
			b = append(b, `,"content_block":{"type":"text","text":""}`...)
		}
		return endEvent(b)
	}
	b = st.event(b, "response.output_item.added")
	b = append(b, `,"item":`...)
	b = st.appendItem(b, k, false)
	b = endEvent(b)
	if k == blockText {
		b = st.event(b, "response.content_part.added")
		b = st.appendItemRef(b, k)
		b = append(b, `,"part":{"type":"output_text","text":""}`...)
		b = endEvent(b)
	}
	return b
}

// appendItemRef appends a Responses event's item_id.
func (st *stream) appendItemRef(b []byte, k block) []byte {
	b = append(b, `,"item_id":"`...)
	b = append(b, [...]string{blockText: "msg_", blockReasoning: "rs_", blockTool: "fc_"}[k]...)
	b = append(b, st.hexID()...)
	return append(b, '"')
}

// appendBlockText appends block k's text so far (tokens up to st.sent),
// JSON-escaped, for the done events.
func (st *stream) appendBlockText(b []byte, k block) []byte {
	from, to := 0, st.sent
	switch k {
	case blockReasoning:
		to = min(st.sent, st.reasoning)
	case blockText:
		from = min(st.sent, st.reasoning)
	}
	return st.appendDeltaText(b, k, from, to, true)
}

// appendDeltaText appends the text of tokens [from, to) of block k, as it
// goes inside a JSON string; a tool call's text is its arguments, the JSON
// {"text":"..."} (escaped), opened with its first token and closed with its
// last (final).
func (st *stream) appendDeltaText(b []byte, k block, from, to int, final bool) []byte {
	if k == blockTool && from == 0 {
		b = append(b, `{\"text\":\"`...)
	}
	b = st.tokenText(b, from, to)
	if k == blockTool && final {
		b = append(b, `\"}`...)
	}
	return b
}

// appendItem appends a Responses output item of kind k, in progress or
// done (with its text).
func (st *stream) appendItem(b []byte, k block, done bool) []byte {
	status := "in_progress"
	if done {
		status = "completed"
	}
	switch k {
	case blockTool:
		b = append(b, `{"id":"fc_`...)
		b = append(b, st.hexID()...)
		b = append(b, `","type":"function_call","status":"`...)
		b = append(b, status...)
		b = append(b, `","call_id":"call_`...)
		b = append(b, st.hexID()...)
		b = append(b, `","name":`...)
		b = strconv.AppendQuote(b, st.toolName)
		b = append(b, `,"arguments":"`...)
		if done {
			b = st.appendBlockText(b, k)
		}
		return append(b, `"}`...)
	case blockReasoning:
		b = append(b, `{"id":"rs_`...)
		b = append(b, st.hexID()...)
		b = append(b, `","type":"reasoning","status":"`...)
		b = append(b, status...)
		b = append(b, `","summary":[],"content":[`...)
		if done {
			b = append(b, `{"type":"reasoning_text","text":"`...)
			b = st.appendBlockText(b, k)
			b = append(b, `"}`...)
		}
		return append(b, "]}"...)
	}
	b = append(b, `{"id":"msg_`...)
	b = append(b, st.hexID()...)
	b = append(b, `","type":"message","status":"`...)
	b = append(b, status...)
	b = append(b, `","role":"assistant","content":[`...)
	if done {
		b = append(b, `{"type":"output_text","text":"`...)
		b = st.appendBlockText(b, k)
		b = append(b, `","annotations":[],"logprobs":[]}`...)
	}
	return append(b, "]}"...)
}

// appendBlockClose closes block k: Responses' done events, Messages'
// content_block_stop.
func (st *stream) appendBlockClose(b []byte, k block) []byte {
	if st.api == apiMessages {
		b = st.event(b, "content_block_stop")
		b = append(b, `,"index":`...)
		b = strconv.AppendInt(b, int64(st.blockIndex(k)), 10)
		return endEvent(b)
	}
	switch k {
	case blockText:
		b = st.appendDone(b, "response.output_text.done", k, `,"text":"`)
		b = st.event(b, "response.content_part.done")
		b = st.appendItemRef(b, k)
		b = append(b, `,"part":{"type":"output_text","text":"`...)
		b = st.appendBlockText(b, k)
		b = append(b, `","annotations":[],"logprobs":[]}`...)
		b = endEvent(b)
	case blockReasoning:
		b = st.appendDone(b, "response.reasoning_text.done", k, `,"text":"`)
	case blockTool:
		b = st.appendDone(b, "response.function_call_arguments.done", k, `,"arguments":"`)
	}
	b = st.event(b, "response.output_item.done")
	b = append(b, `,"item":`...)
	b = st.appendItem(b, k, true)
	return endEvent(b)
}

// appendDone is a Responses ".done" event of block k: its item reference and
// the block's whole text as field (`,"text":"` or `,"arguments":"`).
func (st *stream) appendDone(b []byte, event string, k block, field string) []byte {
	b = st.event(b, event)
	b = st.appendItemRef(b, k)
	b = append(b, field...)
	b = st.appendBlockText(b, k)
	b = append(b, '"')
	return endEvent(b)
}

// appendTypedChunk appends the delta event of tokens [from, to), after
// the events that close the reasoning block and open the answer's when
// this is the first answer token; final adds the closing events.
func (st *stream) appendTypedChunk(b []byte, from, to int, final bool) []byte {
	k := st.blockAt(from)
	if from > 0 && from == st.reasoning && k == blockText {
		b = st.appendBlockClose(b, blockReasoning)
		b = st.appendBlockOpen(b, blockText)
	}
	last := final && to == st.sq.outputTokens
	if st.api == apiMessages {
		b = st.event(b, "content_block_delta")
		b = append(b, `,"index":`...)
		b = strconv.AppendInt(b, int64(st.blockIndex(k)), 10)
		switch k {
		case blockTool:
			b = append(b, `,"delta":{"type":"input_json_delta","partial_json":"`...)
		case blockReasoning:
			b = append(b, `,"delta":{"type":"thinking_delta","thinking":"`...)
		default:
			b = append(b, `,"delta":{"type":"text_delta","text":"`...)
		}
		b = st.appendDeltaText(b, k, from, to, last)
		b = append(b, `"}`...)
	} else {
		b = st.event(b, [...]string{blockText: "response.output_text.delta", blockReasoning: "response.reasoning_text.delta",
			blockTool: "response.function_call_arguments.delta"}[k])
		b = st.appendItemRef(b, k)
		b = append(b, `,"delta":"`...)
		b = st.appendDeltaText(b, k, from, to, last)
		b = append(b, '"')
	}
	b = endEvent(b)
	if !final {
		return b
	}
	st.sent = to // the closing events and usage count this chunk's tokens
	b = st.appendBlockClose(b, k)
	if st.api == apiMessages {
		b = st.event(b, "message_delta")
		b = append(b, `,"delta":{"stop_reason":"`...)
		b = append(b, st.stopReason()...)
		b = append(b, `","stop_sequence":null},"usage":{"output_tokens":`...)
		b = strconv.AppendInt(b, int64(st.usageCompletion()), 10)
		b = append(b, "}"...)
		b = endEvent(b)
		b = st.event(b, "message_stop")
		return endEvent(b)
	}
	// response.completed even when the output was cut at
	// max_output_tokens, as llama-server and llm-d-inference-sim send it
	// (OpenAI sends response.incomplete).
	b = st.event(b, "response.completed")
	b = append(b, `,"response":`...)
	b = st.appendResponse(b, "completed", true)
	return endEvent(b)
}

// usageCompletion is the output tokens usage reports.
func (st *stream) usageCompletion() int {
	if st.rec.t.Fault == FaultBadUsage {
		return badCompletionTokens
	}
	return st.sent
}

// stopReason is Messages' stop_reason for the finish.
func (st *stream) stopReason() string {
	switch {
	case st.tool:
		return "tool_use"
	case st.finishReason() == "length":
		return "max_tokens"
	}
	return "end_turn"
}

// appendResponse appends a Responses response object: in progress (no
// output, null usage) or finished (its output items and usage).
func (st *stream) appendResponse(b []byte, status string, done bool) []byte {
	b = append(b, `{"id":"`...)
	b = append(b, st.id...)
	b = append(b, `","object":"response","created_at":`...)
	b = strconv.AppendInt(b, st.created, 10)
	b = append(b, `,"status":"`...)
	b = append(b, status...)
	b = append(b, `","model":`...)
	b = strconv.AppendQuote(b, st.s.cfg.Model)
	b = append(b, `,"output":[`...)
	if done {
		if st.reasoning > 0 {
			b = st.appendItem(b, blockReasoning, true)
			b = append(b, ',')
		}
		b = st.appendItem(b, st.blockAt(st.reasoning), true)
	}
	b = append(b, `],"usage":`...)
	if !done {
		return append(b, "null}"...)
	}
	st.sq.mu.Lock()
	cached := st.sq.cached
	st.sq.mu.Unlock()
	b = append(b, `{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(st.usagePrompt()), 10)
	b = append(b, `,"input_tokens_details":{"cached_tokens":`...)
	b = strconv.AppendInt(b, int64(cached), 10)
	b = append(b, `},"output_tokens":`...)
	b = strconv.AppendInt(b, int64(st.usageCompletion()), 10)
	b = append(b, `,"output_tokens_details":{"reasoning_tokens":`...)
	b = strconv.AppendInt(b, int64(min(st.sent, st.reasoning)), 10)
	b = append(b, `},"total_tokens":`...)
	b = strconv.AppendInt(b, int64(st.usagePrompt()+st.usageCompletion()), 10)
	return append(b, "}}"...)
}

// appendTypedMalformed appends an event whose JSON never closes.
func (st *stream) appendTypedMalformed(b []byte) []byte {
	if st.api == apiMessages {
		return append(b, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"\n\n"...)
	}
	return append(b, "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"\n\n"...)
}

// appendTypedError appends the API's error event: response.failed with the
// response's error (Responses), an error event (Messages).
func (st *stream) appendTypedError(b []byte, msg string) []byte {
	if st.api == apiMessages {
		b = st.event(b, "error")
		b = append(b, `,"error":{"type":"api_error","message":`...)
		b = strconv.AppendQuote(b, msg)
		b = append(b, '}')
		return endEvent(b)
	}
	b = st.event(b, "response.failed")
	b = append(b, `,"response":{"id":"`...)
	b = append(b, st.id...)
	b = append(b, `","object":"response","status":"failed","error":{"code":"server_error","message":`...)
	b = strconv.AppendQuote(b, msg)
	b = append(b, `},"output":[],"usage":null}`...)
	return endEvent(b)
}

// typedWhole is a non-streamed typed response: the whole output and usage.
func (st *stream) typedWhole() []byte {
	if st.api == apiResponses {
		return st.appendResponse(nil, "completed", true)
	}
	b := []byte(`{"id":"`)
	b = append(b, st.id...)
	b = append(b, `","type":"message","role":"assistant","model":`...)
	b = strconv.AppendQuote(b, st.s.cfg.Model)
	b = append(b, `,"content":[`...)
	if st.reasoning > 0 {
		b = append(b, `{"type":"thinking","thinking":"`...)
		b = st.appendBlockText(b, blockReasoning)
		b = append(b, `","signature":""},`...)
	}
	if st.tool {
		var args bytes.Buffer
		args.WriteString(`{"text":"`)
		args.Write(st.tokenText(nil, 0, st.sent))
		args.WriteString(`"}`)
		b = append(b, `{"type":"tool_use","id":"toolu_`...)
		b = append(b, st.hexID()...)
		b = append(b, `","name":`...)
		b = strconv.AppendQuote(b, st.toolName)
		b = append(b, `,"input":`...)
		b = append(b, args.Bytes()...)
		b = append(b, '}')
	} else {
		b = append(b, `{"type":"text","text":"`...)
		b = st.appendBlockText(b, blockText)
		b = append(b, `"}`...)
	}
	b = append(b, `],"stop_reason":"`...)
	b = append(b, st.stopReason()...)
	b = append(b, `","stop_sequence":null,"usage":`...)
	b = st.appendMessagesInput(b)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, int64(st.usageCompletion()), 10)
	return append(b, "}}"...)
}
