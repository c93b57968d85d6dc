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
	// FinishReason is the raw (still escaped) finish_reason string, when a string.
	FinishReason []byte
	// Usage: the chunk carries a usage object.
	Usage            bool
	PromptTokens     int
	CompletionTokens int
	// Error: the chunk is an error object ({"error": ...} or {"object": "error"}).
	Error bool
	// ErrorMessage is the raw (still escaped) error message, when one is given.
	ErrorMessage []byte
}

// Token reports whether the chunk carries a token of any kind (what TTFT counts).
func (c *Chunk) Token() bool { return c.Content || c.Reasoning }

// Parse scans one chunk's JSON into c. It walks data once, allocates nothing
// (except when a key is written with escapes, which no server does), and looks
// only where the OpenAI streaming format puts each fact, so the same key names
// inside strings or in unrelated objects (logprobs, tool_calls) are ignored.
// Keys may come in any order; when a key repeats, the last one wins, as with
// encoding/json. Parse returns ErrMalformed for anything but a JSON object; it
// is lenient inside strings (escapes and control bytes are not validated).
func Parse(data []byte, c *Chunk) error {
	*c = Chunk{}
	p := parser{d: data}
	p.ws()
	if p.i >= len(p.d) || p.d[p.i] != '{' {
		return ErrMalformed
	}
	p.i++
	var objIsError bool
	var topMessage []byte
	for first := true; ; first = false {
		key, more, err := p.member(first)
		if err != nil {
			return err
		}
		if !more {
			break
		}
		switch string(key) {
		case "choices":
			c.Content, c.Reasoning, c.Finish, c.FinishReason = false, false, false, nil
			err = p.choices(c)
		case "usage":
			err = p.usage(c)
		case "error":
			c.Error, c.ErrorMessage = false, nil
			err = p.errorValue(c)
		case "object":
			var s []byte
			var isStr bool
			s, isStr, err = p.stringOrSkip()
			objIsError = isStr && string(s) == "error"
		case "message":
			var s []byte
			var isStr bool
			s, isStr, err = p.stringOrSkip()
			topMessage = nil
			if isStr {
				topMessage = s
			}
		default:
			err = p.skip()
		}
		if err != nil {
			return err
		}
	}
	p.ws()
	if p.i != len(p.d) {
		return ErrMalformed
	}
	if objIsError && !c.Error {
		c.Error = true
		c.ErrorMessage = topMessage
	}
	return nil
}

type parser struct {
	d []byte
	i int
}

