package sse

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/bits"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrMalformed is returned by Parse for data that is not a JSON object.
var ErrMalformed = errors.New("sse: malformed chunk")

// Chunk is what Parse extracts from one streamed completion chunk.
type Chunk struct {
	// Content: some choice carries a non-empty answer string (delta.content on
	// chat, text on completions).
	Content bool
	// Reasoning: some choice's delta carries a non-empty reasoning or
	// reasoning_content string.
	Reasoning bool
	// Finish: some choice has a non-null, non-empty finish_reason.
	Finish bool
	// ToolCall: the chunk starts a tool call (a tool_calls element that
	// names its function; a typed API's tool-call item or block). Its
	// argument deltas are answer tokens (Content), as the text they are.
	ToolCall bool
	// FinishReason is the raw (still escaped) finish_reason string, when a string.
	FinishReason []byte
	// Usage: the chunk carries a usage object.
	Usage bool
	// UsageInvalid: its prompt_tokens or completion_tokens is there but not
	// an integer a count can be (a fraction, a string, beyond 18 digits).
	// (Beside Usage, it takes the struct's padding: a chunk costs the same.)
	UsageInvalid     bool
	PromptTokens     int
	CompletionTokens int
	// Error: the chunk is an error object ({"error": ...} or {"object": "error"}).
	Error bool
	// ErrorMessage is the raw (still escaped) error message, when one is given.
	ErrorMessage []byte
	// HasTimings: the chunk carries a top-level timings object (llama.cpp's
	// per-request server timings, in its last chunk); Timings holds its
	// fields, zero where absent.
	HasTimings bool
	Timings    Timings
	// ID is the raw (still escaped) id of the answer the chunk belongs to,
	// when the chunk names one: an OpenAI-style token chunk's own "id", or
	// the id a stream's opening event gives its whole response or message.
	ID []byte
}

// Timings is llama.cpp's per-request `timings` object: the server's own
// prompt and generation times and token counts.
type Timings struct {
	PromptN, PredictedN, CacheN, DraftN, DraftNAccepted int
	PromptMs, PredictedMs                               float64
}

// Token reports whether the chunk carries a token of any kind (what TTFT counts).
func (c *Chunk) Token() bool { return c.Content || c.Reasoning }

