package sse

// The typed event streams: the OpenAI Responses API and the Anthropic
// Messages API send one JSON object per event with a "type" member naming
// it, instead of chat's choices. ParseResponses and ParseMessages scan such
// an event into the same Chunk as Parse (a token of answer or reasoning, the
// finish, usage, an error) with the same scanner, so an event costs what a
// chat chunk costs: one walk, no allocation.

// Kind is what a typed event is, beyond the facts it leaves in its Chunk.
type Kind uint8

// Kinds of typed event.
const (
	// KindOther is an event of the API that carries nothing to end on.
	KindOther Kind = iota
	// KindStart opens a Messages stream (message_start): its usage is the
	// input tokens, which the output count of message_delta comes without.
	KindStart
	// KindEnd is the API's terminal event (response.completed or
	// response.incomplete; message_stop): the stream is complete.
	KindEnd
	// KindChat is an OpenAI-compatible chunk (choices, no type):
	// the endpoint answered another API than the one asked for.
	KindChat
	// KindResponses and KindMessages are the other typed API's events.
	KindResponses
	KindMessages
)

// Finish reasons the typed APIs' own stop reasons are mapped to: chat's
// words, which the aggregation reads ("length": cut at max_tokens).
var (
	reasonStop      = []byte("stop")
	reasonLength    = []byte("length")
	reasonToolCalls = []byte("tool_calls")
	reasonFilter    = []byte("content_filter")
)

// responsesType classifies a Responses event type.
type eventType uint8

const (
	evUnknown         eventType = iota
	evText                      // an answer delta
	evReasoning                 // a reasoning delta
	evToolArgs                  // a tool call's argument delta (answer tokens)
	evItemAdded                 // response.output_item.added
	evEnd                       // response.completed / response.incomplete
	evFailed                    // response.failed
	evError                     // error
	evForeignMessages           // an Anthropic event type
	// Messages.
	evMsgStart
	evBlockStart
	evBlockDelta
	evMsgDelta
	evMsgStop
	evForeignResponses // a Responses event type
)

func responsesType(s []byte) eventType {
	switch string(s) {
	case "response.output_text.delta", "response.refusal.delta":
		return evText
	case "response.reasoning_text.delta", "response.reasoning_summary_text.delta", "response.reasoning.delta":
		return evReasoning
	case "response.function_call_arguments.delta", "response.custom_tool_call_input.delta", "response.mcp_call_arguments.delta":
		return evToolArgs
	case "response.output_item.added":
		return evItemAdded
	case "response.completed", "response.incomplete":
		return evEnd
	case "response.failed":
		return evFailed
	case "error":
		return evError
	case "message_start", "content_block_start", "content_block_delta", "message_delta", "message_stop":
		return evForeignMessages
	}
	return evUnknown
}

func messagesType(s []byte) eventType {
	switch string(s) {
	case "content_block_delta":
		return evBlockDelta
	case "content_block_start":
		return evBlockStart
	case "message_start":
		return evMsgStart
	case "message_delta":
		return evMsgDelta
	case "message_stop":
		return evMsgStop
	case "error":
		return evError
	}
	if len(s) > 9 && string(s[:9]) == "response." {
		return evForeignResponses
	}
	return evUnknown // ping, content_block_stop, and types to come
}

// typed is what one walk of an event's top-level members found; the event's
// type may come anywhere among them, so the facts are judged at the end.
type typed struct {
	typ        eventType
	hasType    bool
	choices    bool
	delta      bool   // a non-empty delta string (Responses)
	incomplete []byte // incomplete_details.reason
	errMsg     []byte
	isError    bool
	toolItem   bool // item / content_block is a tool call
	deltaKind  []byte
	deltaText  bool // the Messages delta's text, thinking or partial_json is non-empty
	stopReason []byte
	hasStop    bool
}

