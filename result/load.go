package result

// LoadKind is what a stage's levels vary: one list of the kinds, typed, for
// the engine that names them and the reporters that read them.
type LoadKind string

// The load kinds.
const (
	LoadConcurrency LoadKind = "concurrency" // closed loop: streams in flight
	LoadRate        LoadKind = "rate"        // open loop: arrivals per second
	LoadTrace       LoadKind = "trace"       // a trace replayed on its own clock
	LoadUsers       LoadKind = "users"       // closed loop of users who think between requests
)

// LoadKinds lists them: the report schema's enum of a stage's load
// (go generate ./schema). TestLoadKindsListsEveryKind holds it to the
// constants above.
var LoadKinds = []LoadKind{LoadConcurrency, LoadRate, LoadTrace, LoadUsers}
