package trace

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// Options are what parsing a trace needs from the plan.
type Options struct {
	// BlockTokens is the tokens each Mooncake hash id stands for.
	BlockTokens int
	// MaxTokens bounds every prompt and output length (the plan's limit).
	MaxTokens int
	// Stage and Level pick a Runner trace's requests: those of the stage of
	// that name ("" any) and the level of that index (-1 any). The records
	// picked must come from one level.
	Stage string
	Level int
}

// Bad receives a malformed line: its number and what is wrong with it.
type Bad func(line int, msg string)

// eachLine calls fn with every non-blank line of data and its number; last
// is set for a final line without a newline (a record cut by kill -9).
func eachLine(data []byte, fn func(line int, b []byte, last bool)) {
	for line := 1; len(data) > 0; line++ {
		b, rest, found := bytes.Cut(data, []byte("\n"))
		data = rest
		if b = bytes.TrimSpace(b); len(b) > 0 {
			fn(line, b, !found)
		}
	}
}

// mooncakeLine is one line of a Mooncake trace. The numbers are kept raw,
// so an id or length that is not a whole number is an error, not rounded.
type mooncakeLine struct {
	Timestamp    json.RawMessage   `json:"timestamp"`
	InputLength  json.RawMessage   `json:"input_length"`
	OutputLength json.RawMessage   `json:"output_length"`
	HashIDs      []json.RawMessage `json:"hash_ids"`
}

// ParseMooncake reads a Mooncake trace: one JSON object a line with
// "timestamp" (ms from the trace's start), "input_length", "output_length"
// and optionally "hash_ids", one per block of o.BlockTokens tokens, the last
// for the rest: so input_length needs exactly ceil(input_length /
// block_tokens) of them. Other keys are ignored. The requests come back
// sorted by arrival.
func ParseMooncake(data []byte, o Options, bad Bad) []Request {
	var out []Request
	eachLine(data, func(line int, b []byte, _ bool) {
		var m mooncakeLine
		if err := json.Unmarshal(b, &m); err != nil {
			bad(line, "not a valid JSON object: "+jsonMsg(err))
			return
		}
		r := Request{Line: line, Prompt: -1}
		var ok bool
		if r.At, ok = millis(m.Timestamp, line, bad); !ok {
			return
		}
		if r.Input, ok = count(string(m.InputLength), "input_length", o.MaxTokens, line, bad); !ok {
			return
		}
		if r.Output, ok = count(string(m.OutputLength), "output_length", o.MaxTokens, line, bad); !ok {
			return
		}
		if r.Blocks, ok = hashIDs(m.HashIDs, r.Input, o.BlockTokens, line, bad); !ok {
			return
		}
		out = append(out, r)
	})
	sortByArrival(out)
	return out
}

// millis reads a timestamp in ms: a finite number, not negative.
func millis(raw json.RawMessage, line int, bad Bad) (time.Duration, bool) {
	if raw == nil || string(raw) == "null" {
		bad(line, `missing "timestamp" (ms from the trace's start)`)
		return 0, false
	}
	ms, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || ms < 0 || math.IsInf(ms, 0) || ms > float64(math.MaxInt64/int64(time.Millisecond)) {
		bad(line, fmt.Sprintf(`"timestamp" must be a number of ms, not negative, got %s`, shown(string(raw))))
		return 0, false
	}
	return time.Duration(math.Round(ms * float64(time.Millisecond))), true
}

