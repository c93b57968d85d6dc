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

	"github.com/runnerbench/runner/trace"
)

// Prompt files are read as a stream, never whole: the dataset most published
// numbers use (ShareGPT_V3_unfiltered_cleaned_split.json) is about 640 MB,
// and a plan sends a few thousand of its prompts at most. The loader keeps
// only the prompts the plan's stages can send (a seeded sample, see
// reservoir), so memory follows what is held, not the file's size.
const (
	// MaxHeldPrompts is the most prompts a prompt set holds.
	MaxHeldPrompts = 1_000_000
	// UnboundedHeldPrompts is what a prompt set holds for a stage whose
	// levels are bounded by duration only: the stage cycles through them.
	UnboundedHeldPrompts = 10_000
	// MaxHeldPromptBytes bounds the text a prompt set holds.
	MaxHeldPromptBytes = 256 << 20
	// MaxPromptEntryBytes bounds one entry of a prompt file (a JSONL line, a
	// ShareGPT conversation, a CSV row): beyond it the file is not a prompt
	// file (or a corrupt one), and reading on would only fill memory.
	MaxPromptEntryBytes = 64 << 20
)

// maxFileErrors bounds how many bad entries of one prompt file are reported.
const maxFileErrors = 10

func (v *validator) loadPrompts() {
	needs := promptNeeds(v.plan)
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
				ps.Loaded[i] = Prompt{Text: s, Line: v.pos(fmt.Sprintf("%s.inline[%d]", path, i)).line, Index: i}
			}
		case ps.File != "" && ps.Synthetic == nil && len(ps.Inline) == 0 && ps.Trace == nil:
			v.loadFile(path, ps, needs[name])
		case ps.Trace != nil && ps.File == "" && ps.Synthetic == nil && len(ps.Inline) == 0:
			v.loadTrace(path, ps.Trace)
		}
	}
}

// promptNeed is what the plan can send from one prompt set: how many
// distinct prompts (the most any level takes, conversations times their
// turns), and the seed of the first stage that uses it, which seeds its
// sample.
type promptNeed struct {
	count int
	seed  int64
}

// promptNeeds says, per prompt set, how many prompts the plan's stages can
// send. A level takes its prompts in order from the set's first (cycling
// past its end), so a set needs as many as its largest level sends: its
// requests, or by default its concurrency; a level bounded by duration
// alone takes UnboundedHeldPrompts. Sets no stage uses need none.
func promptNeeds(p *Plan) map[string]promptNeed {
	out := map[string]promptNeed{}
	for _, st := range p.Stages {
		if st == nil || p.Prompts[st.Prompts] == nil {
			continue
		}
		turns := max(1, p.Prompts[st.Prompts].Turns)
		levels := len(st.Concurrency) + len(st.Rate)
		most := 0
		for i := range levels {
			n := st.Requests.At(i)
			switch {
			case n > 0:
			case st.Duration > 0 || len(st.Rate) > 0:
				n = UnboundedHeldPrompts
			default:
				n = st.Concurrency[i] // the reference's single wave
			}
			most = max(most, min(n, MaxHeldPrompts)*turns)
		}
		need, seen := out[st.Prompts]
		if !seen && st.Seed != nil {
			need.seed = *st.Seed
		}
		need.count = min(max(need.count, most), MaxHeldPrompts)
		out[st.Prompts] = need
	}
	// A replay of a run's records names prompts by their place in the
	// file: the set they come from is held whole (up to the limits).
	for _, ps := range p.Prompts {
		if ps != nil && ps.Trace != nil && ps.Trace.Prompts != "" {
			need := out[ps.Trace.Prompts]
			need.count = MaxHeldPrompts
			out[ps.Trace.Prompts] = need
		}
	}
	return out
}

