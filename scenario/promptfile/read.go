// Package promptfile reads a plan's prompt files (JSONL, ShareGPT JSON,
// CSV) as a stream, never whole: the dataset most published numbers use
// (ShareGPT_V3_unfiltered_cleaned_split.json) is about 640 MB, and a plan
// sends a few thousand of its prompts at most. A read keeps only the prompts
// asked for (a seeded sample, see reservoir), so memory follows what is held,
// not the file's size. Which file, which format and how many prompts are the
// plan's (package scenario decides them and opens the file through its file
// policy); problems are reported with their line in the file.
package promptfile

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/runnerbench/runner/internal/suggest"
	"github.com/runnerbench/runner/protocol"
	"github.com/runnerbench/runner/trace"
)

const (
	// MaxHeldBytes bounds the text a sample holds.
	MaxHeldBytes = 256 << 20
	// MaxEntryBytes bounds one entry of a prompt file (a JSONL line, a
	// ShareGPT conversation, a CSV row): beyond it the file is not a prompt
	// file (or a corrupt one), and reading on would only fill memory.
	MaxEntryBytes = 64 << 20
	// MaxErrors bounds how many bad entries of one file are reported.
	MaxErrors = 10
)

// Prompt is one supplied prompt.
type Prompt struct {
	Text      string             `json:"prompt,omitempty"`
	Messages  []protocol.Message `json:"messages,omitempty"`
	MaxTokens int                `json:"max_tokens,omitempty"`
	Line      int                `json:"-"` // line in the source file, for errors
	// Index is the prompt's place among its source's prompts (0-based), kept
	// when a sample holds only some of them: what a request record names, so
	// a replay can send the same prompt again.
	Index int `json:"-"`
}

// Format is which reader a file is read with.
type Format int

// The formats.
const (
	JSONL    Format = iota + 1 // one {"prompt": ...} or {"messages": [...]} a line, optional "max_tokens"
	ShareGPT                   // a JSON list of {"conversations": [...]}: the first human turn
	CSV                        // a header row, then a prompt a row in Options.Column
)

// Options is what one read keeps and checks.
type Options struct {
	Keep      int    // how many prompts to hold: a seeded sample of the file's
	Seed      int64  // seeds the sample
	Column    string // CSV: the prompt column's header
	MaxTokens int    // JSONL: the largest max_tokens an entry may ask for
	// Problem receives each problem at its line, at most MaxErrors and
	// then "too many errors; stopping".
	Problem func(line int, msg string)
}

// Result is what a read found.
type Result struct {
	Prompts  []Prompt // the sample, in file order
	Seen     int64    // valid prompts in the file
	Problems int      // problems found (Prompts is nil when there are any)
	TooBig   bool     // the sample would hold more than MaxHeldBytes of text
}

// Read reads a prompt file of format f from r.
func Read(r io.Reader, f Format, o Options) Result {
	fe := &Errors{Report: o.Problem}
	res := newReservoir(o.Keep, o.Seed, fe)
	br := bufio.NewReaderSize(r, 256<<10)
	// Spreadsheet exports often start with a UTF-8 byte-order mark.
	if b, _ := br.Peek(3); string(b) == "\xef\xbb\xbf" {
		_, _ = br.Discard(3)
	}
	switch f {
	case JSONL:
		readJSONL(br, o.MaxTokens, fe, res.add)
	case ShareGPT:
		readShareGPT(br, fe, res.add)
	case CSV:
		readCSV(br, o.Column, fe, res.add)
	}
	out := Result{Seen: res.seen, Problems: fe.N, TooBig: res.tooBig}
	if fe.N == 0 && !res.tooBig {
		out.Prompts = res.prompts()
	}
	return out
}

// Errors counts the problems found at lines of one file (a prompt file, a
// trace file) and passes the first MaxErrors on to Report, then "too many
// errors; stopping".
type Errors struct {
	Report func(line int, msg string)
	N      int // problems found
}

