package comparison

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/runnerbench/runner/protocol"
	"github.com/runnerbench/runner/result"
)

// What two runs must share to be compared is said here, once: compare and
// --baseline refuse a pair whose loads differ (Mismatch), the board ranks
// only stages of one load against each other and combines replicates of one
// Identity, and a history is a series only over runs of one Identity.

// Load is what a stage asked of the server: how the load was applied
// (closed loop, open loop, a trace; a search over one of them), the API,
// the mode, and the requested lengths. Two stages whose loads differ
// measured different things, whatever their names.
type Load struct {
	Kind   result.LoadKind
	Search bool
	API    string
	// Mode is pinned or natural; "" for an API without output (a report of
	// an earlier version said pinned there: the same measurement).
	Mode string
	// Input and Output are the tokens each request asked for (0: not fixed,
	// as for prompts from a file, or none); Lengths is false when they are
	// not known (a stage without a level).
	Input, Output int
	Lengths       bool
}

// NewLoad is a load of an API, with its mode read as a stage's: none for an
// API without output.
func NewLoad(kind result.LoadKind, search bool, api, mode string) Load {
	if !protocol.NameStreams(api) {
		mode = ""
	}
	return Load{Kind: kind, Search: search, API: api, Mode: mode}
}

// WithLengths is l with its requested lengths.
func (l Load) WithLengths(input, output int) Load {
	l.Input, l.Output, l.Lengths = input, output, true
	return l
}

// StageLoad is the load a report's stage ran: its lengths are its first
// point's (every point of a stage asks for the same).
func StageLoad(st *result.Stage) Load {
	l := NewLoad(st.Load, st.Search != nil, st.API, st.Mode)
	if len(st.Points) > 0 {
		l = l.WithLengths(st.Points[0].InputTokens, st.Points[0].OutputTokens)
	}
	return l
}

// String is the load as the board names a group by it: "concurrency, chat,
// pinned, in 128, out 32"; a search says what it varied.
func (l Load) String() string {
	load := string(l.Kind)
	if l.Search {
		load = "search over " + load
	}
	parts := []string{load, l.API}
	if l.Mode != "" {
		parts = append(parts, l.Mode)
	}
	if l.Input > 0 {
		parts = append(parts, fmt.Sprintf("in %d", l.Input))
	}
	if l.Output > 0 {
		parts = append(parts, fmt.Sprintf("out %d", l.Output))
	}
	return strings.Join(parts, ", ")
}

// Diff names each part of the load that differs from old's to l's, as
// "input tokens 128 → 256"; lengths count only when both are known.
func (l Load) Diff(old Load) []string {
	var out []string
	add := func(what, theirs, ours string) {
		if theirs != ours {
			out = append(out, fmt.Sprintf("%s %s → %s", what, orNothing(theirs), orNothing(ours)))
		}
	}
	kind := func(x Load) string {
		if x.Search {
			return "a search over " + string(x.Kind)
		}
		return string(x.Kind)
	}
	add("load", kind(old), kind(l))
	add("api", old.API, l.API)
	add("mode", old.Mode, l.Mode)
	if l.Lengths && old.Lengths {
		add("input tokens", lengthText(old.Input), lengthText(l.Input))
		add("output tokens", lengthText(old.Output), lengthText(l.Output))
	}
	return out
}

func lengthText(n int) string {
	if n == 0 {
		return "not fixed"
	}
	return strconv.Itoa(n)
}