// ParseResponses scans one event of an OpenAI Responses stream into c:
// output_text (and refusal) deltas are answer tokens, reasoning deltas
// reasoning, function-call argument deltas answer tokens of a tool call
// (whose output_item.added sets ToolCall); response.completed and
// response.incomplete finish the stream with the response's usage
// (input_tokens, output_tokens), the reason incomplete_details gives
// (max_output_tokens is "length") and KindEnd; llama-server's timings
// beside the response are read as on chat; response.failed and error are
// errors. It returns ErrMalformed for anything but a JSON object.
func ParseResponses(data []byte, c *Chunk) (Kind, error) {
	var t typed
	if kind, done, err := walkTyped(data, c, &t, false); done {
		return kind, err
	}
	switch t.typ {
	case evText, evToolArgs:
		c.Content = t.delta
	case evReasoning:
		c.Reasoning = t.delta
	case evItemAdded:
		c.ToolCall = t.toolItem
	case evEnd:
		c.Finish = true
		switch {
		case string(t.incomplete) == "max_output_tokens" || string(t.incomplete) == "max_tokens":
			c.FinishReason = reasonLength
		case string(t.incomplete) == "content_filter":
			c.FinishReason = reasonFilter
		case t.incomplete != nil:
			c.FinishReason = t.incomplete
		}
		// response.completed says no more: llama-server and
		// llm-d-inference-sim send it when the output was cut at
		// max_output_tokens too (OpenAI sends response.incomplete), so
		// the finish reason is left unknown and the aggregation judges a
		// cut by the length.
		return KindEnd, nil
	case evFailed, evError:
		c.Error, c.ErrorMessage = true, t.errMsg
	case evForeignMessages:
		return KindMessages, nil
	}
	return KindOther, nil
}

// ParseMessages scans one event of an Anthropic Messages stream into c:
// content_block_delta's text_delta is an answer token, thinking_delta
// reasoning, input_json_delta an answer token of a tool call (whose
// content_block_start sets ToolCall); message_start's usage is the input
// tokens (input_tokens with the cache's creation and read tokens: Anthropic
// counts them apart) and KindStart; message_delta finishes with its
// stop_reason and usage (output_tokens, and the input counts when it
// repeats them); message_stop is KindEnd; error is an error; ping and
// content_block_stop carry nothing.
func ParseMessages(data []byte, c *Chunk) (Kind, error) {
	var t typed
	if kind, done, err := walkTyped(data, c, &t, true); done {
		return kind, err
	}
	switch t.typ {
	case evBlockDelta:
		if t.deltaText {
			switch string(t.deltaKind) {
			case "text_delta", "input_json_delta":
				c.Content = true
			case "thinking_delta":
				c.Reasoning = true
			}
		}
	case evBlockStart:
		c.ToolCall = t.toolItem
	case evMsgStart:
		return KindStart, nil
	case evMsgDelta:
		if t.hasStop {
			c.Finish = true
			switch string(t.stopReason) {
			case "end_turn", "stop_sequence", "pause_turn":
				c.FinishReason = reasonStop
			case "max_tokens", "model_context_window_exceeded":
				c.FinishReason = reasonLength
			case "tool_use":
				c.FinishReason = reasonToolCalls
			case "refusal":
				c.FinishReason = reasonFilter
			default:
				c.FinishReason = t.stopReason
			}
		}
	case evMsgStop:
		return KindEnd, nil
	case evError:
		c.Error, c.ErrorMessage = true, t.errMsg
	case evForeignResponses:
		return KindResponses, nil
	}
	return KindOther, nil
}

// walkTyped walks the event's top-level members into c (usage) and t.
// messages selects the Anthropic shapes of delta, usage and the nested
// objects. done is set when the walk settles the event by itself: malformed
// input (ErrMalformed, c zeroed), or an event without a type (KindChat when
// it has choices, else KindOther).
func walkTyped(d []byte, c *Chunk, t *typed, messages bool) (_ Kind, done bool, _ error) {
	*c = Chunk{}
	i := skipWS(d, 0)
	if i >= len(d) || d[i] != '{' {
		return KindOther, true, ErrMalformed
	}
	i++
	for first := true; ; first = false {
		var key []byte
		var more bool
		if key, i, more = member(d, i, first); i < 0 {
			goto malformed
		}
		if !more {
			break
		}
		switch string(key) {
		case "type":
			var s []byte
			var isStr bool
			s, isStr, i = stringOrSkip(d, i)
			t.hasType = isStr
			if messages {
				t.typ = messagesType(s)
			} else {
				t.typ = responsesType(s)
			}
		case "delta":
			if messages {
				i = messagesDelta(d, i, t)
			} else {
				t.delta, i = nonEmptyString(d, i)
			}
		case "sequence_number", "item_id", "output_index", "content_index", "index", "logprobs", "obfuscation":
			i = skipValue(d, i)
		case "response": // Responses: the response object of created, completed, failed
			i = responseObject(d, i, c, t)
		case "message":
			if messages && d[i] == '{' {
				i = messageObject(d, i, c) // message_start
				break
			}
			var s []byte
			var isStr bool
			if s, isStr, i = stringOrSkip(d, i); isStr { // Responses' error event
				t.errMsg = s
			}
		case "item", "content_block":
			i = toolItem(d, i, t)
		case "usage": // Messages: message_delta's usage
			i = typedUsage(d, i, c, true)
		case "error":
			var ec Chunk
			i = errorValue(d, i, &ec)
			if ec.Error {
				t.isError = true
				if ec.ErrorMessage != nil {
					t.errMsg = ec.ErrorMessage
				}
			}
		case "timings": // llama-server's, beside response.completed's response
			i = timings(d, i, c)
		case "choices":
			t.choices = true
			i = skipValue(d, i)
		default:
			i = skipValue(d, i)
		}
		if i < 0 {
			goto malformed
		}
	}
	if skipWS(d, i) != len(d) {
		goto malformed
	}
	if !t.hasType {
		if t.choices {
			return KindChat, true, nil
		}
		return KindOther, true, nil
	}
	return KindOther, false, nil
malformed:
	*c = Chunk{}
	return KindOther, true, ErrMalformed
}