// count reads a token count between 1 and limit from s (a JSON value or a
// CSV field).
func count(s, name string, limit, line int, bad Bad) (int, bool) {
	if s == "" || s == "null" {
		bad(line, fmt.Sprintf("missing %q", name))
		return 0, false
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 1 || v > int64(limit) {
		bad(line, fmt.Sprintf("%q must be a whole number of tokens between 1 and %d, got %s", name, limit, shown(s)))
		return 0, false
	}
	return int(v), true
}

// hashIDs reads a prompt's block ids and checks there is one per block.
func hashIDs(ns []json.RawMessage, input, block, line int, bad Bad) ([]int64, bool) {
	if len(ns) == 0 {
		return nil, true
	}
	ids := make([]int64, len(ns))
	for i, n := range ns {
		v, err := strconv.ParseInt(string(n), 10, 64)
		if err != nil {
			u, uerr := strconv.ParseUint(string(n), 10, 64)
			if uerr != nil {
				bad(line, fmt.Sprintf("hash_ids[%d] must be a whole number, got %s", i, shown(string(n))))
				return nil, false
			}
			v = int64(u) // a 64-bit hash: only equality matters
		}
		ids[i] = v
	}
	if want := (input + block - 1) / block; len(ids) != want {
		bad(line, fmt.Sprintf("input_length %d takes %d blocks of %d tokens, but hash_ids has %d: is block_tokens right?", input, want, block, len(ids)))
		return nil, false
	}
	return ids, true
}

// shown is a bad value as a message may show it: a number as it is, anything
// else by its kind only. A plan may point a trace at any file of its tree,
// and a message must not copy a credential file's lines into a CI log.
func shown(v string) string {
	if _, err := strconv.ParseFloat(v, 64); err == nil && len(v) <= 32 {
		return v
	}
	switch {
	case strings.HasPrefix(v, `"`):
		return "a string"
	case strings.HasPrefix(v, "{"):
		return "an object"
	case strings.HasPrefix(v, "["):
		return "a list"
	case v == "true" || v == "false":
		return v
	}
	return "text that is not a number"
}

func jsonMsg(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s (at byte %d)", se.Error(), se.Offset)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return "a line holds one JSON object, not " + article(te.Value)
		}
		return fmt.Sprintf("%q cannot be %s", te.Field, article(te.Value))
	}
	return err.Error()
}

// article is a JSON kind ("string", "array") with its article.
func article(kind string) string {
	if kind != "" && strings.IndexByte("aeiou", kind[0]) >= 0 {
		return "an " + kind
	}
	return "a " + kind
}

// azureLayouts are the timestamp forms the Azure traces use
// ("2023-11-16 18:15:46.6805900"), and RFC 3339.
var azureLayouts = []string{"2006-01-02 15:04:05.999999999", time.RFC3339Nano}

// ParseAzure reads an Azure LLM inference trace: CSV with a header naming
// TIMESTAMP, ContextTokens and GeneratedTokens (in any order and case), one
// request a row. Arrival times are from the earliest row; the requests come
// back sorted by arrival.
func ParseAzure(data []byte, o Options, bad Bad) []Request {
	r := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))))
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if err != nil {
		if err == io.EOF {
			return nil
		}
		bad(1, "invalid CSV: "+err.Error())
		return nil
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.ToLower(strings.TrimSpace(h))] = i
	}
	idx := make([]int, 3)
	for i, name := range []string{"TIMESTAMP", "ContextTokens", "GeneratedTokens"} {
		j, ok := col[strings.ToLower(name)]
		if !ok {
			bad(1, fmt.Sprintf("no %s column in the header (an Azure trace has TIMESTAMP, ContextTokens and GeneratedTokens)", name))
			return nil
		}
		idx[i] = j
	}
	var out []Request
	var abs []time.Time
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			bad(CSVErrorLine(err), "invalid CSV: "+err.Error())
			return nil
		}
		line, _ := r.FieldPos(0)
		req, t, ok := azureRow(rec, idx, o.MaxTokens, line, bad)
		if ok {
			out = append(out, req)
			abs = append(abs, t)
		}
	}
	if len(abs) > 0 {
		t0 := abs[0]
		for _, t := range abs {
			if t.Before(t0) {
				t0 = t
			}
		}
		for i := range out {
			out[i].At = abs[i].Sub(t0)
		}
	}
	sortByArrival(out)
	return out
}

// azureRow reads one row: its request (without its arrival time) and its
// absolute timestamp.
func azureRow(rec []string, idx []int, limit, line int, bad Bad) (Request, time.Time, bool) {
	field := func(i int) string {
		if idx[i] < len(rec) {
			return strings.TrimSpace(rec[idx[i]])
		}
		return ""
	}
	var t time.Time
	var err error
	for _, layout := range azureLayouts {
		if t, err = time.Parse(layout, field(0)); err == nil {
			break
		}
	}
	if err != nil {
		bad(line, "TIMESTAMP is not a time such as 2023-11-16 18:15:46.6805900")
		return Request{}, t, false
	}
	r := Request{Line: line, Prompt: -1}
	in, ok := count(field(1), "ContextTokens", limit, line, bad)
	if !ok {
		return r, t, false
	}
	outTok, ok := count(field(2), "GeneratedTokens", limit, line, bad)
	if !ok {
		return r, t, false
	}
	r.Input, r.Output = in, outTok
	return r, t, true
}

// CSVErrorLine is the line a csv.Reader's error is at (0 when it does not
// say). The reader's FieldPos panics after a failed Read, so the error is
// where the line is.
func CSVErrorLine(err error) int {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return pe.Line
	}
	return 0
}
