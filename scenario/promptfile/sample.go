package promptfile

import (
	"bytes"
	"cmp"
	"io"
	"math/rand/v2"
	"slices"
)

// reservoir keeps a seeded, uniform sample of k of a file's prompts while
// the file streams past (Vitter's algorithm R): each prompt read is kept
// with probability k/seen, replacing a random kept one. The same file and
// seed give the same sample, on any machine, and memory holds k prompts
// whatever the file's size. A file of k prompts or fewer is kept whole.
type reservoir struct {
	k      int
	seen   int64 // valid prompts read
	held   []heldPrompt
	bytes  int64 // text held
	tooBig bool  // held more than MaxHeldBytes at some point
	rng    *rand.Rand
	fe     *Errors
}

// heldPrompt is a kept prompt and its place in the file.
type heldPrompt struct {
	idx int64
	p   Prompt
}

// sampleStream separates the sample's random stream from the stage's other
// uses of its seed (prompt lengths, arrivals).
const sampleStream = 0x70726f6d707473 // "prompts"

func newReservoir(k int, seed int64, fe *Errors) *reservoir {
	return &reservoir{k: k, rng: rand.New(rand.NewPCG(uint64(seed), sampleStream)), fe: fe}
}

// add offers one valid prompt. Once the file has errors nothing is kept
// (the plan will not run), but prompts are still counted.
func (r *reservoir) add(p Prompt) {
	i := r.seen
	r.seen++
	if r.fe.N > 0 || r.tooBig || r.k == 0 {
		return
	}
	if len(r.held) < r.k {
		r.held = append(r.held, heldPrompt{i, p})
		r.grow(promptBytes(&p))
		return
	}
	if j := r.rng.Int64N(i + 1); j < int64(r.k) {
		r.grow(promptBytes(&p) - promptBytes(&r.held[j].p))
		r.held[j] = heldPrompt{i, p}
	}
}

func (r *reservoir) grow(n int64) {
	r.bytes += n
	if r.bytes > MaxHeldBytes {
		r.tooBig, r.held = true, nil
	}
}

// prompts is the sample in file order, so a level's first prompts are
// the sample's earliest and a small file reads as it is written.
func (r *reservoir) prompts() []Prompt {
	slices.SortFunc(r.held, func(a, b heldPrompt) int { return cmp.Compare(a.idx, b.idx) })
	out := make([]Prompt, len(r.held))
	for i := range r.held {
		out[i] = r.held[i].p
		out[i].Index = int(r.held[i].idx)
	}
	return out
}

// promptBytes is what a prompt's text costs to hold.
func promptBytes(p *Prompt) int64 {
	n := int64(len(p.Text))
	for _, m := range p.Messages {
		n += int64(len(m.Role) + len(m.Content))
	}
	return n
}

// entryReader reads a prompt file for a streaming decoder (ShareGPT's JSON,
// CSV) and keeps the two things the decoder cannot: a bound on one entry
// (the bytes read past mark, the entry's start, may not exceed limit, plus
// 1 MiB for the decoder's read-ahead, so a runaway value fails instead of
// filling memory), and the file's line
// numbers, for messages, without holding the file: it remembers the
// offsets of the newlines not yet asked about, which lie within the
// decoder's buffer.
type entryReader struct {
	r     io.Reader
	off   int64 // bytes read
	mark  int64 // where the current entry starts
	limit int64
	nl    []int64 // offsets of newlines at or after the last offset asked about
	lines int     // newlines before the last offset asked about
	err   error
}

func (e *entryReader) Read(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.r.Read(p)
	for i := 0; i < n; {
		j := bytes.IndexByte(p[i:n], '\n')
		if j < 0 {
			break
		}
		e.nl = append(e.nl, e.off+int64(i+j))
		i += j + 1
	}
	e.off += int64(n)
	if e.limit > 0 && e.off-e.mark > e.limit+(1<<20) {
		e.err = errEntryTooLarge // sticky: the decoder may ask again
		return n, e.err
	}
	return n, err
}

// line is the 1-based line of byte offset off. Offsets asked about must
// not decrease.
func (e *entryReader) line(off int64) int {
	i := 0
	for i < len(e.nl) && e.nl[i] < off {
		i++
	}
	e.lines += i
	e.nl = append(e.nl[:0], e.nl[i:]...)
	return e.lines + 1
}