// responseObject reads a Responses event's response: its id, usage,
// incomplete_details.reason and error.message.
func responseObject(d []byte, i int, c *Chunk, t *typed) int {
	i, _ = object(d, i, func(key []byte, i int) int {
		switch string(key) {
		case "id":
			c.ID, _, i = stringOrSkip(d, i)
		case "usage":
			i = typedUsage(d, i, c, false)
		case "incomplete_details":
			i, _ = object(d, i, func(key []byte, i int) int {
				if string(key) == "reason" {
					t.incomplete, _, i = stringOrSkip(d, i)
					return i
				}
				return skipValue(d, i)
			})
		case "error":
			var ec Chunk
			i = errorValue(d, i, &ec)
			if ec.ErrorMessage != nil {
				t.errMsg = ec.ErrorMessage
			}
		default:
			i = skipValue(d, i)
		}
		return i
	})
	return i
}

// typedUsage reads a typed API's usage: input_tokens and output_tokens;
// on Messages (messages set) the input is input_tokens plus the cache's
// creation and read tokens, which Anthropic counts apart from input_tokens.
// Chat's usage keeps a function of its own (chunk.go): passing it the API
// as well cost every chat chunk 7 instructions and one that carries usage 26
// (ssecost, callgrind).
func typedUsage(d []byte, i int, c *Chunk, messages bool) int {
	c.PromptTokens, c.CompletionTokens, c.UsageInvalid = 0, 0, false
	i, c.Usage = object(d, i, func(key []byte, i int) int {
		var ok bool
		var v int
		switch string(key) {
		case "input_tokens":
			v, ok, i = count(d, i)
			if messages {
				c.PromptTokens += v // the parts are summed
			} else {
				c.PromptTokens = v
			}
		case "cache_creation_input_tokens", "cache_read_input_tokens":
			if !messages {
				return skipValue(d, i)
			}
			v, ok, i = count(d, i)
			c.PromptTokens += v
		case "output_tokens":
			c.CompletionTokens, ok, i = count(d, i)
		default:
			return skipValue(d, i)
		}
		c.UsageInvalid = c.UsageInvalid || !ok
		return i
	})
	return i
}

// messageObject reads message_start's message: its id and usage.
func messageObject(d []byte, i int, c *Chunk) int {
	i, _ = object(d, i, func(key []byte, i int) int {
		switch string(key) {
		case "usage":
			return typedUsage(d, i, c, true)
		case "id":
			c.ID, _, i = stringOrSkip(d, i)
			return i
		}
		return skipValue(d, i)
	})
	return i
}

// messagesDelta reads a Messages delta: content_block_delta's type and
// whether its text, thinking or partial_json is non-empty, or
// message_delta's stop_reason.
func messagesDelta(d []byte, i int, t *typed) int {
	i, _ = object(d, i, func(key []byte, i int) int {
		var ne bool
		switch string(key) {
		case "type":
			t.deltaKind, _, i = stringOrSkip(d, i)
		case "text", "thinking", "partial_json":
			ne, i = nonEmptyString(d, i)
			t.deltaText = t.deltaText || ne
		case "stop_reason":
			if i < len(d) && d[i] == 'n' {
				return lit(d, i, "null")
			}
			var isStr bool
			t.stopReason, isStr, i = stringOrSkip(d, i)
			t.hasStop = isStr
		default:
			i = skipValue(d, i)
		}
		return i
	})
	return i
}

// toolItem reads a Responses output item or a Messages content block: is
// it a tool call (function_call; tool_use)?
func toolItem(d []byte, i int, t *typed) int {
	i, _ = object(d, i, func(key []byte, i int) int {
		if string(key) == "type" {
			var s []byte
			s, _, i = stringOrSkip(d, i)
			switch string(s) {
			case "function_call", "custom_tool_call", "mcp_call", "tool_use", "server_tool_use":
				t.toolItem = true
			}
			return i
		}
		return skipValue(d, i)
	})
	return i
}
