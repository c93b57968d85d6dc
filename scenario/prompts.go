package scenario

import (
	"cmp"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/runnerbench/runner/scenario/promptfile"
)

// Prompt files are read as a stream, never whole (package promptfile): the
// loader keeps only the prompts the plan's stages can send, a seeded sample,
// so memory follows what is held, not the file's size.
const (
	// MaxHeldPrompts is the most prompts a prompt set holds.
	MaxHeldPrompts = 1_000_000
	// UnboundedHeldPrompts is what a prompt set holds for a stage whose
	// levels are bounded by duration only: the stage cycles through them.
	UnboundedHeldPrompts = 10_000
)

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
		closed, _ := st.closedLevels()
		levels := len(closed) + len(st.Rate)
		if st.Series != nil {
			levels = 1
		}
		most := 0
		for i := range levels {
			n := st.Requests.At(i)
			switch {
			case n > 0:
			case st.Duration > 0 || len(st.Rate) > 0 || st.Series != nil:
				n = UnboundedHeldPrompts
			default:
				n = closed[i] // the reference's single wave
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
	kind := map[Format]promptfile.Format{FormatJSONL: promptfile.JSONL, FormatShareGPT: promptfile.ShareGPT, FormatCSV: promptfile.CSV}[format]
	res := promptfile.Read(f, kind, promptfile.Options{Keep: need.count, Seed: need.seed, Column: cmp.Or(ps.Column, DefaultColumn), MaxTokens: MaxTokens,
		Problem: v.fileProblem(fp)})
	switch {
	case res.Problems > 0:
	case res.Seen == 0:
		v.errf(path+".file", "%s.file: prompt file %q contains no prompts", path, ps.File)
	case res.TooBig:
		v.errf(path+".file", "%s.file: the %d prompts the plan can send from %q hold more than %d MiB of text: send fewer requests a level, or use a file of shorter prompts",
			path, need.count, ps.File, promptfile.MaxHeldBytes>>20)
	default:
		ps.Loaded = res.Prompts
	}
}

// fileProblem reports a problem at a line of file, a file the plan names.
func (v *validator) fileProblem(file string) func(line int, msg string) {
	return func(line int, msg string) {
		v.probs.list = append(v.probs.list, &Error{File: file, Line: line, Msg: msg})
	}
}
