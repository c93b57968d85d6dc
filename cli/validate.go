package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"gopkg.in/yaml.v3"

	"github.com/runnerbench/runner/internal/exitcode"
	"github.com/runnerbench/runner/internal/redact"
	"github.com/runnerbench/runner/scenario"
)

const validateSynopsis = "runner validate PLAN.yaml... [flags]\n\nCheck plans: structure, references, values, prompt files and check expressions.\nNo traffic is sent. Every problem is printed as file:line:col: message.\n\"-\" reads a plan from stdin (prompt files relative to the current directory)."

// cmdValidate implements "runner validate".
func cmdValidate(_ context.Context, env *Env, args []string) error {
	fs := newFlagSet("validate")
	print := fs.Bool("print", false, "print each plan as resolved (defaults applied, ${VAR} expanded, secrets redacted)")
	quiet := fs.Bool("quiet", false, "print only problems")
	var pf planFlags
	pf.register(fs)
	paths, err := parseArgs(env, fs, validateSynopsis, args)
	if err != nil {
		return err
	}
	opts, err := pf.options(env, "validate")
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		return exitcode.Errorf(exitcode.Invalid, "validate: no plan given (usage: runner validate PLAN.yaml...)")
	}
	var errs []error
	for _, path := range paths {
		p, err := loadForValidate(env, path, opts)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if *print {
			fmt.Fprintf(env.Stdout, "# %s (resolved)\n", path)
			enc := yaml.NewEncoder(env.Stdout)
			enc.SetIndent(2)
			if err := enc.Encode(redactURLs(p)); err != nil {
				return fmt.Errorf("validate: print %s: %w", path, err)
			}
			if err := enc.Close(); err != nil {
				return fmt.Errorf("validate: print %s: %w", path, err)
			}
			continue
		}
		if !*quiet {
			fmt.Fprintf(env.Stdout, "%s: ok (%s)\n", path, summary(p))
		}
	}
	if len(errs) > 0 {
		return exitcode.With(errors.Join(errs...), exitcode.Invalid)
	}
	return nil
}

// summary says what a plan holds, in a few words.
func summary(p *scenario.Plan) string {
	levels, checks := 0, 0
	for _, s := range p.Stages {
		levels += len(s.Concurrency) + len(s.Rate) + len(s.Users)
		if s.Replay != nil || s.Series != nil {
			levels++ // a replay, or a series, is one level
		}
		checks += len(s.Checks)
	}
	return fmt.Sprintf("%s, %s, %s, %s, %s",
		plural(len(p.Endpoints), "endpoint"), plural(len(p.Prompts), "prompt set"),
		plural(len(p.Stages), "stage"), plural(levels, "level"), plural(checks, "check"))
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// loadForValidate loads a plan file, or stdin for "-".
func loadForValidate(env *Env, path string, opts scenario.Options) (*scenario.Plan, error) {
	if path != "-" {
		return scenario.Load(path, opts)
	}
	if env.Stdin == nil {
		return nil, exitcode.Errorf(exitcode.Invalid, "validate: no stdin")
	}
	data, err := io.ReadAll(io.LimitReader(env.Stdin, scenario.MaxPlanBytes+1))
	if err != nil {
		return nil, fmt.Errorf("validate: read stdin: %w", err)
	}
	return scenario.LoadBytes("<stdin>", data, ".", opts)
}

// redactURLs returns a copy of p whose endpoint URLs show no password
// (http://user:%5BREDACTED%5D@host) and no value of a query parameter named
// like a credential (?api_key=%5BREDACTED%5D): base_url and metrics_url are plain
// strings, not secrets, but people do put credentials in them.
func redactURLs(p *scenario.Plan) *scenario.Plan {
	cp := *p
	cp.Endpoints = make(map[string]*scenario.Endpoint, len(p.Endpoints))
	for name, ep := range p.Endpoints {
		if ep == nil {
			cp.Endpoints[name] = nil
			continue
		}
		e := *ep
		e.BaseURL, e.MetricsURL = redact.URLInPlan(e.BaseURL), redact.URLInPlan(e.MetricsURL)
		cp.Endpoints[name] = &e
	}
	cp.Export = make([]*scenario.Export, len(p.Export))
	for i, x := range p.Export {
		if x != nil {
			y := *x
			y.URL = redact.URLInPlan(y.URL)
			cp.Export[i] = &y
		}
	}
	return &cp
}
