package sse

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"reflect"
	"testing"
)

// The compact-form key words Parse matches eight bytes at a time.
func TestKeyWords(t *testing.T) {
	for _, tc := range []struct {
		word uint64
		s    string
	}{
		{keyID, "\"id\":\"\x00\x00"},
		{keyModel, `"model":`},
		{keyObject, `"object"`},
		{keyCreated, `"created`},
		{keyIndex, `"index":`},
		{keyLogprobs, `"logprob`},
		{keyDelta, `"delta":`},
		{keyFinish, `"finish_`},
		{keyReason, `reason":`},
		{keyContent, `"content`},
	} {
		if got := binary.LittleEndian.Uint64([]byte(tc.s)); got != tc.word {
			t.Errorf("%q: word %#x, want %#x", tc.s, tc.word, got)
		}
	}
}

func TestAllDigits(t *testing.T) {
	for pos := range 8 {
		for b := range 256 {
			w := []byte("01234567")
			w[pos] = byte(b)
			want := b >= '0' && b <= '9'
			if got := allDigits(binary.LittleEndian.Uint64(w)); got != want {
				t.Errorf("allDigits(%q) = %v", w, got)
			}
		}
	}
}

// The fast paths (compact header, choice and delta members) must agree with
// the generic scanner, which an indented copy of the same chunk goes through,
// and with encoding/json.
func TestParseFastPaths(t *testing.T) {
	chunks := []string{
		vllmChunk,
		`{"id":"x","object":"error","message":"boom","created":1,"model":"m"}`,
		`{"id":"a\"b","object":"chat.completion.chunk","created":1732870000.5e3,"model":"m\\","choices":[{"index":0,"delta":{"content":""},"logprobs":null,"finish_reason":"stop"}]}`,
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":17328700001234567890,"model":"m","choices":[{"index":0,"delta":{"content":"a","content":""},"logprobs":{"content":[{"token":"x"}]},"finish_reason":null,"finish_reason":"length"}],"usage":{"prompt_tokens":12,"completion_tokens":34}}`,
		`{"choices":[{"delta":{"reasoning_content":"hmm","content":"\u0041"},"index":3,"logprobs":null,"finish_reason":null}],"id":"late","object":"chat.completion.chunk","created":12345678,"model":"m"}`,
		`{"id":"cmpl-1","object":"text_completion","created":1732870000,"model":"m","choices":[{"index":0,"text":" hi","logprobs":null,"finish_reason":null}]}`,
		`{"id":"x","id":"y","model":"m","model":"n","object":"error","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"z"},"finish_reason":null}],"message":"m"}`,
		`{"idx":"x","modelz":1,"objects":"error","createdAt":"t","choices":[{"indexes":1,"deltas":{},"logprobsX":null,"finish_reasons":"stop","delta":{"contents":"no","reasoning":"yes"}}]}`,
		`{"id":"x","created":12345678x}`,
		`{"id":"x","created":-12345678}`,
		`{"id":"x","created":123456789012,"choices":[{"finish_reason":nulx}]}`,
		`{"id":"x","choices":[{"finish_reason":null,"index":0}],"model":"abcdefghijklmnopqrstuvwxyz0123456789"}`,
	}
	for _, s := range chunks {
		data := []byte(s)
		checkAgainstOracle(t, data)
		var fast, slow Chunk
		errFast := Parse(data, &fast)
		var buf bytes.Buffer
		if json.Indent(&buf, data, " ", "\t") != nil {
			continue // malformed: only the oracle's no-panic check applies
		}
		errSlow := Parse(buf.Bytes(), &slow)
		if (errFast != nil) != (errSlow != nil) {
			t.Errorf("%s: compact error %v, indented error %v", s, errFast, errSlow)
			continue
		}
		// The raw slices point into different buffers; compare their contents.
		fr, sr := fast.FinishReason, slow.FinishReason
		fm, sm := fast.ErrorMessage, slow.ErrorMessage
		fast.FinishReason, slow.FinishReason, fast.ErrorMessage, slow.ErrorMessage = nil, nil, nil, nil
		if !reflect.DeepEqual(fast, slow) || !bytes.Equal(fr, sr) || !bytes.Equal(fm, sm) || (fr == nil) != (sr == nil) || (fm == nil) != (sm == nil) {
			t.Errorf("%s:\ncompact  %+v %q %q\nindented %+v %q %q", s, fast, fr, fm, slow, sr, sm)
		}
	}
}

// number converts the integer part as it scans it; its grammar check, its
// end and which numbers are counts must be as a separate pass has them.
func TestNumber(t *testing.T) {
	for _, tc := range []struct {
		in    string
		v     int
		isInt bool
		end   int
	}{
		{"0", 0, true, 1},
		{"-0", 0, true, 2},
		{"12,", 12, true, 2},
		{"-45}", -45, true, 3},
		{"123456789012345678", 123456789012345678, true, 18},
		{"1234567890123456789", 0, false, 19},  // beyond 18 digits: no count
		{"-123456789012345678", 0, false, 19},  // 19 bytes with its sign
		{"99999999999999999999", 0, false, 20}, // wraps while scanned, dropped
		{"1.5", 0, false, 3},
		{"2e3", 0, false, 3},
		{"2E+3]", 0, false, 4},
		{"2.5e-3", 0, false, 6},
		{"007", 0, false, bad},
		{"-", 0, false, bad},
		{"1.", 0, false, bad},
		{"1.e5", 0, false, bad},
		{"1e", 0, false, bad},
		{"1e+", 0, false, bad},
	} {
		v, isInt, end := number([]byte(tc.in), 0)
		if v != tc.v || isInt != tc.isInt || end != tc.end {
			t.Errorf("number(%q) = %d, %v, %d; want %d, %v, %d", tc.in, v, isInt, end, tc.v, tc.isInt, tc.end)
		}
	}
}
