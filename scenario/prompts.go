package scenario

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
)

// MaxPromptFileBytes bounds a prompt file, so pointing a plan at a huge file is
// a clear error rather than an out-of-memory crash. Prompts are held in memory
// for the whole run; 64 MiB is far more than any benchmark needs.
const MaxPromptFileBytes = 64 << 20

// maxFileErrors bounds how many bad lines of one prompt file are reported.
const maxFileErrors = 10

func (v *validator) loadPrompts() {
	for _, name := range slices.Sorted(maps.Keys(v.plan.Prompts)) {
		ps := v.plan.Prompts[name]
		if ps == nil {
			continue
		}
		path := "prompts." + name
		switch {
		case len(ps.Inline) > 0 && ps.File == "":
			ps.Loaded = make([]Prompt, len(ps.Inline))
			for i, s := range ps.Inline {
				ps.Loaded[i] = Prompt{Text: s, Line: v.pos(fmt.Sprintf("%s.inline[%d]", path, i)).line}
			}
		case ps.File != "" && ps.Synthetic == nil && len(ps.Inline) == 0 && ps.Trace == nil:
			v.loadFile(path, ps)
		case ps.Trace != nil && ps.File == "" && ps.Synthetic == nil && len(ps.Inline) == 0:
			v.loadTrace(path, ps.Trace)
		}
	}
}

func (v *validator) loadFile(path string, ps *PromptSet) {
	fp := ps.File
	if !filepath.IsAbs(fp) && v.dir != "" {
		fp = filepath.Join(v.dir, fp)
	}
	format := ps.Format
	if format != "" && !slices.Contains(Formats, format) {
		return // already reported by validate
	}
	// The path is checked before anything else, so a plan learns nothing
	// about a file it may not read.
	data, ok := v.readPlanFile(path+".file", ps.File, "prompt file", MaxPromptFileBytes)
	if !ok {
		return
	}
	if format == "" || format == FormatAuto {
		switch strings.ToLower(filepath.Ext(fp)) {
		case ".jsonl", ".ndjson":
			format = FormatJSONL
		case ".json":
			format = FormatShareGPT
		case ".csv":
			format = FormatCSV
		default:
			v.errf(path+".file", "%s.file: cannot tell the format of %q from its extension: set format to jsonl, sharegpt or csv", path, ps.File)
			return
		}
	}
	// Spreadsheet exports often start with a UTF-8 byte-order mark.
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	fe := &fileErrs{v: v, file: fp}
	switch format {
	case FormatJSONL:
		ps.Loaded = parseJSONL(data, fe)
	case FormatShareGPT:
		ps.Loaded = parseShareGPT(data, fe)
	case FormatCSV:
		ps.Loaded = parseCSV(data, ps.Column, fe)
	}
	if len(ps.Loaded) == 0 && fe.n == 0 {
		v.errf(path+".file", "%s.file: prompt file %q contains no prompts", path, ps.File)
	}
	if fe.n > 0 {
		ps.Loaded = nil
	}
}

// fileErrs reports problems positioned in a prompt file, capped.
type fileErrs struct {
	v    *validator
	file string
	n    int
}

func (fe *fileErrs) add(line int, format string, args ...any) {
	fe.n++
	switch {
	case fe.n <= maxFileErrors:
		fe.v.probs.list = append(fe.v.probs.list, &Error{File: fe.file, Line: line, Msg: fmt.Sprintf(format, args...)})
	case fe.n == maxFileErrors+1:
		fe.v.probs.list = append(fe.v.probs.list, &Error{File: fe.file, Line: line, Msg: "too many errors; stopping"})
	}
}

// jsonlRecord is one line of a JSONL prompt file. Other keys are ignored:
// real datasets carry ids and metadata.
type jsonlRecord struct {
	Prompt    *string         `json:"prompt"`
	Messages  json.RawMessage `json:"messages"`
	MaxTokens *int            `json:"max_tokens"`
}

