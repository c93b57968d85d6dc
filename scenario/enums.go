package scenario

import (
	"strings"

	"github.com/runnerbench/runner/protocol"
)

// The plan's enumerations: typed, so the engine and the checks use the
// plan's own values instead of declaring their own copies.

// API is the API a stage calls: a name in the protocol registry
// (protocol), which lists every API and how each is spoken.
type API string

// The APIs the defaults and tests name; APIs lists them all.
const (
	APIChat       API = "chat"
	APIEmbeddings API = "embeddings"
	APIRerank     API = "rerank"
)

// Mode is how a stage's requests end.
type Mode string

// Modes.
const (
	ModePinned  Mode = "pinned"  // ignore_eos: every request emits exactly its max_tokens
	ModeNatural Mode = "natural" // the model stops where it will
)

// Arrival is an open-loop stage's arrival process.
type Arrival string

// Arrival processes.
const (
	ArrivalPoisson  Arrival = "poisson"
	ArrivalConstant Arrival = "constant"
	ArrivalGamma    Arrival = "gamma"
)

// Scope is what a check sees: one level, or the whole stage.
type Scope string

// Scopes.
const (
	ScopeLevel Scope = "level"
	ScopeStage Scope = "stage"
)

// Severity is what a failed check does to the run.
type Severity string

// Severities.
const (
	SeverityFail Severity = "fail" // fails the run
	SeverityWarn Severity = "warn" // reported only
)

// Sizing is how synthetic prompts are sized in tokens.
type Sizing string

// Sizings.
const (
	SizingCalibrated Sizing = "calibrated" // probe the server's tokenizer
	SizingReference  Sizing = "reference"  // the reference generator's tokens / 0.75 words
)

// Format is a prompt file's format.
type Format string

// Formats.
const (
	FormatAuto     Format = "auto" // by extension
	FormatJSONL    Format = "jsonl"
	FormatShareGPT Format = "sharegpt"
	FormatCSV      Format = "csv"
)

// TraceFormat is a trace file's format.
type TraceFormat string

// Trace formats.
const (
	TraceMooncake TraceFormat = "mooncake" // JSONL: timestamp (ms), input_length, output_length, hash_ids
	TraceAzure    TraceFormat = "azure"    // CSV: TIMESTAMP, ContextTokens, GeneratedTokens
	TraceRunner   TraceFormat = "runner"   // requests.jsonl of an earlier run
)

// Allowed values of the plan's enumerations, in the order messages list them.
var (
	APIs       = registeredAPIs()
	Modes      = []Mode{ModePinned, ModeNatural}
	Arrivals   = []Arrival{ArrivalPoisson, ArrivalConstant, ArrivalGamma}
	Scopes     = []Scope{ScopeLevel, ScopeStage}
	Severities = []Severity{SeverityFail, SeverityWarn}
	Sizings    = []Sizing{SizingCalibrated, SizingReference}
	Formats    = []Format{FormatAuto, FormatJSONL, FormatShareGPT, FormatCSV}
	// ExportProtocols are what an export block's to may say.
	ExportProtocols = []string{"prometheus-rw", "otlp"}
	// TraceFormats are the trace formats.
	TraceFormats = []TraceFormat{TraceMooncake, TraceAzure, TraceRunner}
)

// registeredAPIs is the protocol registry's names: one list of the APIs.
func registeredAPIs() []API {
	var out []API
	for _, n := range protocol.Names() {
		out = append(out, API(n))
	}
	return out
}

// conversational reports whether api's requests can carry a conversation's
// history (an unknown api is the enum check's error, not this one's).
func conversational(api API) bool { return is[protocol.Conversational](api, true) }

// conversationalAPIs names the APIs a multi-turn stage may use.
func conversationalAPIs() string { return namesOf[protocol.Conversational]() }

// is reports whether api's protocol is a T (one of protocol's optional
// interfaces); unknown is the answer for an api nobody registered.
func is[T any](api API, unknown bool) bool {
	p, ok := protocol.Lookup(string(api))
	if !ok {
		return unknown
	}
	_, yes := p.(T)
	return yes
}

// namesOf names the APIs whose protocol is a T: "a or b".
func namesOf[T any]() string {
	var names []string
	for _, p := range protocol.Registry {
		if _, ok := p.(T); ok {
			names = append(names, p.Name())
		}
	}
	return strings.Join(names, " or ")
}