// Parse scans one chunk's JSON into c. It walks data once, allocates nothing
// (except when a key is written with escapes, which no server does), and looks
// only where the OpenAI streaming format puts each fact, so the same key names
// inside strings or in unrelated objects (logprobs, tool_calls) are ignored.
// Keys may come in any order; when a key repeats, the last one wins, as with
// encoding/json. Parse returns ErrMalformed for anything but a JSON object; it
// is lenient inside strings (escapes and control bytes are not validated) and
// inside values it skips (numbers and nested containers are not validated).
//
// The scanner is a set of functions over (data, index) that return the next
// index, with a negative index for malformed input: keeping the position in a
// register rather than in a struct field, and returning one int rather than an
// error interface, is most of what makes a chunk cost ~100 ns instead of ~400.
// Parse and choice are longer than this project's usual 80 lines for the same
// reason: their key dispatch is inlined, since a call per key is measurable at
// a million chunks a second.
func Parse(data []byte, c *Chunk) error {
	*c = Chunk{}
	d := data
	i := skipWS(d, 0)
	if i >= len(d) || d[i] != '{' {
		return ErrMalformed
	}
	i++
	var objIsError bool
	var topMessage []byte
	first := true
	// The header every chunk starts with (id, object, created, model) is
	// matched eight bytes at a time in its compact form and skipped without
	// member's generic work; anything else falls through to the loop below.
	for j := i; j+16 <= len(d); {
		if !first {
			if d[j] != ',' {
				break
			}
			j++
		}
		w := binary.LittleEndian.Uint64(d[j:])
		switch {
		case w&0xffffffffffff == keyID:
			start := j + 6
			if j = valueEnd(d, start); j >= 0 {
				c.ID = d[start:j]
			}
		case w == keyModel && d[j+8] == '"':
			j = valueEnd(d, j+9)
		case w == keyObject && d[j+8] == ':' && d[j+9] == '"':
			start := j + 10
			if j = valueEnd(d, start); j >= 0 {
				objIsError = string(d[start:j]) == "error"
			}
		case w == keyCreated && d[j+8] == '"' && d[j+9] == ':' && d[j+10] > ' ':
			// A timestamp: its first eight digits at once, then as skipValue.
			if k := j + 10; k+8 <= len(d) && allDigits(binary.LittleEndian.Uint64(d[k:k+8])) {
				for k += 8; k < len(d) && numberByte[d[k]]; k++ {
				}
				j = k - 1 // undo the +1 for a closing quote below
			} else {
				j = skipValue(d, j+10) - 1
			}
		default:
			goto members
		}
		if j < 0 {
			return ErrMalformed
		}
		i, first = j+1, false
		j = i
	}
members:
	for ; ; first = false {
		// The compact close, the chunk's last byte: done without a member
		// call (each object's loop below has its own).
		if i == len(d)-1 && d[i] == '}' && !first {
			return closeChunk(c, objIsError, topMessage)
		}
		var key []byte
		var more bool
		if key, i, more = member(d, i, first); i < 0 {
			return ErrMalformed
		}
		if !more {
			break
		}
		switch string(key) {
		case "model", "created", "system_fingerprint":
			// The most common keys of all, and never needed: skip their
			// value without looking at the switch below.
			i = skipValue(d, i)
		case "id":
			c.ID, _, i = stringOrSkip(d, i)
		case "choices":
			c.Content, c.Reasoning, c.Finish, c.FinishReason, c.ToolCall = false, false, false, nil, false
			i = choices(d, i, c)
		case "usage":
			i = usage(d, i, c)
		case "timings":
			i = timings(d, i, c)
		case "error":
			c.Error, c.ErrorMessage = false, nil
			i = errorValue(d, i, c)
		case "object":
			var s []byte
			var isStr bool
			s, isStr, i = stringOrSkip(d, i)
			objIsError = isStr && string(s) == "error"
		case "message":
			var s []byte
			var isStr bool
			s, isStr, i = stringOrSkip(d, i)
			topMessage = nil
			if isStr {
				topMessage = s
			}
		default:
			i = skipValue(d, i)
		}
		if i < 0 {
			return ErrMalformed
		}
	}
	if i = skipWS(d, i); i != len(d) {
		return ErrMalformed
	}
	return closeChunk(c, objIsError, topMessage)
}

// closeChunk is Parse's end: an "object":"error" chunk is an error, whose
// message is the top-level one.
func closeChunk(c *Chunk, objIsError bool, topMessage []byte) error {
	if objIsError && !c.Error {
		c.Error = true
		c.ErrorMessage = topMessage
	}
	return nil
}

// The keys the fast paths match in their compact form, as little-endian
// eight-byte words (TestKeyWords checks them).
const (
	keyID       = 0x223a22646922     // "id":"
	keyModel    = 0x3a226c65646f6d22 // "model":
	keyObject   = 0x227463656a626f22 // "object"
	keyCreated  = 0x6465746165726322 // "created
	keyIndex    = 0x3a227865646e6922 // "index":
	keyLogprobs = 0x626f7270676f6c22 // "logprob
	keyDelta    = 0x3a2261746c656422 // "delta":
	keyFinish   = 0x5f6873696e696622 // "finish_
	keyReason   = 0x3a226e6f73616572 // reason":
	keyContent  = 0x746e65746e6f6322 // "content
)

// bad is the index the scanning functions return for malformed input.
const bad = -1

// skipWS returns the index of the first non-whitespace byte at or after i.
// Streamed chunks are compact JSON, so the first comparison almost always ends it.
func skipWS(d []byte, i int) int {
	for i < len(d) && d[i] <= ' ' {
		if c := d[i]; c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return i
		}
		i++
	}
	return i
}

