package scenario

import (
	"fmt"
	"slices"
	"strings"

	"github.com/runnerbench/runner/protocol"
	"github.com/runnerbench/runner/result"
)

// The non-streamed APIs (protocol.NameStreams false): a request carries a
// batch of texts (an InputBatcher's inputs, a DocumentScorer's documents
// beside the prompt as their query), and its answer comes whole, so it has
// an end-to-end latency and input tokens, and no first token or output
// tokens.

// Bounds on a batch request's texts.
const (
	MaxInputsPerRequest    = 2048
	MaxDocumentsPerRequest = 1000
	// DefaultDocumentsPerRequest is a document-scoring request's documents
	// when the stage does not say.
	DefaultDocumentsPerRequest = 8
)

// streams reports whether api answers with an event stream (an unknown api
// is the enum check's error, not this one's: true).
func streams(api API) bool { return protocol.NameStreams(string(api)) }

// scoresDocuments reports whether api's requests score documents against
// the prompt as their query (protocol.DocumentScorer); an unknown api is
// the enum check's error, not this one's: false.
func scoresDocuments(api API) bool { return is[protocol.DocumentScorer](api, false) }

// batchesInputs reports whether api's requests carry several inputs
// (protocol.InputBatcher); false for an unknown api.
func batchesInputs(api API) bool { return is[protocol.InputBatcher](api, false) }

// documentAPIs names the APIs that score documents, from the registry, as
// a message lists them ("a or b").
func documentAPIs() string { return namesOf[protocol.DocumentScorer]() }

// outputMetric reports whether metric needs a streamed answer's first token
// or output tokens, which a non-streamed API does not produce: the
// catalogue says so of each metric (result.Metric.NeedsOutput).
func outputMetric(metric string) bool {
	m, ok := result.MetricNamed(metric)
	return ok && m.NeedsOutput
}

// stageBatch checks the fields of a batch API's stage, and that a stream's
// stage uses none of them.
func (v *validator) stageBatch(path string, s *Stage, ps *PromptSet) {
	api := s.API
	if api == "" {
		api = DefaultAPI
	}
	only := func(field string, ok bool, want string) {
		if v.has(path+"."+field) && !ok {
			v.errf(path+"."+field, "%s: %s applies to api: %s only (this stage's api is %s)", path, field, want, api)
		}
	}
	docs := scoresDocuments(api)
	only("inputs_per_request", batchesInputs(api), namesOf[protocol.InputBatcher]())
	only("documents_per_request", docs, documentAPIs())
	only("document_tokens", docs, documentAPIs())
	if s.InputsPerRequest < 0 || s.InputsPerRequest > MaxInputsPerRequest {
		v.errf(path+".inputs_per_request", "%s: inputs_per_request must be between 1 and %d, got %d", path, MaxInputsPerRequest, s.InputsPerRequest)
	} else if s.InputsPerRequest == 0 && v.has(path+".inputs_per_request") {
		v.errf(path+".inputs_per_request", "%s: inputs_per_request must be at least 1", path)
	}
	if s.DocumentsPerRequest < 0 || s.DocumentsPerRequest > MaxDocumentsPerRequest {
		v.errf(path+".documents_per_request", "%s: documents_per_request must be between 1 and %d, got %d", path, MaxDocumentsPerRequest, s.DocumentsPerRequest)
	} else if s.DocumentsPerRequest == 0 && v.has(path+".documents_per_request") {
		v.errf(path+".documents_per_request", "%s: documents_per_request must be at least 1", path)
	}
	if s.DocumentTokens != nil {
		v.length(path+".document_tokens", *s.DocumentTokens)
	}
	if docs && s.DocumentTokens == nil && ps != nil && ps.Synthetic == nil {
		v.errf(path, "%s: a %s stage over prompts that are not synthetic needs document_tokens (the documents' length)", path, api)
	}
	if streams(api) {
		return
	}
	for _, f := range []string{"output_tokens", "mode"} {
		if v.has(path + "." + f) {
			v.errf(path+"."+f, "%s: %s does not apply to api: %s, whose answer has no output tokens", path, f, api)
		}
	}
	if s.SLO != nil && (s.SLO.TTFTMs != 0 || s.SLO.TPOTMs != 0) {
		v.errf(path+".slo", "%s.slo: api %s has no first token or output tokens: bound e2e_ms only", path, api)
	}
	if ps != nil && ps.Trace != nil {
		v.errf(path+".prompts", "%s: api %s cannot replay a trace (a trace's requests have output lengths)", path, api)
	}
}

// batchChecks reports each check and search target of a non-streamed stage
// that reads a metric only a stream produces (a first token, output
// tokens): it would read a null and fail every run (or never find a
// capacity), so it is a plan error.
func (v *validator) batchChecks(i int, s *Stage) {
	if streams(s.API) {
		return
	}
	for j, c := range s.Checks {
		if c != nil {
			cp := fmt.Sprintf("stages[%d].checks[%d]", i, j)
			v.outputRead(cp, ".expr", "check", c.Metrics, s.API)
			v.outputRead(cp, ".when", "check's when:", c.WhenMetrics, s.API)
		}
	}
	if s.Search == nil {
		return
	}
	for j, t := range s.Search.Targets {
		if t != nil {
			v.outputRead(fmt.Sprintf("stages[%d].search.targets[%d]", i, j), ".expr", "target", t.Metrics, s.API)
		}
	}
}

// outputRead reports the metrics of metrics, read by the check or target at
// path (its field field), that api does not produce.
func (v *validator) outputRead(path, field, what string, metrics []string, api API) {
	var bad []string
	for _, m := range metrics {
		if outputMetric(m) && !slices.Contains(bad, m) {
			bad = append(bad, m)
		}
	}
	if len(bad) > 0 {
		v.errf(path+field, "%s: %s reads %s, which api: %s does not produce (its answer is not streamed: no first token, no output tokens); check e2e_*, request_tps, input_tps_total or mean_input_tokens instead",
			path, what, strings.Join(bad, ", "), api)
	}
}
