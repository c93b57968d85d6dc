package body

import (
	"context"
	"math/rand/v2"

	"github.com/runnerbench/runner/protocol"
	"github.com/runnerbench/runner/runner/synth"
	"github.com/runnerbench/runner/scenario"
)

// A batch API's request carries several texts: an embeddings request its
// inputs (inputs_per_request of the prompt set's prompts), a rerank request
// its documents (documents_per_request generated texts, scored against the
// prompt as its query). Every text leads with its own nonce, as a prompt
// does: a batch of texts the engine has seen would be served from its cache.

// compileDocs prepares a rerank stage's documents: their length (the
// stage's document_tokens, else the synthetic prompt length def) and a
// sizer to make them that long. It returns the sizer's warning, if any.
func (s *Stage) compileDocs(ctx context.Context, cal *Calibrator, def *scenario.Length) []string {
	st := s.st
	if s.docs <= 0 {
		return nil
	}
	switch {
	case st.DocumentTokens != nil:
		s.docLen = *st.DocumentTokens
	case def != nil:
		s.docLen = *def
	}
	if s.sizer != nil {
		return nil
	}
	reference := st.Prompts.Synthetic != nil && st.Prompts.Synthetic.Sizing == scenario.SizingReference
	sz, w := cal.Sizer(ctx, s.proto, reference)
	s.sizer = sz
	if w != "" {
		return []string{w}
	}
	return nil
}

// synthInputs is a synthetic embeddings request's batch: first (the
// request's prompt, with its nonce) and inputs−1 more, drawn from r after
// it. nil when the request carries the prompt alone.
func (s *Stage) synthInputs(r *rand.Rand, seq int, first string, j *Job) []string {
	return s.batch(first, j, func(int) string { return s.synthText(r, seq, s.nonces.Next()) })
}

// fileInputs is an embeddings request's batch over file or inline prompts:
// the request's own and the next inputs−1 prompts of the set, in order, each
// led by its own nonce (chat messages are joined into one text).
func (s *Stage) fileInputs(seq int, first string, messages []scenario.Message, j *Job) []string {
	if messages != nil {
		first = protocol.Flatten(messages)
	}
	return s.batch(first, j, func(i int) string {
		p := s.loaded[(seq*s.inputs+i)%len(s.loaded)]
		text, ms := filePrompt(p, s.nonces.Next())
		if ms != nil {
			text = protocol.Flatten(ms)
		}
		return text
	})
}

// batch is an embeddings request's inputs: first, then next(i) for the
// inputs−1 others, in order; nil when the request carries its prompt
// alone (one input still asks for one result).
func (s *Stage) batch(first string, j *Job, next func(i int) string) []string {
	if s.inputs <= 1 {
		if s.inputs == 1 {
			j.Inputs, j.Results = 1, 1
		}
		return nil
	}
	out := make([]string, s.inputs)
	out[0] = first
	for i := 1; i < s.inputs; i++ {
		out[i] = next(i)
	}
	j.Inputs, j.Results = s.inputs, s.inputs
	return out
}

// documents is a rerank request's documents, their lengths drawn from r
// (after the query's), each led by its own nonce. nil for other APIs.
func (s *Stage) documents(r *rand.Rand, j *Job) []string {
	if s.docs <= 0 {
		return nil
	}
	out := make([]string, s.docs)
	for i := range out {
		out[i] = synth.LeadNonce(s.nonces.Next(), synth.Filler(s.sizer.Words(s.docLen.Sample(r))))
	}
	j.Inputs = s.docs
	// top_n in extra_body asks for fewer results than documents; without
	// it every document is scored.
	if _, topN := s.extra["top_n"]; !topN {
		j.Results = s.docs
	}
	return out
}
