package sim

import "github.com/runnerbench/runner/sim/simconfig"

// Config is the simulated engine's configuration (see simconfig.Config, which
// documents the timing model and every field).
type Config = simconfig.Config

// Faults are the injectable failures (see simconfig.Faults).
type Faults = simconfig.Faults

// FastConfig is the configuration for tests: 5 ms prefill, 1 ms per decode
// step, short natural outputs (see simconfig.FastConfig).
func FastConfig() Config { return simconfig.FastConfig() }