func orNothing(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// SimulatorEndpoint is how an Identity names the built-in simulator, whose
// address is a new loopback port every run.
const SimulatorEndpoint = "the built-in simulator"

// Identity is what one series of runs shares: the load of the stage, the
// endpoint it was sent to, the model, and the run's labels (less the ones
// a caller names as telling replicates apart). Runs of one plan's stage
// that share it measured the same thing at different times; runs that do
// not are not one series, and their difference is not a change.
type Identity struct {
	Load Load
	// Endpoint is the base URL (SimulatorEndpoint for the built-in one).
	Endpoint string
	Model    string
	Labels   result.Labels
}

// StageIdentity is the identity of a run's stage: its load, endpoint and
// model, and the run's labels less those keys in ignore.
func StageIdentity(labels result.Labels, st *result.Stage, ignore []string) Identity {
	return Identity{Load: StageLoad(st), Endpoint: EndpointName(st.Endpoint), Model: st.Endpoint.Model, Labels: without(labels, ignore)}
}

// Distinct names each of ids by what tells it apart from the others: the
// labels whose values differ among them (those it has), then the endpoint,
// the model and the load where those differ ("engine=llama endpoint
// http://b/v1"); "" for each when they are all one.
func Distinct(ids []Identity) []string {
	out := make([]string, len(ids))
	if len(ids) < 2 {
		return out
	}
	differ := func(f func(Identity) string) bool {
		for _, id := range ids[1:] {
			if f(id) != f(ids[0]) {
				return true
			}
		}
		return false
	}
	keys := map[string]bool{}
	for _, id := range ids {
		for k := range id.Labels {
			keys[k] = true
		}
	}
	parts := make([][]string, len(ids))
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if differ(func(id Identity) string { v, ok := id.Labels[k]; return fmt.Sprint(ok, v) }) {
			for i, id := range ids {
				if v, ok := id.Labels[k]; ok {
					parts[i] = append(parts[i], k+"="+v)
				}
			}
		}
	}
	for _, f := range []struct {
		what string
		get  func(Identity) string
	}{
		{"endpoint", func(id Identity) string { return id.Endpoint }},
		{"model", func(id Identity) string { return id.Model }},
		{"load", func(id Identity) string { return id.Load.String() }},
	} {
		if differ(f.get) {
			for i, id := range ids {
				parts[i] = append(parts[i], f.what+" "+orNothing(f.get(id)))
			}
		}
	}
	for i := range ids {
		out[i] = strings.Join(parts[i], " ")
	}
	return out
}

// EndpointName is how an identity names an endpoint: its base URL, or
// SimulatorEndpoint.
func EndpointName(e result.Endpoint) string {
	if e.Simulator {
		return SimulatorEndpoint
	}
	return e.BaseURL
}

func without(l result.Labels, keys []string) result.Labels {
	var out result.Labels
	for k, v := range l {
		if slices.Contains(keys, k) {
			continue
		}
		if out == nil {
			out = result.Labels{}
		}
		out[k] = v
	}
	return out
}

// Without is id less the labels of keys (those that tell replicates apart).
func (id Identity) Without(keys []string) Identity {
	id.Labels = without(id.Labels, keys)
	return id
}

// Key is the identity as one comparable string.
func (id Identity) Key() string {
	return strings.Join([]string{id.Load.String(), strconv.FormatBool(id.Load.Lengths), id.Endpoint, id.Model, id.Labels.String()}, "\x00")
}

// Diff names what differs between two identities, from old to id: "label
// engine vllm → llama", "endpoint http://a/v1 → http://b/v1", "load ...".
func (id Identity) Diff(old Identity) []string {
	out := id.Load.Diff(old.Load)
	if old.Endpoint != id.Endpoint {
		out = append(out, fmt.Sprintf("endpoint %s → %s", orNothing(old.Endpoint), orNothing(id.Endpoint)))
	}
	if old.Model != id.Model {
		out = append(out, fmt.Sprintf("model %s → %s", orNothing(old.Model), orNothing(id.Model)))
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		seen := map[string]bool{}
		for _, l := range []result.Labels{old.Labels, id.Labels} {
			for k := range l {
				if !seen[k] {
					seen[k] = true
					if !yield(k) {
						return
					}
				}
			}
		}
	})
	for _, k := range keys {
		a, okA := old.Labels[k]
		b, okB := id.Labels[k]
		switch {
		case okA && okB && a != b:
			out = append(out, fmt.Sprintf("label %s %s → %s", k, a, b))
		case okA && !okB:
			out = append(out, fmt.Sprintf("label %s=%s dropped", k, a))
		case !okA && okB:
			out = append(out, fmt.Sprintf("label %s=%s added", k, b))
		}
	}
	return out
}
