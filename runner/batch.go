package runner

import (
	"context"
	"math/rand/v2"

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
func (e *Engine) compileDocs(ctx context.Context, sp *stagePlan, st *scenario.LoadPlan, def *scenario.Length) []string {
	if sp.docs <= 0 {
		return nil
	}
	switch {
	case st.DocumentTokens != nil:
		sp.docLen = *st.DocumentTokens
	case def != nil:
		sp.docLen = *def
	}
	if sp.sizer != nil {
		return nil
	}
	reference := st.Prompts.Synthetic != nil && st.Prompts.Synthetic.Sizing == scenario.SizingReference
	s, w := e.sizerFor(ctx, sp.proto, reference)
	sp.sizer = s
	if w != "" {
		return []string{w}
	}
	return nil
}

// synthInputs is a synthetic embeddings request's batch: first (the
// request's prompt, with its nonce) and inputs−1 more, drawn from r after
// it. nil when the request carries the prompt alone.
func (sp *stagePlan) synthInputs(r *rand.Rand, seq int, first string, j *job) []string {
	if sp.inputs <= 1 {
		if sp.inputs == 1 {
			j.inputs, j.results = 1, 1
		}
		return nil
	}
	out := make([]string, sp.inputs)
	out[0] = first
	for i := 1; i < sp.inputs; i++ {
		out[i] = sp.synthText(r, seq, sp.nonces.Next())
	}
	j.inputs, j.results = sp.inputs, sp.inputs
	return out
}

// fileInputs is an embeddings request's batch over file or inline prompts:
// the request's own and the next inputs−1 prompts of the set, in order, each
// led by its own nonce (chat messages are joined into one text).
func (sp *stagePlan) fileInputs(seq int, first string, messages []scenario.Message, j *job) []string {
	if sp.inputs <= 1 {
		if sp.inputs == 1 {
			j.inputs, j.results = 1, 1
		}
		return nil
	}
	out := make([]string, sp.inputs)
	out[0] = first
	if messages != nil {
		out[0] = joinMessages(messages)
	}
	for i := 1; i < sp.inputs; i++ {
		p := sp.loaded[(seq*sp.inputs+i)%len(sp.loaded)]
		text, ms := filePrompt(p, sp.nonces.Next())
		if ms != nil {
			text = joinMessages(ms)
		}
		out[i] = text
	}
	j.inputs, j.results = sp.inputs, sp.inputs
	return out
}

// joinMessages is chat messages as one text, as the completions API
// flattens them.
func joinMessages(ms []scenario.Message) string {
	var s []byte
	for i, m := range ms {
		if i > 0 {
			s = append(s, '\n')
		}
		s = append(s, m.Content...)
	}
	return string(s)
}

// documents is a rerank request's documents, their lengths drawn from r
// (after the query's), each led by its own nonce. nil for other APIs.
func (sp *stagePlan) documents(r *rand.Rand, j *job) []string {
	if sp.docs <= 0 {
		return nil
	}
	out := make([]string, sp.docs)
	for i := range out {
		out[i] = synth.LeadNonce(sp.nonces.Next(), synth.Filler(sp.sizer.Words(sp.docLen.Sample(r))))
	}
	j.inputs = sp.docs
	// top_n in extra_body asks for fewer results than documents; without
	// it every document is scored.
	if _, topN := sp.extra["top_n"]; !topN {
		j.results = sp.docs
	}
	return out
}
