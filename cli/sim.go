package cli

import (
	"context"
	"flag"
	"fmt"

	"github.com/runnerbench/runner/internal/exitcode"
	"github.com/runnerbench/runner/scenario"
	"github.com/runnerbench/runner/sim"
	"github.com/runnerbench/runner/sim/simconfig"
)

const simSynopsis = `runner sim [flags]

Serve the built-in engine simulator on a loopback address until interrupted.
Flags given on the command line override the --config file, which overrides
--fast, which overrides the defaults.`

// cmdSim implements "runner sim": it serves the simulator on a loopback
// address until ctx is cancelled, printing the base URL to stdout. Usage and
// config errors exit 2; a listen failure exits 3.
func cmdSim(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet("sim")
	var (
		listen     = fs.String("listen", "127.0.0.1:8000", "loopback `address` to listen on (127.0.0.1:PORT or [::1]:PORT)")
		configPath = fs.String("config", "", "simulator config `file` (YAML, the fields of a plan's simulator: block)")
		fast       = fs.Bool("fast", false, "start from the fast test config (ttft_ms 5, itl_ms 1)")
		zero       = fs.Bool("zero-latency", false, "emit tokens as fast as possible (no simulated time)")
		flagCfg    simconfig.Config
	)
	fs.StringVar(&flagCfg.Model, "model", "", "model `name` to serve (default \"sim\")")
	fs.Int64Var(&flagCfg.Seed, "seed", 0, "random `seed` (default 1)")
	fs.Float64Var(&flagCfg.TTFTMs, "ttft-ms", 0, "fixed prefill cost per scheduler step, `ms` (default 20)")
	fs.Float64Var(&flagCfg.PrefillMsPerToken, "prefill-ms-per-token", 0, "prefill cost per uncached prompt token, `ms` (default 0.02)")
	fs.Float64Var(&flagCfg.ITLMs, "itl-ms", 0, "decode step time with one sequence, `ms` (default 10)")
	fs.Float64Var(&flagCfg.ITLMsPerSeq, "itl-ms-per-seq", 0, "extra decode step time per additional running sequence, `ms`")
	fs.IntVar(&flagCfg.MaxNumSeqs, "max-num-seqs", 0, "continuous-batching limit, `n` sequences (default 256)")
	fs.IntVar(&flagCfg.SpecK, "spec-k", 0, "speculative-decoding draft length `k` (0 = off)")
	fs.Float64Var(&flagCfg.SpecAcceptance, "spec-acceptance", 0, "per-draft-token acceptance `probability` (default 0.7)")
	fs.IntVar(&flagCfg.ReasoningTokens, "reasoning-tokens", 0, "reasoning tokens before the answer, `n`")
	fs.Float64Var(&flagCfg.OutputMean, "output-mean", 0, "mean natural output length, `tokens` (default 128)")
	fs.Float64Var(&flagCfg.OutputStdev, "output-stdev", 0, "stdev of the natural output length, `tokens` (default 32)")
	fs.BoolVar(&flagCfg.NoMetrics, "no-metrics", false, "answer /metrics with 404")
	pos, err := parseArgs(env, fs, simSynopsis, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return exitcode.Errorf(exitcode.Invalid, "sim: unexpected argument %q", pos[0])
	}

	if err := sim.CheckLoopback(*listen); err != nil {
		return exitcode.With(fmt.Errorf("sim: %w", err), exitcode.Invalid)
	}
	var cfg simconfig.Config
	if *fast {
		cfg = simconfig.FastConfig()
	}
	if *configPath != "" {
		fileCfg, err := scenario.LoadSimConfig(*configPath)
		if err != nil {
			return exitcode.With(err, exitcode.Invalid)
		}
		cfg = simconfig.Overlay(cfg, fileCfg)
	}
	fs.Visit(func(f *flag.Flag) { overlayFlag(&cfg, &flagCfg, f.Name) })
	if *zero {
		cfg.ZeroLatency = true
	}
	if err := cfg.Defaults().Validate(); err != nil {
		return exitcode.With(fmt.Errorf("sim: %w", err), exitcode.Invalid)
	}
	s, err := sim.StartOn(ctx, *listen, cfg)
	if err != nil {
		return exitcode.With(fmt.Errorf("sim: %w", err), exitcode.RunFailed)
	}
	defer s.Close()
	fmt.Fprintf(env.Stdout, "runner sim: serving model %q at %s (Ctrl-C to stop)\n", s.Config().Model, s.URL())
	<-ctx.Done()
	return nil
}

// overlayFlag copies the setting of the flag named name from f onto cfg.
func overlayFlag(cfg, f *simconfig.Config, name string) {
	switch name {
	case "model":
		cfg.Model = f.Model
	case "seed":
		cfg.Seed = f.Seed
	case "ttft-ms":
		cfg.TTFTMs = f.TTFTMs
	case "prefill-ms-per-token":
		cfg.PrefillMsPerToken = f.PrefillMsPerToken
	case "itl-ms":
		cfg.ITLMs = f.ITLMs
	case "itl-ms-per-seq":
		cfg.ITLMsPerSeq = f.ITLMsPerSeq
	case "max-num-seqs":
		cfg.MaxNumSeqs = f.MaxNumSeqs
	case "spec-k":
		cfg.SpecK = f.SpecK
	case "spec-acceptance":
		cfg.SpecAcceptance = f.SpecAcceptance
	case "reasoning-tokens":
		cfg.ReasoningTokens = f.ReasoningTokens
	case "output-mean":
		cfg.OutputMean = f.OutputMean
	case "output-stdev":
		cfg.OutputStdev = f.OutputStdev
	case "no-metrics":
		cfg.NoMetrics = f.NoMetrics
	}
}
