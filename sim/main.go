package sim

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"gopkg.in/yaml.v3"

	"github.com/runnerbench/runner/internal/exitcode"
)

// Main implements `runner sim [flags]`: args are the flags after "sim". It
// serves the simulator on a loopback address until ctx is cancelled, printing
// the base URL to stdout. Usage and config errors carry exitcode.Invalid; a
// listen failure carries exitcode.RunFailed.
//
// Flags given on the command line override the --config file, which overrides
// --fast, which overrides the defaults.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("runner sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: runner sim [flags]\n\nServe the built-in engine simulator on a loopback address.\n\nflags:")
		fs.PrintDefaults()
	}
	var (
		listen     = fs.String("listen", "127.0.0.1:8000", "loopback `address` to listen on (127.0.0.1:PORT or [::1]:PORT)")
		configPath = fs.String("config", "", "simulator config `file` (YAML, the fields of a plan's simulator: block)")
		fast       = fs.Bool("fast", false, "start from the fast test config (ttft_ms 5, itl_ms 1)")
		zero       = fs.Bool("zero-latency", false, "emit tokens as fast as possible (no simulated time)")
		flagCfg    Config
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
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return exitcode.With(fmt.Errorf("sim: %w", err), exitcode.Invalid)
	}
	if fs.NArg() > 0 {
		return exitcode.Errorf(exitcode.Invalid, "sim: unexpected argument %q", fs.Arg(0))
	}
	if err := checkLoopback(*listen); err != nil {
		return exitcode.With(fmt.Errorf("sim: %w", err), exitcode.Invalid)
	}

	var cfg Config
	if *fast {
		cfg = FastConfig()
	}
	if *configPath != "" {
		fileCfg, err := LoadConfig(*configPath)
		if err != nil {
			return exitcode.With(fmt.Errorf("sim: %w", err), exitcode.Invalid)
		}
		cfg = overlay(cfg, fileCfg)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	cfg = overlayFlags(cfg, flagCfg, set)
	if *zero {
		cfg.ZeroLatency = true
	}
	if err := cfg.Defaults().Validate(); err != nil {
		return exitcode.With(fmt.Errorf("sim: %w", err), exitcode.Invalid)
	}

	s, err := StartOn(ctx, *listen, cfg)
	if err != nil {
		return exitcode.With(fmt.Errorf("sim: %w", err), exitcode.RunFailed)
	}
	defer s.Close()
	fmt.Fprintf(stdout, "runner sim: serving model %q at %s (Ctrl-C to stop)\n", s.cfg.Model, s.URL())
	<-ctx.Done()
	return nil
}

// LoadConfig reads a simulator config file strictly: an unknown key is an
// error, with its line.
func LoadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("reading simulator config: %w", err)
	}
	return ParseConfig(data, path)
}

// ParseConfig decodes YAML simulator config strictly; name labels errors.
func ParseConfig(data []byte, name string) (Config, error) {
	var cfg Config
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
		return Config{}, fmt.Errorf("%s: %w", name, err)
	}
	return cfg, nil
}

// overlay returns base with every non-zero field of top copied over it.
func overlay(base, top Config) Config {
	// Round-trip through YAML with omitempty: only the fields top sets are
	// written, and decoding them onto base replaces exactly those.
	out, err := yaml.Marshal(top)
	if err != nil {
		return top
	}
	if err := yaml.Unmarshal(out, &base); err != nil {
		return top
	}
	return base
}

func overlayFlags(cfg, f Config, set map[string]bool) Config {
	if set["model"] {
		cfg.Model = f.Model
	}
	if set["seed"] {
		cfg.Seed = f.Seed
	}
	if set["ttft-ms"] {
		cfg.TTFTMs = f.TTFTMs
	}
	if set["prefill-ms-per-token"] {
		cfg.PrefillMsPerToken = f.PrefillMsPerToken
	}
	if set["itl-ms"] {
		cfg.ITLMs = f.ITLMs
	}
	if set["itl-ms-per-seq"] {
		cfg.ITLMsPerSeq = f.ITLMsPerSeq
	}
	if set["max-num-seqs"] {
		cfg.MaxNumSeqs = f.MaxNumSeqs
	}
	if set["spec-k"] {
		cfg.SpecK = f.SpecK
	}
	if set["spec-acceptance"] {
		cfg.SpecAcceptance = f.SpecAcceptance
	}
	if set["reasoning-tokens"] {
		cfg.ReasoningTokens = f.ReasoningTokens
	}
	if set["output-mean"] {
		cfg.OutputMean = f.OutputMean
	}
	if set["output-stdev"] {
		cfg.OutputStdev = f.OutputStdev
	}
	if set["no-metrics"] {
		cfg.NoMetrics = f.NoMetrics
	}
	return cfg
}