func (p *parser) ws() {
	for p.i < len(p.d) {
		switch p.d[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// member advances to the next member of an object whose '{' is consumed and
// returns its key, with p at the value. more is false at the closing brace.
func (p *parser) member(first bool) (key []byte, more bool, err error) {
	p.ws()
	if p.i >= len(p.d) {
		return nil, false, ErrMalformed
	}
	switch {
	case p.d[p.i] == '}':
		p.i++
		return nil, false, nil
	case !first:
		if p.d[p.i] != ',' {
			return nil, false, ErrMalformed
		}
		p.i++
		p.ws()
	}
	if p.i >= len(p.d) || p.d[p.i] != '"' {
		return nil, false, ErrMalformed
	}
	var escaped bool
	if key, escaped, err = p.str(); err != nil {
		return nil, false, err
	}
	if escaped {
		// No server escapes plain keys; decode (allocating) so such a key
		// still matches, as encoding/json would match it.
		if s, ok := Unescape(key); ok {
			key = []byte(s)
		}
	}
	p.ws()
	if p.i >= len(p.d) || p.d[p.i] != ':' {
		return nil, false, ErrMalformed
	}
	p.i++
	p.ws()
	if p.i >= len(p.d) {
		return nil, false, ErrMalformed // callers may read p.d[p.i] at once
	}
	return key, true, nil
}

// element advances to the next element of an array whose '[' is consumed.
// more is false at the closing bracket.
func (p *parser) element(first bool) (more bool, err error) {
	p.ws()
	if p.i >= len(p.d) {
		return false, ErrMalformed
	}
	switch {
	case p.d[p.i] == ']':
		p.i++
		return false, nil
	case !first:
		if p.d[p.i] != ',' {
			return false, ErrMalformed
		}
		p.i++
		p.ws()
	}
	return true, nil
}

// str parses a string at p.i (which is '"') and returns its raw contents and
// whether they hold an escape. It looks at eight bytes at a time (SWAR): most
// of a chunk's bytes are inside strings, and a byte loop there would cost more
// than everything else together.
func (p *parser) str() (raw []byte, escaped bool, err error) {
	d := p.d
	start := p.i + 1
	j := start
	for {
		for j+8 <= len(d) {
			m := quoteOrBackslash(binary.LittleEndian.Uint64(d[j:]))
			if m == 0 {
				j += 8
				continue
			}
			// The lowest flagged byte is exact (borrows only run upwards).
			j += bits.TrailingZeros64(m) >> 3
			break
		}
		for j < len(d) && d[j] != '"' && d[j] != '\\' {
			j++
		}
		if j >= len(d) {
			return nil, false, ErrMalformed
		}
		if d[j] == '"' {
			p.i = j + 1
			return d[start:j], escaped, nil
		}
		escaped = true
		j += 2 // the backslash and the byte it escapes
	}
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// quoteOrBackslash flags (high bit) the bytes of x that are '"' or '\\'.
func quoteOrBackslash(x uint64) uint64 {
	q := x ^ (lsb * '"')
	b := x ^ (lsb * '\\')
	return ((q-lsb)&^q | (b-lsb)&^b) & msb
}

// stringOrSkip returns the raw string at p.i, or skips a value of another type.
func (p *parser) stringOrSkip() (s []byte, isStr bool, err error) {
	if p.i < len(p.d) && p.d[p.i] == '"' {
		s, _, err = p.str()
		return s, err == nil, err
	}
	return nil, false, p.skip()
}

// nonEmptyString reports whether the value at p.i is a non-empty string, and consumes it.
func (p *parser) nonEmptyString() (bool, error) {
	s, isStr, err := p.stringOrSkip()
	return isStr && len(s) > 0, err
}

// skip consumes one JSON value of any type. Objects and arrays are skipped by
// matching brackets outside strings, without validating what is inside them:
// what Parse does not look at, it does not check.
func (p *parser) skip() error {
	if p.i >= len(p.d) {
		return ErrMalformed
	}
	switch c := p.d[p.i]; {
	case c == '"':
		_, _, err := p.str()
		return err
	case c == '{' || c == '[':
		return p.skipContainer()
	case c == 't':
		return p.lit("true")
	case c == 'f':
		return p.lit("false")
	case c == 'n':
		return p.lit("null")
	case c == '-' || (c >= '0' && c <= '9'):
		_, _, err := p.number()
		return err
	}
	return ErrMalformed
}

func (p *parser) skipContainer() error {
	var stack [64]byte // expected closers; deeper nesting is treated as malformed
	depth := 0
	for p.i < len(p.d) {
		switch c := p.d[p.i]; c {
		case '"':
			if _, _, err := p.str(); err != nil {
				return err
			}
			continue
		case '{', '[':
			if depth == len(stack) {
				return ErrMalformed
			}
			stack[depth] = c + 2 // '{'+2 == '}', '['+2 == ']'
			depth++
		case '}', ']':
			if depth == 0 || stack[depth-1] != c {
				return ErrMalformed
			}
			depth--
			if depth == 0 {
				p.i++
				return nil
			}
		}
		p.i++
	}
	return ErrMalformed
}

func (p *parser) lit(s string) error {
	if len(p.d)-p.i < len(s) || string(p.d[p.i:p.i+len(s)]) != s {
		return ErrMalformed
	}
	p.i += len(s)
	return nil
}

func (p *parser) isNull() bool {
	return len(p.d)-p.i >= 4 && string(p.d[p.i:p.i+4]) == "null"
}

// number consumes a JSON number and returns it as an int when it is one that
// fits (integral, no fraction or exponent).
func (p *parser) number() (v int, isInt bool, err error) {
	start := p.i
	if p.d[p.i] == '-' {
		p.i++
	}
	digits := p.i
	for p.i < len(p.d) && p.d[p.i] >= '0' && p.d[p.i] <= '9' {
		p.i++
	}
	if p.i == digits || (p.d[digits] == '0' && p.i-digits > 1) {
		return 0, false, ErrMalformed
	}
	isInt = true
	if p.i < len(p.d) && p.d[p.i] == '.' {
		isInt = false
		p.i++
		f := p.i
		for p.i < len(p.d) && p.d[p.i] >= '0' && p.d[p.i] <= '9' {
			p.i++
		}
		if p.i == f {
			return 0, false, ErrMalformed
		}
	}
	if p.i < len(p.d) && (p.d[p.i] == 'e' || p.d[p.i] == 'E') {
		isInt = false
		p.i++
		if p.i < len(p.d) && (p.d[p.i] == '+' || p.d[p.i] == '-') {
			p.i++
		}
		f := p.i
		for p.i < len(p.d) && p.d[p.i] >= '0' && p.d[p.i] <= '9' {
			p.i++
		}
		if p.i == f {
			return 0, false, ErrMalformed
		}
	}
	if !isInt || p.i-start > 18 {
		return 0, false, nil
	}
	n := 0
	for _, b := range p.d[digits:p.i] {
		n = n*10 + int(b-'0')
	}
	if p.d[start] == '-' {
		n = -n
	}
	return n, true, nil
}

// intOrSkip returns the integer at p.i, or skips a value of another type.
func (p *parser) intOrSkip() (int, error) {
	if p.i < len(p.d) && (p.d[p.i] == '-' || (p.d[p.i] >= '0' && p.d[p.i] <= '9')) {
		v, _, err := p.number()
		return v, err
	}
	return 0, p.skip()
}

func (p *parser) choices(c *Chunk) error {
	if p.i >= len(p.d) || p.d[p.i] != '[' {
		return p.skip() // null or an unexpected type: no choices
	}
	p.i++
	for first := true; ; first = false {
		more, err := p.element(first)
		if err != nil {
			return err
		}
		if !more {
			return nil
		}
		if err := p.choice(c); err != nil {
			return err
		}
	}
}

func (p *parser) choice(c *Chunk) error {
	if p.d[p.i] != '{' {
		return p.skip()
	}
	p.i++
	var deltaContent, textContent, reasoning, finish bool
	var reason []byte
	for first := true; ; first = false {
		key, more, err := p.member(first)
		if err != nil {
			return err
		}
		if !more {
			break
		}
		switch string(key) {
		case "delta":
			deltaContent, reasoning, err = p.delta()
		case "text":
			textContent, err = p.nonEmptyString()
		case "finish_reason":
			finish, reason = false, nil
			if p.isNull() {
				p.i += 4
				break
			}
			var s []byte
			var isStr bool
			s, isStr, err = p.stringOrSkip()
			finish = !isStr || len(s) > 0
			if isStr {
				reason = s
			}
		default:
			err = p.skip()
		}
		if err != nil {
			return err
		}
	}
	// text (completions) and delta.content (chat) both mean answer.
	c.Content = c.Content || deltaContent || textContent
	c.Reasoning = c.Reasoning || reasoning
	if finish {
		c.Finish = true
		if reason != nil {
			c.FinishReason = reason
		}
	}
	return nil
}

func (p *parser) delta() (content, reasoning bool, err error) {
	if p.d[p.i] != '{' {
		return false, false, p.skip()
	}
	p.i++
	var reas, reasC bool
	for first := true; ; first = false {
		key, more, err := p.member(first)
		if err != nil {
			return false, false, err
		}
		if !more {
			break
		}
		switch string(key) {
		case "content":
			content, err = p.nonEmptyString()
		case "reasoning":
			reas, err = p.nonEmptyString()
		case "reasoning_content":
			reasC, err = p.nonEmptyString()
		default:
			err = p.skip()
		}
		if err != nil {
			return false, false, err
		}
	}
	return content, reas || reasC, nil
}

func (p *parser) usage(c *Chunk) error {
	c.Usage, c.PromptTokens, c.CompletionTokens = false, 0, 0
	if p.d[p.i] != '{' {
		return p.skip()
	}
	p.i++
	c.Usage = true
	for first := true; ; first = false {
		key, more, err := p.member(first)
		if err != nil {
			return err
		}
		if !more {
			return nil
		}
		switch string(key) {
		case "prompt_tokens":
			c.PromptTokens, err = p.intOrSkip()
		case "completion_tokens":
			c.CompletionTokens, err = p.intOrSkip()
		default:
			err = p.skip()
		}
		if err != nil {
			return err
		}
	}
}

func (p *parser) errorValue(c *Chunk) error {
	switch p.d[p.i] {
	case 'n', 'f':
		return p.skip() // "error": null or false is not an error
	case '"':
		s, _, err := p.str()
		c.Error, c.ErrorMessage = true, s
		return err
	case '{':
		c.Error = true
		p.i++
		for first := true; ; first = false {
			key, more, err := p.member(first)
			if err != nil {
				return err
			}
			if !more {
				return nil
			}
			if keyIs(key, "message") {
				var s []byte
				var isStr bool
				if s, isStr, err = p.stringOrSkip(); isStr {
					c.ErrorMessage = s
				}
			} else {
				err = p.skip()
			}
			if err != nil {
				return err
			}
		}
	}
	c.Error = true
	return p.skip()
}

// keyIs compares a key (already unescaped by member) with name.
func keyIs(key []byte, name string) bool { return string(key) == name }

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