func parseJSONL(data []byte, fe *fileErrs) []Prompt {
	var out []Prompt
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), MaxPromptFileBytes)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var r jsonlRecord
		if err := json.Unmarshal(b, &r); err != nil {
			fe.add(line, "not valid JSON: %s", jsonMsg(err))
			continue
		}
		p := Prompt{Line: line}
		switch {
		case r.Prompt != nil && len(r.Messages) > 0:
			fe.add(line, "give \"prompt\" or \"messages\", not both")
			continue
		case r.Prompt != nil:
			if strings.TrimSpace(*r.Prompt) == "" {
				fe.add(line, "\"prompt\" is empty")
				continue
			}
			p.Text = *r.Prompt
		case len(r.Messages) > 0:
			if err := json.Unmarshal(r.Messages, &p.Messages); err != nil || len(p.Messages) == 0 {
				fe.add(line, "\"messages\" must be a non-empty list of {\"role\": ..., \"content\": \"...\"}")
				continue
			}
			if msg := checkMessages(p.Messages); msg != "" {
				fe.add(line, "%s", msg)
				continue
			}
		default:
			fe.add(line, "expected a \"prompt\" string or a \"messages\" list")
			continue
		}
		if r.MaxTokens != nil {
			if *r.MaxTokens < 1 || *r.MaxTokens > MaxTokens {
				fe.add(line, "max_tokens must be between 1 and %d, got %d", MaxTokens, *r.MaxTokens)
				continue
			}
			p.MaxTokens = *r.MaxTokens
		}
		out = append(out, p)
	}
	if err := sc.Err(); err != nil {
		fe.add(line+1, "cannot read: %v", err)
	}
	return out
}

func checkMessages(ms []Message) string {
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

func parseShareGPT(data []byte, fe *fileErrs) []Prompt {
	dec := json.NewDecoder(bytes.NewReader(data))
	lineAt := func(off int64) int { return 1 + bytes.Count(data[:min(int(off), len(data))], []byte("\n")) }
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('[') {
		fe.add(lineAt(dec.InputOffset()), "a ShareGPT file must be a JSON list of {\"conversations\": [...]}")
		return nil
	}
	var out []Prompt
	for dec.More() {
		off := dec.InputOffset()
		// Skip the whitespace and comma before the element, so the line is the element's.
		for off < int64(len(data)) && strings.ContainsRune(" \t\r\n,", rune(data[off])) {
			off++
		}
		var r shareGPTRecord
		if err := dec.Decode(&r); err != nil {
			fe.add(lineAt(off), "not valid ShareGPT JSON: %s", jsonMsg(err))
			return nil
		}
		for _, c := range r.Conversations {
			if (c.From == "human" || c.From == "user") && strings.TrimSpace(c.Value) != "" {
				out = append(out, Prompt{Text: c.Value, Line: lineAt(off)})
				break
			}
		}
		// A conversation without a human turn is skipped: dumps contain them.
	}
	if _, err := dec.Token(); err != nil {
		fe.add(lineAt(dec.InputOffset()), "not valid JSON: %s", jsonMsg(err))
	}
	return out
}

func parseCSV(data []byte, column string, fe *fileErrs) []Prompt {
	if column == "" {
		column = DefaultColumn
	}
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if err == io.EOF {
		return nil
	}
	if err != nil {
		fe.add(1, "invalid CSV: %v", err)
		return nil
	}
	col := slices.Index(header, column)
	if col < 0 {
		fe.add(1, "no %q column in the header%s", column, didYouMean(column, header))
		return nil
	}
	var out []Prompt
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return out
		}
		if err != nil {
			// FieldPos panics after a failed Read: the error has the line.
			line := 0
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				line = pe.Line
			}
			fe.add(line, "invalid CSV: %v", err)
			return out
		}
		line, _ := r.FieldPos(0)
		if col >= len(rec) || strings.TrimSpace(rec[col]) == "" {
			fe.add(line, "empty %q value", column)
			continue
		}
		out = append(out, Prompt{Text: rec[col], Line: line})
	}
}
