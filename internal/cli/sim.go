package cli

import (
	"context"

	"github.com/runnerbench/runner/sim"
)

// cmdSim implements "runner sim": the simulator parses its own flags.
func cmdSim(ctx context.Context, env *Env, args []string) error {
	return sim.Main(ctx, args, env.Stdout, env.Stderr)
}