// Add counts one problem at line.
func (fe *Errors) Add(line int, format string, args ...any) {
	fe.N++
	switch {
	case fe.N <= MaxErrors:
		fe.Report(line, fmt.Sprintf(format, args...))
	case fe.N == MaxErrors+1:
		fe.Report(line, "too many errors; stopping")
	}
}

// Full reports whether reading on would only find errors nobody is shown.
func (fe *Errors) Full() bool { return fe.N > MaxErrors }

// jsonlRecord is one line of a JSONL prompt file. Other keys are ignored:
// real datasets carry ids and metadata.
type jsonlRecord struct {
	Prompt    *string         `json:"prompt"`
	Messages  json.RawMessage `json:"messages"`
	MaxTokens *int            `json:"max_tokens"`
}

// readJSONL reads one prompt a line, line by line.
func readJSONL(br *bufio.Reader, maxTokens int, fe *Errors, emit func(Prompt)) {
	var buf []byte
	for line := 1; !fe.Full(); line++ {
		b, err := readLine(br, buf[:0])
		buf = b
		if errors.Is(err, errEntryTooLarge) {
			fe.Add(line, "line is longer than %d MiB", MaxEntryBytes>>20)
			continue
		}
		if b := bytes.TrimSpace(b); len(b) > 0 {
			if p, msg := parseJSONLine(b, maxTokens); msg != "" {
				fe.Add(line, "%s", msg)
			} else {
				p.Line = line
				emit(p)
			}
		}
		if err == io.EOF {
			return
		}
		if err != nil {
			fe.Add(line, "cannot read: %v", err)
			return
		}
	}
}

// parseJSONLine parses one JSONL line into a prompt, or says what is wrong
// with it.
func parseJSONLine(b []byte, maxTokens int) (Prompt, string) {
	var r jsonlRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return Prompt{}, "not valid JSON: " + jsonMsg(err)
	}
	var p Prompt
	switch {
	case r.Prompt != nil && len(r.Messages) > 0:
		return p, "give \"prompt\" or \"messages\", not both"
	case r.Prompt != nil:
		if strings.TrimSpace(*r.Prompt) == "" {
			return p, "\"prompt\" is empty"
		}
		p.Text = *r.Prompt
	case len(r.Messages) > 0:
		if err := json.Unmarshal(r.Messages, &p.Messages); err != nil || len(p.Messages) == 0 {
			return p, "\"messages\" must be a non-empty list of {\"role\": ..., \"content\": \"...\"}"
		}
		if msg := checkMessages(p.Messages); msg != "" {
			return p, msg
		}
	default:
		return p, "expected a \"prompt\" string or a \"messages\" list"
	}
	if r.MaxTokens != nil {
		if *r.MaxTokens < 1 || *r.MaxTokens > maxTokens {
			return p, fmt.Sprintf("max_tokens must be between 1 and %d, got %d", maxTokens, *r.MaxTokens)
		}
		p.MaxTokens = *r.MaxTokens
	}
	return p, ""
}

var errEntryTooLarge = errors.New("entry too large")

// readLine reads one line into buf (without its newline). A line longer
// than MaxEntryBytes is skipped to its end and reported as
// errEntryTooLarge, so one runaway line costs no more memory than that.
func readLine(br *bufio.Reader, buf []byte) ([]byte, error) {
	tooLong := false
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(chunk) > MaxEntryBytes {
				tooLong, buf = true, buf[:0]
			} else {
				buf = append(buf, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if tooLong && (err == nil || err == io.EOF) {
			return buf, errEntryTooLarge
		}
		return buf, err
	}
}

func checkMessages(ms []protocol.Message) string {
	for i, m := range ms {
		if m.Role == "" {
			return fmt.Sprintf("messages[%d] has no role", i)
		}
	}
	return ""
}

func jsonMsg(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s (at byte %d)", se.Error(), se.Offset)
	}
	return err.Error()
}