func (v *validator) loadFile(path string, ps *PromptSet, need promptNeed) {
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
	f, ok := v.openPlanFile(path+".file", ps.File, "prompt file")
	if !ok {
		return
	}
	defer f.Close()
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
	fe := &fileErrs{v: v, file: fp}
	res := newReservoir(need.count, need.seed, fe)
	br := bufio.NewReaderSize(f, 256<<10)
	// Spreadsheet exports often start with a UTF-8 byte-order mark.
	if b, _ := br.Peek(3); string(b) == "\xef\xbb\xbf" {
		_, _ = br.Discard(3)
	}
	switch format {
	case FormatJSONL:
		readJSONL(br, fe, res.add)
	case FormatShareGPT:
		readShareGPT(br, fe, res.add)
	case FormatCSV:
		readCSV(br, ps.Column, fe, res.add)
	}
	switch {
	case fe.n > 0:
	case res.seen == 0:
		v.errf(path+".file", "%s.file: prompt file %q contains no prompts", path, ps.File)
	case res.tooBig:
		v.errf(path+".file", "%s.file: the %d prompts the plan can send from %q hold more than %d MiB of text: send fewer requests a level, or use a file of shorter prompts",
			path, res.k, ps.File, MaxHeldPromptBytes>>20)
	default:
		ps.Loaded = res.prompts()
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

// full reports whether reading on would only find errors nobody is shown.
func (fe *fileErrs) full() bool { return fe.n > maxFileErrors }

// jsonlRecord is one line of a JSONL prompt file. Other keys are ignored:
// real datasets carry ids and metadata.
type jsonlRecord struct {
	Prompt    *string         `json:"prompt"`
	Messages  json.RawMessage `json:"messages"`
	MaxTokens *int            `json:"max_tokens"`
}

// readJSONL reads one prompt a line, line by line.
func readJSONL(br *bufio.Reader, fe *fileErrs, emit func(Prompt)) {
	var buf []byte
	for line := 1; !fe.full(); line++ {
		b, err := readLine(br, buf[:0])
		buf = b
		if errors.Is(err, errEntryTooLarge) {
			fe.add(line, "line is longer than %d MiB", MaxPromptEntryBytes>>20)
			continue
		}
		if b := bytes.TrimSpace(b); len(b) > 0 {
			if p, msg := parseJSONLine(b); msg != "" {
				fe.add(line, "%s", msg)
			} else {
				p.Line = line
				emit(p)
			}
		}
		if err == io.EOF {
			return
		}
		if err != nil {
			fe.add(line, "cannot read: %v", err)
			return
		}
	}
}

// parseJSONLine parses one JSONL line into a prompt, or says what is wrong
// with it.
func parseJSONLine(b []byte) (Prompt, string) {
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
		if *r.MaxTokens < 1 || *r.MaxTokens > MaxTokens {
			return p, fmt.Sprintf("max_tokens must be between 1 and %d, got %d", MaxTokens, *r.MaxTokens)
		}
		p.MaxTokens = *r.MaxTokens
	}
	return p, ""
}

var errEntryTooLarge = errors.New("entry too large")

// readLine reads one line into buf (without its newline). A line longer
// than MaxPromptEntryBytes is skipped to its end and reported as
// errEntryTooLarge, so one runaway line costs no more memory than that.
func readLine(br *bufio.Reader, buf []byte) ([]byte, error) {
	tooLong := false
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(chunk) > MaxPromptEntryBytes {
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

// readShareGPT reads a ShareGPT JSON list one conversation at a time, with
// the decoder's tokens, holding one conversation at a time. A conversation
// of the wrong shape is reported (entry and line) and skipped; broken JSON
// ends the file, since nothing after it can be trusted to be where it seems.
func readShareGPT(br *bufio.Reader, fe *fileErrs, emit func(Prompt)) {
	er := &entryReader{r: br, limit: MaxPromptEntryBytes}
	dec := json.NewDecoder(er)
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('[') {
		fe.add(er.line(dec.InputOffset()), "a ShareGPT file must be a JSON list of {\"conversations\": [...]}")
		return
	}
	for entry := 1; dec.More() && !fe.full(); entry++ {
		er.mark = dec.InputOffset()
		line := er.line(er.mark + leadingSpace(dec))
		var r shareGPTRecord
		if err := dec.Decode(&r); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				fe.add(line, "entry %d: not a ShareGPT conversation: %s", entry, jsonMsg(err))
				continue
			}
			if errors.Is(err, errEntryTooLarge) {
				fe.add(line, "entry %d is larger than %d MiB", entry, MaxPromptEntryBytes>>20)
			} else {
				fe.add(line, "entry %d: not valid ShareGPT JSON: %s", entry, jsonMsg(err))
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
	if fe.full() {
		return
	}
	if _, err := dec.Token(); err != nil {
		fe.add(er.line(dec.InputOffset()), "not valid JSON: %s", jsonMsg(err))
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
func readCSV(br *bufio.Reader, column string, fe *fileErrs, emit func(Prompt)) {
	if column == "" {
		column = DefaultColumn
	}
	er := &entryReader{r: br, limit: MaxPromptEntryBytes}
	r := csv.NewReader(er)
	r.FieldsPerRecord = -1
	r.ReuseRecord = true
	header, err := r.Read()
	if err == io.EOF {
		return
	}
	if err != nil {
		fe.add(1, "invalid CSV: %v", err)
		return
	}
	col := slices.Index(header, column)
	if col < 0 {
		fe.add(1, "no %q column in the header%s", column, didYouMean(column, slices.Clone(header)))
		return
	}
	for !fe.full() {
		er.mark = r.InputOffset()
		rec, err := r.Read()
		if err == io.EOF {
			return
		}
		if err != nil {
			line := trace.CSVErrorLine(err)
			if errors.Is(err, errEntryTooLarge) {
				fe.add(line, "row is larger than %d MiB", MaxPromptEntryBytes>>20)
			} else {
				fe.add(line, "invalid CSV: %v", err)
			}
			return
		}
		line, _ := r.FieldPos(0)
		if col >= len(rec) || strings.TrimSpace(rec[col]) == "" {
			fe.add(line, "empty %q value", column)
			continue
		}
		emit(Prompt{Text: strings.Clone(rec[col]), Line: line})
	}
}