// member advances to the next member of an object whose '{' is consumed (i
// is just past it, or just past the previous member's value) and returns its
// key and the index of its value. more is false at the closing brace, with i
// just past it. i is negative when the input is malformed.
func member(d []byte, i int, first bool) (key []byte, _ int, more bool) {
	if i < len(d) && d[i] <= ' ' {
		i = skipWS(d, i)
	}
	if i >= len(d) {
		return nil, bad, false
	}
	c := d[i]
	if c == '}' {
		return nil, i + 1, false
	}
	if !first {
		if c != ',' {
			return nil, bad, false
		}
		if i++; i < len(d) && d[i] <= ' ' {
			i = skipWS(d, i)
		}
		if i >= len(d) {
			return nil, bad, false
		}
		c = d[i]
	}
	if c != '"' {
		return nil, bad, false
	}
	// Keys of up to fifteen bytes without escapes (all the format's keys)
	// end within two eight-byte looks, made here rather than in a call.
	j, end, escaped := i+1, bad, false
	if j+16 <= len(d) {
		if m := quoteOrBackslash(binary.LittleEndian.Uint64(d[j : j+8])); m != 0 {
			if k := j + bits.TrailingZeros64(m)>>3; d[k] == '"' {
				end = k
			}
		} else if m := quoteOrBackslash(binary.LittleEndian.Uint64(d[j+8 : j+16])); m != 0 {
			if k := j + 8 + bits.TrailingZeros64(m)>>3; d[k] == '"' {
				end = k
			}
		}
	}
	if end < 0 {
		if end, escaped = strEnd(d, j); end < 0 {
			return nil, bad, false
		}
	}
	key = d[j:end]
	if escaped {
		// No server escapes plain keys; decode (allocating) so such a key
		// still matches, as encoding/json would match it.
		if s, ok := Unescape(key); ok {
			key = []byte(s)
		}
	}
	i = end + 1
	if i+1 < len(d) && d[i] == ':' && d[i+1] > ' ' {
		return key, i + 1, true // the compact form: no whitespace to skip
	}
	if i = skipWS(d, i); i < len(d) && d[i] == ':' {
		i++
	} else {
		return nil, bad, false
	}
	if i = skipWS(d, i); i >= len(d) {
		return nil, bad, false // callers may read d[i] at once
	}
	return key, i, true
}

// element advances to the next element of an array whose '[' is consumed.
// more is false at the closing bracket, with i just past it.
func element(d []byte, i int, first bool) (_ int, more bool) {
	i = skipWS(d, i)
	if i >= len(d) {
		return bad, false
	}
	if d[i] == ']' {
		return i + 1, false
	}
	if !first {
		if d[i] != ',' {
			return bad, false
		}
		i = skipWS(d, i+1)
	}
	if i >= len(d) {
		return bad, false
	}
	return i, true
}

// strEnd returns the index of the quote that closes the string whose
// contents start at j, and whether the contents hold an escape; -1 when the
// string does not end. It looks at eight bytes at a time (SWAR): most of a
// chunk's bytes are inside strings, and a byte loop there would cost more
// than everything else together.
func strEnd(d []byte, j int) (int, bool) {
	escaped := false
	for {
		for j+8 <= len(d) {
			m := quoteOrBackslash(binary.LittleEndian.Uint64(d[j:]))
			if m != 0 {
				// The lowest flagged byte is exact (borrows only run upwards).
				j += bits.TrailingZeros64(m) >> 3
				break
			}
			j += 8
		}
		for j < len(d) && d[j] != '"' && d[j] != '\\' {
			j++
		}
		if j >= len(d) {
			return bad, false
		}
		if d[j] == '"' {
			return j, escaped
		}
		escaped = true
		j += 2 // the backslash and the byte it escapes
	}
}

