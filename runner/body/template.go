package body

import (
	"sync"

	"github.com/runnerbench/runner/protocol"
)

// templates are a stage's bodies around their prompt text
// (protocol.TextTemplate), one for each model and output bound its
// requests ask for: everything else in a body is the stage's. Builds run on
// many workers at once.
type templates struct {
	mu sync.Mutex
	m  map[templateKey]*protocol.TextTemplate // nil value: the API's body has none
}

type templateKey struct {
	model string
	max   int
}

// maxTemplates bounds a stage's templates: output lengths drawn from a
// wide distribution would otherwise keep one for every length drawn. Past
// it, bodies are encoded whole, as without templates.
const maxTemplates = 256

// get is the template for r's model and output bound, made on first use
// (nil: r has more than a prompt text, the API's body allows none, or the
// stage has its fill of templates).
func (ts *templates) get(p protocol.Protocol, r protocol.Request) *protocol.TextTemplate {
	if r.Messages != nil || r.Inputs != nil || r.Documents != nil || r.Images != nil {
		return nil
	}
	k := templateKey{r.Model, r.MaxTokens}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if t, ok := ts.m[k]; ok {
		return t
	}
	if len(ts.m) >= maxTemplates {
		return nil
	}
	t, _ := protocol.NewTextTemplate(p, r)
	if ts.m == nil {
		ts.m = map[templateKey]*protocol.TextTemplate{}
	}
	ts.m[k] = t
	return t
}
