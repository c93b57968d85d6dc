package body

import (
	"context"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/runner/synth"
	"github.com/runnerbench/runner/scenario"
	"github.com/runnerbench/runner/trace"
)

// replay is a stage's trace compiled for sending: the window of it the
// stage replays, each request's send time, and what its prompt shares.
type replay struct {
	reqs    []trace.Request         // the window, re-timed to start at 0
	times   []time.Duration         // send times on the replay's clock
	shared  []int                   // per request: its leading blocks another request also has
	index   map[int64]uint64        // each block id's dense index, in order of first use
	salt    uint64                  // this replay's own block texts (see blockCode)
	block   int                     // tokens per block
	prompts map[int]scenario.Prompt // runner traces: the prompts the records name, by their place in the file
	summary result.TraceSummary
}

// compileReplay prepares a stage over trace prompts: the window its replay
// settings cut, the prompts' sizing (calibrated on the server's tokenizer,
// as synthetic prompts are) and the trace's summary for the report.
func (s *Stage) compileReplay(ctx context.Context, cal *Calibrator, tr *scenario.Trace) []string {
	st := s.st
	var warns []string
	if tr.Note != "" {
		warns = append(warns, "trace "+tr.File+": "+tr.Note)
	}
	sz, w := cal.Sizer(ctx, s.proto, false)
	if w != "" {
		warns = append(warns, w)
	}
	s.sizer = sz
	win := trace.Window(tr.Requests, st.ReplayStart, st.ReplayEnd, st.Requests.Each)
	rp := &replay{
		reqs:  win,
		times: trace.Offsets(win, st.ReplaySpeedup),
		index: map[int64]uint64{},
		block: tr.BlockTokens,
		// A salt of its own (a fresh nonce's bits) makes every block this
		// replay sends new to the server: neither an earlier stage of the
		// run nor an earlier run can have cached it, so the hits measured
		// are the trace's own.
		salt: synth.Bits(s.nonces.Next()),
	}
	uses := map[int64]int{}
	for _, r := range win {
		for _, b := range r.Blocks {
			uses[b]++
			if _, ok := rp.index[b]; !ok {
				rp.index[b] = uint64(len(rp.index))
			}
		}
	}
	rp.shared = make([]int, len(win))
	for i, r := range win {
		for rp.shared[i] < len(r.Blocks) && uses[r.Blocks[rp.shared[i]]] > 1 {
			rp.shared[i]++
		}
	}
	if st.TracePrompts != nil {
		loaded := st.TracePrompts.Loaded
		rp.prompts = make(map[int]scenario.Prompt, len(loaded))
		for _, p := range loaded {
			rp.prompts[p.Index] = p
		}
	}
	rp.summary = trace.Summarize(win, tr.BlockTokens, st.ReplaySpeedup)
	rp.summary.File, rp.summary.Format, rp.summary.TraceRequests = tr.File, string(tr.Format), len(tr.Requests)
	rp.summary.StartS, rp.summary.EndS = st.ReplayStart.Seconds(), st.ReplayEnd.Seconds()
	s.replay = rp
	return warns
}

// prompt builds request seq's prompt around nonce: a recorded file prompt
// (runner traces with prompts), generated text of the request's length with
// the nonce first (no hash ids), or its blocks with the nonce after the part
// it shares.
func (rp *replay) prompt(sz *synth.Sizer, seq int, nonce string) (string, []scenario.Message) {
	r := rp.reqs[seq]
	if p, ok := rp.prompts[r.Prompt]; ok && r.Prompt >= 0 {
		return filePrompt(p, nonce)
	}
	total := sz.Words(r.Input) // the whole prompt's words, nonce and template accounted
	if len(r.Blocks) == 0 {
		return synth.LeadNonce(nonce, synth.Filler(total)), nil
	}
	perBlock := max(1, int(math.Round(float64(rp.block)/sz.TokensPerWord())))
	var b strings.Builder
	b.Grow(8 * total)
	for i, id := range r.Blocks {
		if i == rp.shared[seq] {
			rp.nonceAt(&b, nonce)
		}
		words := perBlock
		if i == len(r.Blocks)-1 {
			words = total - perBlock*(len(r.Blocks)-1) // the rest of the prompt
		}
		rp.appendBlock(&b, id, words)
	}
	if rp.shared[seq] == len(r.Blocks) {
		rp.nonceAt(&b, nonce)
	}
	return b.String(), nil
}

// nonceAt writes the nonce tag where the prompt stands.
func (rp *replay) nonceAt(b *strings.Builder, nonce string) {
	if b.Len() > 0 {
		b.WriteByte(' ')
	}
	b.WriteString("[" + nonce + "]")
}

// codeWords is how many words of a block encode its identity: 34^7 codes
// (the filler's distinct words), far more than any trace's blocks.
const codeWords = 7

// codeVocab is the filler's distinct words, in order.
var codeVocab = func() []string {
	var out []string
	for _, w := range synth.Vocabulary {
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}()

// appendBlock writes words words of block id's text: codeWords words that
// say which block it is, then the filler. A block's text is a function of
// its id alone (and the replay's salt), so requests that share leading ids
// share those blocks byte for byte, and differ from the first block they do
// not share, from its first words on. The code is the id's dense index plus
// the salt in base len(codeVocab): distinct ids get distinct codes.
func (rp *replay) appendBlock(b *strings.Builder, id int64, words int) {
	if words <= 0 {
		return
	}
	code, base := rp.index[id]+rp.salt, uint64(len(codeVocab))
	for range min(words, codeWords) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(codeVocab[code%base])
		code /= base
	}
	if words > codeWords {
		b.WriteByte(' ')
		b.WriteString(synth.Filler(words - codeWords))
	}
}