// valueEnd is strEnd for a string value, whose escapes do not matter: it
// looks for the first quote only (fewer operations per eight bytes than
// strEnd), and that quote closes the string unless a backslash precedes it.
// Only then does it rescan with strEnd, which follows every escape.
func valueEnd(d []byte, j int) int {
	start := j
	for j >= 0 && j+8 <= len(d) {
		x := binary.LittleEndian.Uint64(d[j:j+8]) ^ (lsb * '"')
		if m := (x - lsb) &^ x & msb; m != 0 {
			j += bits.TrailingZeros64(m) >> 3
			goto found
		}
		j += 8
	}
	for j < len(d) && d[j] != '"' {
		j++
	}
	if j >= len(d) {
		return bad
	}
found:
	if j > start && d[j-1] == '\\' {
		end, _ := strEnd(d, start)
		return end
	}
	return j
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// allDigits reports whether the eight bytes of x are all ASCII digits: each
// has the high nibble 3, and adding 6 to it carries no low nibble past 9.
func allDigits(x uint64) bool {
	const hi = 0xf0f0f0f0f0f0f0f0
	return x&hi == lsb*'0' && (x+lsb*6)&hi == lsb*'0'
}

// quoteOrBackslash flags (high bit) the bytes of x that are '"' or '\\'.
func quoteOrBackslash(x uint64) uint64 {
	q := x ^ (lsb * '"')
	b := x ^ (lsb * '\\')
	return ((q-lsb)&^q | (b-lsb)&^b) & msb
}

// stringOrSkip returns the raw string at i, or skips a value of another type.
func stringOrSkip(d []byte, i int) (s []byte, isStr bool, _ int) {
	if i < len(d) && d[i] == '"' {
		end := valueEnd(d, i+1)
		if end < 0 {
			return nil, false, bad
		}
		return d[i+1 : end], true, end + 1
	}
	return nil, false, skipValue(d, i)
}

// nonEmptyString reports whether the value at i is a non-empty string, and consumes it.
func nonEmptyString(d []byte, i int) (bool, int) {
	s, isStr, i := stringOrSkip(d, i)
	return isStr && len(s) > 0, i
}

// numberByte marks the bytes a JSON number is made of.
var numberByte = [256]bool{
	'0': true, '1': true, '2': true, '3': true, '4': true, '5': true, '6': true,
	'7': true, '8': true, '9': true, '-': true, '+': true, '.': true, 'e': true, 'E': true,
}

// skipValue consumes one JSON value of any type. Objects and arrays are
// skipped by matching brackets outside strings, and numbers by their
// alphabet, without validating them: what Parse does not look at, it does
// not check.
func skipValue(d []byte, i int) int {
	if i >= len(d) {
		return bad
	}
	switch c := d[i]; {
	case c == '"':
		end := valueEnd(d, i+1)
		if end < 0 {
			return bad
		}
		return end + 1
	case c == '-' || (c >= '0' && c <= '9'):
		i++
		for i < len(d) && numberByte[d[i]] {
			i++
		}
		return i
	case c == 'n':
		return lit(d, i, "null")
	case c == '{' || c == '[':
		return skipContainer(d, i)
	case c == 't':
		return lit(d, i, "true")
	case c == 'f':
		return lit(d, i, "false")
	}
	return bad
}

// containerByte marks the bytes skipContainer must stop at.
var containerByte = [256]bool{'"': true, '{': true, '[': true, '}': true, ']': true}

func skipContainer(d []byte, i int) int {
	var stack [64]byte // expected closers; deeper nesting is treated as malformed
	depth := 0
	for ; i < len(d); i++ {
		c := d[i]
		if !containerByte[c] {
			continue
		}
		switch c {
		case '"':
			end := valueEnd(d, i+1)
			if end < 0 {
				return bad
			}
			i = end
		case '{', '[':
			if depth == len(stack) {
				return bad
			}
			stack[depth] = c + 2 // '{'+2 == '}', '['+2 == ']'
			depth++
		default: // '}', ']'
			if depth == 0 || stack[depth-1] != c {
				return bad
			}
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return bad
}

func lit(d []byte, i int, s string) int {
	if len(d)-i < len(s) || string(d[i:i+len(s)]) != s {
		return bad
	}
	return i + len(s)
}

// number consumes a JSON number at i and returns it as an int when it is one
// that fits (integral, no fraction or exponent). Unlike skipValue it checks
// the number's grammar: its value is used.
func number(d []byte, i int) (v int, isInt bool, _ int) {
	start := i
	neg := d[i] == '-'
	if neg {
		i++
	}
	// The integer part, converted as it is scanned (beyond 18 digits the
	// value wraps, and is dropped below).
	digits, n := i, 0
	for ; i < len(d); i++ {
		b := d[i] - '0'
		if b > 9 {
			break
		}
		n = n*10 + int(b)
	}
	if i == digits || (d[digits] == '0' && i-digits > 1) {
		return 0, false, bad
	}
	if i < len(d) && (d[i] == '.' || d[i]|0x20 == 'e') {
		return 0, false, fraction(d, i)
	}
	if i-start > 18 {
		return 0, false, i
	}
	if neg {
		n = -n
	}
	return n, true, i
}

// fraction consumes a number's fraction and exponent, either optional, at
// i (just past its integer part), checking their grammar.
func fraction(d []byte, i int) int {
	if i < len(d) && d[i] == '.' {
		i++
		f := i
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		if i == f {
			return bad
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		f := i
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		if i == f {
			return bad
		}
	}
	return i
}

// intOrSkip returns the integer at i, or skips a value of another type.
func intOrSkip(d []byte, i int) (int, int) {
	if i < len(d) && (d[i] == '-' || (d[i] >= '0' && d[i] <= '9')) {
		v, _, i := number(d, i)
		return v, i
	}
	return 0, skipValue(d, i)
}

// count reads a usage count at i: ok is false for a value that is there
// but no integer (a fraction, a string, an integer beyond 18 digits); null
// is no count, and ok.
func count(d []byte, i int) (v int, ok bool, _ int) {
	if i < len(d) && (d[i] == '-' || (d[i] >= '0' && d[i] <= '9')) {
		return number(d, i)
	}
	return 0, i < len(d) && d[i] == 'n', skipValue(d, i)
}

func choices(d []byte, i int, c *Chunk) int {
	if d[i] != '[' {
		return skipValue(d, i) // null or an unexpected type: no choices
	}
	i++
	for first := true; ; first = false {
		var more bool
		if i, more = element(d, i, first); i < 0 || !more {
			return i
		}
		if i = choice(d, i, c); i < 0 {
			return bad
		}
	}
}

// choice scans one element of choices (see Parse for why it is one long
// function).
func choice(d []byte, i int, c *Chunk) int {
	if d[i] != '{' {
		return skipValue(d, i)
	}
	i++
	var textContent, finish bool
	var dm uint8 // the last delta's members
	var reason []byte
	for first := true; ; first = false {
		// index and logprobs, whose values are skipped, in their compact
		// form: matched eight bytes at a time, without member's generic work.
		if j := i; j+17 <= len(d) && (first || d[j] == ',') {
			if !first {
				j++
			}
			w := binary.LittleEndian.Uint64(d[j : j+8])
			if w == keyIndex && d[j+8] > ' ' {
				if i = skipValue(d, j+8); i < 0 {
					return bad
				}
				continue
			}
			if w == keyLogprobs && d[j+8] == 's' && d[j+9] == '"' && d[j+10] == ':' && d[j+11] > ' ' {
				if i = skipValue(d, j+11); i < 0 {
					return bad
				}
				continue
			}
			if w == keyDelta && d[j+8] > ' ' {
				if dm, i = delta(d, j+8); i < 0 {
					return bad
				}
				continue
			}
			// "finish_reason":null, on every chunk but the last.
			if w == keyFinish && j+20 <= len(d) &&
				binary.LittleEndian.Uint64(d[j+8:j+16]) == keyReason &&
				string(d[j+16:j+20]) == "null" {
				finish, reason, i = false, nil, j+20
				continue
			}
		} else if i < len(d) && d[i] == '}' {
			i++ // the compact close: no member call for it
			break
		}
		var key []byte
		var more bool
		if key, i, more = member(d, i, first); i < 0 {
			return bad
		}
		if !more {
			break
		}
		switch string(key) {
		case "delta":
			dm, i = delta(d, i)
		case "index", "logprobs":
			i = skipValue(d, i)
		case "finish_reason":
			finish, reason = false, nil
			if d[i] == 'n' {
				i = lit(d, i, "null")
				break
			}
			var s []byte
			var isStr bool
			s, isStr, i = stringOrSkip(d, i)
			finish = !isStr || len(s) > 0
			if isStr {
				reason = s
			}
		case "text":
			textContent, i = nonEmptyString(d, i)
		default:
			i = skipValue(d, i)
		}
		if i < 0 {
			return bad
		}
	}
	// text (completions), delta.content (chat) and a tool call's arguments
	// all mean answer.
	c.Content = c.Content || dm&(mContent|mToolArgs) != 0 || textContent
	c.Reasoning = c.Reasoning || dm&(mReasoning|mReasoningContent) != 0
	c.ToolCall = c.ToolCall || dm&mToolStart != 0
	if finish {
		c.Finish = true
		if reason != nil {
			c.FinishReason = reason
		}
	}
	return i
}

// The members of a delta that choice needs, as bits of one byte: one
// value to keep across the scanner's calls rather than five. Each is its
// member's last value (a repeated key's last value wins, as with
// encoding/json).
const (
	mContent          = 1 << iota // a non-empty content
	mReasoning                    // a non-empty reasoning
	mReasoningContent             // a non-empty reasoning_content
	mToolArgs                     // tool_calls: some call's arguments are non-empty
	mToolStart                    // tool_calls: some call opens (names its function)
)

// setBit returns m with bit set when on, and cleared when not.
func setBit(m, bit uint8, on bool) uint8 {
	if on {
		return m | bit
	}
	return m &^ bit
}

// delta scans a choice's delta into its member bits.
func delta(d []byte, i int) (m uint8, _ int) {
	if d[i] != '{' {
		return 0, skipValue(d, i)
	}
	i++
	for first := true; ; first = false {
		// "content":"...", the common member, in its compact form.
		if j := i; j+17 <= len(d) && (first || d[j] == ',') {
			if !first {
				j++
			}
			if binary.LittleEndian.Uint64(d[j:j+8]) == keyContent &&
				d[j+8] == '"' && d[j+9] == ':' && d[j+10] == '"' {
				end := valueEnd(d, j+11)
				if end < 0 {
					return 0, bad
				}
				m, i = setBit(m, mContent, end > j+11), end+1
				continue
			}
		} else if i < len(d) && d[i] == '}' {
			i++ // the compact close: no member call for it
			break
		}
		var key []byte
		var more bool
		if key, i, more = member(d, i, first); i < 0 {
			return 0, bad
		}
		if !more {
			break
		}
		var ne bool
		switch string(key) {
		case "content":
			ne, i = nonEmptyString(d, i)
			m = setBit(m, mContent, ne)
		case "reasoning":
			ne, i = nonEmptyString(d, i)
			m = setBit(m, mReasoning, ne)
		case "reasoning_content":
			ne, i = nonEmptyString(d, i)
			m = setBit(m, mReasoningContent, ne)
		case "tool_calls":
			var tm uint8
			tm, i = toolCalls(d, i)
			m = m&^(mToolArgs|mToolStart) | tm
		default:
			i = skipValue(d, i)
		}
		if i < 0 {
			return 0, bad
		}
	}
	return m, i
}

// toolCalls reads a delta's tool_calls into mToolArgs (some call's
// function.arguments is non-empty: answer tokens) and mToolStart (an
// element opens a call: it names the function, as the first delta of each
// call does; ToolCall). An id alone opens none: llm-d-inference-sim repeats
// the call's id on every argument delta, with "name": null. Only tool-call
// chunks come here.
func toolCalls(d []byte, i int) (m uint8, _ int) {
	if d[i] != '[' {
		return 0, skipValue(d, i)
	}
	i++
	for first := true; ; first = false {
		var more bool
		if i, more = element(d, i, first); i < 0 || !more {
			return m, i
		}
		// Within an element a repeated key's last value wins, as with
		// encoding/json; across elements any call counts.
		var name, arg bool
		i, _ = object(d, i, func(key []byte, i int) int {
			switch string(key) {
			case "function":
				name, arg = false, false
				i, _ = object(d, i, func(key []byte, i int) int {
					switch string(key) {
					case "name":
						name, i = nonEmptyString(d, i)
					case "arguments":
						arg, i = nonEmptyString(d, i)
					default:
						i = skipValue(d, i)
					}
					return i
				})
			default:
				i = skipValue(d, i)
			}
			return i
		})
		if i < 0 {
			return 0, bad
		}
		if arg {
			m |= mToolArgs
		}
		if name {
			m |= mToolStart
		}
	}
}

// object walks the object at i (its '{' not yet consumed), handing each
// member's key and value index to field, which returns the index after the
// value. ok is false when the value is not an object (it is skipped). Only
// the rare chunks with usage or timings come here, and field does not
// escape, so the closures cost no allocation.
func object(d []byte, i int, field func(key []byte, i int) int) (_ int, ok bool) {
	if d[i] != '{' {
		return skipValue(d, i), false
	}
	i++
	for first := true; ; first = false {
		if i < len(d) && d[i] == '}' {
			return i + 1, true // the compact close: no member call for it
		}
		var key []byte
		var more bool
		if key, i, more = member(d, i, first); i < 0 || !more {
			return i, true
		}
		if i = field(key, i); i < 0 {
			return bad, true
		}
	}
}

func usage(d []byte, i int, c *Chunk) int {
	c.PromptTokens, c.CompletionTokens, c.UsageInvalid = 0, 0, false
	i, c.Usage = object(d, i, func(key []byte, i int) int {
		var ok bool
		switch string(key) {
		case "prompt_tokens":
			c.PromptTokens, ok, i = count(d, i)
			c.UsageInvalid = c.UsageInvalid || !ok
		case "completion_tokens":
			c.CompletionTokens, ok, i = count(d, i)
			c.UsageInvalid = c.UsageInvalid || !ok
		default:
			i = skipValue(d, i)
		}
		return i
	})
	return i
}

// timings reads llama.cpp's timings object. Only the chunks that carry one
// (the last of a stream) pay for it; the rest never reach this function.
func timings(d []byte, i int, c *Chunk) int {
	c.Timings = Timings{}
	t := &c.Timings
	i, c.HasTimings = object(d, i, func(key []byte, i int) int {
		switch string(key) {
		case "prompt_n":
			t.PromptN, i = intOrSkip(d, i)
		case "prompt_ms":
			t.PromptMs, i = floatOrSkip(d, i)
		case "predicted_n":
			t.PredictedN, i = intOrSkip(d, i)
		case "predicted_ms":
			t.PredictedMs, i = floatOrSkip(d, i)
		case "cache_n":
			t.CacheN, i = intOrSkip(d, i)
		case "draft_n":
			t.DraftN, i = intOrSkip(d, i)
		case "draft_n_accepted":
			t.DraftNAccepted, i = intOrSkip(d, i)
		default:
			i = skipValue(d, i)
		}
		return i
	})
	return i
}

// floatOrSkip returns the number at i as a float64 (0 for an unparseable or
// out-of-range one), or skips a value of another type. The number's grammar
// is checked by number; strconv parses the checked bytes, through a string
// conversion that does not escape and so does not allocate.
func floatOrSkip(d []byte, i int) (float64, int) {
	if i < len(d) && (d[i] == '-' || (d[i] >= '0' && d[i] <= '9')) {
		start := i
		if _, _, i = number(d, i); i < 0 {
			return 0, bad
		}
		v, err := strconv.ParseFloat(string(d[start:i]), 64)
		if err != nil {
			return 0, i
		}
		return v, i
	}
	return 0, skipValue(d, i)
}

func errorValue(d []byte, i int, c *Chunk) int {
	switch d[i] {
	case 'n', 'f':
		return skipValue(d, i) // "error": null or false is not an error
	case '"':
		s, _, i := stringOrSkip(d, i)
		c.Error, c.ErrorMessage = true, s
		return i
	case '{':
		c.Error = true
		i++
		for first := true; ; first = false {
			var key []byte
			var more bool
			if key, i, more = member(d, i, first); i < 0 || !more {
				return i
			}
			if string(key) == "message" {
				var s []byte
				var isStr bool
				if s, isStr, i = stringOrSkip(d, i); isStr {
					c.ErrorMessage = s
				}
			} else {
				i = skipValue(d, i)
			}
			if i < 0 {
				return bad
			}
		}
	}
	c.Error = true
	return skipValue(d, i)
}

// Unescape decodes the raw contents of a JSON string (as Parse returns them)
// the way encoding/json does. ok is false for an invalid escape.
func Unescape(raw []byte) (s string, ok bool) {
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw), true
	}
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); {
		b := raw[i]
		if b != '\\' {
			if b < utf8.RuneSelf {
				out = append(out, b)
				i++
				continue
			}
			r, size := utf8.DecodeRune(raw[i:])
			out = utf8.AppendRune(out, r) // invalid bytes become U+FFFD, as encoding/json does
			i += size
			continue
		}
		if i+1 >= len(raw) {
			return "", false
		}
		switch raw[i+1] {
		case '"', '\\', '/':
			out = append(out, raw[i+1])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(raw, i+2)
			if !ok {
				return "", false
			}
			i += 6
			if utf16.IsSurrogate(r) {
				if r2, ok2 := hex4(raw, i+2); ok2 && i+1 < len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						out = utf8.AppendRune(out, dec)
						i += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
			continue
		default:
			return "", false
		}
		i += 2
	}
	return string(out), true
}

func hex4(raw []byte, at int) (rune, bool) {
	if at+4 > len(raw) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(raw[at:at+4]), 16, 32)
	return rune(v), err == nil
}
