package protocol

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Request bodies are written by appendJSON rather than json.Marshal: at a
// level's start every worker encodes a body at once, and encoding/json's
// map encoder (reflection, a key copy per entry, sorted reflect values, deep
// frames that grow each fresh goroutine's stack) was a runner-only cost in
// the CPU profile. The output is byte-identical to json.Marshal's, and a
// value appendJSON does not know makes marshalBody fall back to json.Marshal
// of the whole body, so no body ever changes.

// marshalBody is a request body's JSON, as json.Marshal writes it.
func marshalBody(body map[string]any) ([]byte, error) {
	if b, ok := appendJSONMap(make([]byte, 0, bodySize(body)), body, 0); ok {
		return b, nil
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encoding request body (extra_body?): %w", err)
	}
	return b, nil
}

// maxBodyDepth is the nesting appendJSON follows before it hands the body to
// json.Marshal, whose cycle check (a map holding itself) then reports it.
const maxBodyDepth = 200

// bodySize is a first guess at a body's length, so its buffer is allocated
// once: the prompt's strings dominate, and escaping rarely adds much.
func bodySize(body map[string]any) int {
	n := 64
	for k, v := range body {
		n += len(k) + 16
		switch v := v.(type) {
		case string:
			n += len(v)
		case []Message:
			for _, m := range v {
				n += len(m.Role) + len(m.Content) + 32
			}
		case []string:
			for _, s := range v {
				n += len(s) + 4
			}
		}
	}
	return n
}

// appendJSON appends v's JSON as json.Marshal writes it, for the types a
// body holds (the protocols' own and what YAML decodes extra_body into);
// false for any other value, a NaN or infinity, or nesting past
// maxBodyDepth, and then dst is not to be used.
func appendJSON(dst []byte, v any, depth int) ([]byte, bool) {
	if depth > maxBodyDepth {
		return dst, false
	}
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), true
	case string:
		return appendJSONString(dst, v), true
	case bool:
		return strconv.AppendBool(dst, v), true
	case int:
		return strconv.AppendInt(dst, int64(v), 10), true
	case int64:
		return strconv.AppendInt(dst, v, 10), true
	case uint64: // YAML's integers past int64
		return strconv.AppendUint(dst, v, 10), true
	case float64:
		return appendJSONFloat(dst, v)
	case map[string]any:
		return appendJSONMap(dst, v, depth)
	case Message:
		return appendJSONMessage(dst, v), true
	case []any:
		return appendJSONList(dst, v, func(dst []byte, e any) ([]byte, bool) { return appendJSON(dst, e, depth+1) })
	case []map[string]any:
		return appendJSONList(dst, v, func(dst []byte, m map[string]any) ([]byte, bool) { return appendJSONMap(dst, m, depth+1) })
	case []string:
		return appendJSONList(dst, v, func(dst []byte, s string) ([]byte, bool) { return appendJSONString(dst, s), true })
	case []Message:
		return appendJSONList(dst, v, func(dst []byte, m Message) ([]byte, bool) { return appendJSONMessage(dst, m), true })
	}
	return dst, false
}

// appendJSONList writes list as an array (null when nil, as encoding/json
// writes a nil slice), each element by each.
func appendJSONList[T any](dst []byte, list []T, each func([]byte, T) ([]byte, bool)) ([]byte, bool) {
	if list == nil {
		return append(dst, "null"...), true
	}
	dst = append(dst, '[')
	for i, e := range list {
		if i > 0 {
			dst = append(dst, ',')
		}
		var ok bool
		if dst, ok = each(dst, e); !ok {
			return dst, false
		}
	}
	return append(dst, ']'), true
}

// appendJSONMap writes m with its keys sorted, as encoding/json does.
func appendJSONMap(dst []byte, m map[string]any, depth int) ([]byte, bool) {
	if m == nil {
		return append(dst, "null"...), true
	}
	// A body has about ten fields: the keys' slice stays on the stack.
	var arr [16]string
	keys := arr[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, k)
		dst = append(dst, ':')
		var ok bool
		if dst, ok = appendJSON(dst, m[k], depth+1); !ok {
			return dst, false
		}
	}
	return append(dst, '}'), true
}

// appendJSONMessage writes a Message as its struct tags say.
func appendJSONMessage(dst []byte, m Message) []byte {
	dst = append(dst, `{"role":`...)
	dst = appendJSONString(dst, m.Role)
	dst = append(dst, `,"content":`...)
	dst = appendJSONString(dst, m.Content)
	return append(dst, '}')
}

// appendJSONFloat writes f as encoding/json does (ES6 number formatting:
// 'f' between 1e-6 and 1e21, else 'e' without a padded exponent); false for
// NaN and infinities, which json.Marshal refuses with its own error.
func appendJSONFloat(dst []byte, f float64) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return dst, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-07 -> e-7
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, true
}

// jsonPlain marks the ASCII bytes a JSON string carries as they are:
// printable, and not ", \ or the HTML-sensitive <, > and & (which
// encoding/json escapes by default).
var jsonPlain = func() (t [utf8.RuneSelf]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = b != '"' && b != '\\' && b != '<' && b != '>' && b != '&'
	}
	return t
}()

const jsonHex = "0123456789abcdef"

// appendJSONString writes s quoted and escaped as json.Marshal does:
// short escapes for \b \f \n \r \t, \u00XX for other control bytes and
// for <, > and &, U+FFFD for each invalid UTF-8 byte, and U+2028 and U+2029
// escaped. A prompt is mostly plain ASCII, which it skips 8 bytes at a time.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		for i+8 <= len(s) && !special8(load8(s[i:])) {
			i += 8
		}
		if i == len(s) {
			break
		}
		b := s[i]
		if b < utf8.RuneSelf {
			if jsonPlain[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', jsonHex[b>>4], jsonHex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', jsonHex[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// load8 is s's first 8 bytes as a little-endian word (one load once
// compiled).
func load8(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// special8 reports whether any byte of w is not jsonPlain: a control byte,
// a byte of a multibyte rune (>= 0x80), or one of " \ < > &. Each test sets
// a byte's high bit; a borrow can set it only in a byte after one that
// really matches, so the answer for the word is exact. " and & differ only in
// bit 2, < and > only in bit 1, so one test covers each pair.
func special8(w uint64) bool {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	ctlOrHigh := (w - lo*0x20) | w
	quoteAmp := (w | lo*4) ^ (lo * '&')
	angle := (w | lo*2) ^ (lo * '>')
	backslash := w ^ (lo * '\\')
	ctlOrHigh |= (quoteAmp - lo) &^ quoteAmp // high bit where quoteAmp's byte is 0
	ctlOrHigh |= (angle - lo) &^ angle
	ctlOrHigh |= (backslash - lo) &^ backslash
	return ctlOrHigh&hi != 0
}
