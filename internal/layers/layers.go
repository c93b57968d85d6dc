// Package layers states the pipeline's layering, which its test holds the
// code to: every package imports only packages of its own layer or below.
//
//	plan → load → records → report → checks → run a plan → outputs → command line
//
// Layer 0 holds the leaves everyone may use: the data model and its metric
// catalogue (result), the histogram, the simulator's configuration and small
// helpers. docs/architecture.md draws the same picture.
package layers

// Layers lists each package (its path inside the module) by layer, lowest
// first. A package missing from the list fails the test: a new package must
// say where it stands.
var Layers = [][]string{
	{"result", "internal/hist", "internal/suggest", "internal/redact", "internal/mdtext", "internal/atomicfile", "internal/stats", "internal/dist", "internal/engines", "internal/exitcode", "internal/logging", "internal/testutil", "internal/gpuexporters", "internal/layers", "internal/render/chart", "internal/render/termtable", "internal/render/mdtable", "sim/simconfig", "protocol/sse", "protocol", "runner/telemetry", "runner/clock", "runner/host", "internal/rxtime"},
	{"trace"}, // trace files, which the plan loader reads
	{"scenario/planfs", "scenario/envpolicy", "scenario/promptfile", "scenario"}, // plan: its file and environment policy, its prompt files, the plan itself
	{"sim", "search"}, // the simulator; a capacity search's decisions
	{"runner/client", "runner/wire", "runner/synth", "runner/body", "runner/shape", "runner/shard", "runner/servermetrics", "runner"}, // load: the HTTP client and the wire, synthetic inputs and request bodies, shapes and sharding, then the engine
	{"records", "export"},                    // records; sending figures to Prometheus or OpenTelemetry
	{"aggregate", "comparison", "diagnosis"}, // report: the points, the comparison with a baseline, a sweep's knee and limit
	{"checks"},                               // checks
	{"stopping"},                             // when a level has its answer (until:), when a sweep is saturated
	{"pipeline"},                             // run a plan; open a finished run
	{"store"},                                // the results database: published runs' reports and its own rows
	{"board"},                                // many runs side by side: the board's model, build and loader
	{"reporters/html", "reporters", "reporters/compare", "history", "store/synthrun"}, // outputs; history
	{"cli", "runner/enginetest", "schema/internal/build", "schema", "schema/gen", "bench/cmd/runnerbench", "bench/cmd/ssecost", "bench/cmd/shardbench", "bench/cmd/gatestudy", "bench/cmd/untilstudy"},
	{"cmd/runner", "deploy/kubernetes"},
}