// shareGPTRecord is one conversation of a ShareGPT dump; the first human turn
// is the prompt.
type shareGPTRecord struct {
	Conversations []struct {
		From  string `json:"from"`
		Value string `json:"value"`
	} `json:"conversations"`
}

// readShareGPT reads a ShareGPT JSON list one conversation at a time, with
// the decoder's tokens, holding one conversation at a time. A conversation
// of the wrong shape is reported (entry and line) and skipped; broken JSON
// ends the file, since nothing after it can be trusted to be where it seems.
func readShareGPT(br *bufio.Reader, fe *Errors, emit func(Prompt)) {
	er := &entryReader{r: br, limit: MaxEntryBytes}
	dec := json.NewDecoder(er)
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('[') {
		fe.Add(er.line(dec.InputOffset()), "a ShareGPT file must be a JSON list of {\"conversations\": [...]}")
		return
	}
	for entry := 1; dec.More() && !fe.Full(); entry++ {
		er.mark = dec.InputOffset()
		line := er.line(er.mark + leadingSpace(dec))
		var r shareGPTRecord
		if err := dec.Decode(&r); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				fe.Add(line, "entry %d: not a ShareGPT conversation: %s", entry, jsonMsg(err))
				continue
			}
			if errors.Is(err, errEntryTooLarge) {
				fe.Add(line, "entry %d is larger than %d MiB", entry, MaxEntryBytes>>20)
			} else {
				fe.Add(line, "entry %d: not valid ShareGPT JSON: %s", entry, jsonMsg(err))
			}
			return
		}
		for _, c := range r.Conversations {
			if (c.From == "human" || c.From == "user") && strings.TrimSpace(c.Value) != "" {
				emit(Prompt{Text: c.Value, Line: line})
				break
			}
		}
		// A conversation without a human turn is skipped: dumps contain them.
	}
	if fe.Full() {
		return
	}
	if _, err := dec.Token(); err != nil {
		fe.Add(er.line(dec.InputOffset()), "not valid JSON: %s", jsonMsg(err))
	}
}

// leadingSpace is how many bytes of whitespace and the separating comma
// come before the decoder's next value, so an entry's line is its own and
// not the line its predecessor ended on. It reads the decoder's buffer
// without consuming it.
func leadingSpace(dec *json.Decoder) int64 {
	br, ok := dec.Buffered().(io.ByteReader)
	if !ok {
		return 0
	}
	var n int64
	for {
		b, err := br.ReadByte()
		if err != nil || strings.IndexByte(" \t\r\n,", b) < 0 {
			return n
		}
		n++
	}
}

// readCSV reads a header row, then one prompt a row from column.
func readCSV(br *bufio.Reader, column string, fe *Errors, emit func(Prompt)) {
	er := &entryReader{r: br, limit: MaxEntryBytes}
	r := csv.NewReader(er)
	r.FieldsPerRecord = -1
	r.ReuseRecord = true
	header, err := r.Read()
	if err == io.EOF {
		return
	}
	if err != nil {
		fe.Add(1, "invalid CSV: %v", err)
		return
	}
	col := slices.Index(header, column)
	if col < 0 {
		fe.Add(1, "no %q column in the header%s", column, suggest.Hint(column, slices.Clone(header)))
		return
	}
	for !fe.Full() {
		er.mark = r.InputOffset()
		rec, err := r.Read()
		if err == io.EOF {
			return
		}
		if err != nil {
			line := trace.CSVErrorLine(err)
			if errors.Is(err, errEntryTooLarge) {
				fe.Add(line, "row is larger than %d MiB", MaxEntryBytes>>20)
			} else {
				fe.Add(line, "invalid CSV: %v", err)
			}
			return
		}
		line, _ := r.FieldPos(0)
		if col >= len(rec) || strings.TrimSpace(rec[col]) == "" {
			fe.Add(line, "empty %q value", column)
			continue
		}
		emit(Prompt{Text: strings.Clone(rec[col]), Line: line})
	}
}
