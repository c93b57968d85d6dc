package cli

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/runnerbench/runner/export"
	"github.com/runnerbench/runner/internal/exitcode"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
	"github.com/runnerbench/runner/scenario/envpolicy"
)

// LogFormats and LogLevels are what --log-format and --log-level accept.
var (
	LogFormats = []string{"text", "json"}
	LogLevels  = []string{"debug", "info", "warn", "error"}
)

// RunOptions are the flags of "runner run" (and "runner PLAN.yaml").
type RunOptions struct {
	// PlanPath is the plan file.
	PlanPath string
	// Out is the output directory; "" means results/<plan>-<UTC timestamp>/.
	Out string
	// Reports are the report formats to write, from ReportFormats.
	Reports []string
	// Quiet prints the verdict line alone on stdout and only warnings and
	// errors on stderr (unless LogLevel was given), and implies NoProgress.
	Quiet bool
	// Baseline is a previous report.json that checks can compare against.
	Baseline string
	// FailInconclusive is --fail-inconclusive: a comparison with the
	// baseline that could judge nothing it matched fails the run.
	FailInconclusive bool
	// Stages limits the run to these stages (all when empty), in plan order.
	Stages []string
	// LogFormat is text or json; LogLevel is debug, info, warn or error.
	LogFormat string
	LogLevel  string
	// NoProgress turns the live progress display off.
	NoProgress bool
	// Wide draws the terminal table as wide as its content (--wide), not
	// fitted to the terminal.
	Wide bool
	// Publish is --publish DSN: the results database the run is written
	// into once its reports are (runner publish).
	Publish string
	// Labels are --label k=v (repeatable): added to the plan's labels,
	// overriding a key the plan gives too.
	Labels result.Labels
	// AllowEnv and AllowDirs are what the job allows the plan to read
	// (--allow-env, with RUNNER_ALLOW_ENV; --allow-dir): the plan cannot
	// widen them.
	AllowEnv  []string
	AllowDirs []string
	// Sets are --set PATH=VALUE overrides of plan fields, in order.
	Sets []string
	// ReadyTimeout is --ready-timeout: every endpoint's ready_timeout for
	// this run (0: the plan's).
	ReadyTimeout time.Duration
	// Slices is --slices: every stage's slices for this run (0: the plan's).
	Slices time.Duration
	// Shard is --shard i/N, Shards --shards N (the index from
	// $JOB_COMPLETION_INDEX); StartAt is --start-at (RFC 3339), and
	// SlotWarmup and SlotDrain a scheduled level slot's warm-up allowance
	// and drain bound (runner/shard).
	Shard      string
	Shards     int
	StartAt    string
	SlotWarmup time.Duration
	SlotDrain  time.Duration
	// Export are --export's targets; ExportInterval is --export-interval.
	Export         []export.Target
	ExportInterval time.Duration
}

// HasReport reports whether format was asked for.
func (o *RunOptions) HasReport(format string) bool { return slices.Contains(o.Reports, format) }

// labelFlag is the repeatable --label key=value; a later value of a key
// wins, as it does over the plan's.
type labelFlag result.Labels

func (l labelFlag) String() string { return result.Labels(l).String() }
func (l labelFlag) Set(v string) error {
	k, val, err := result.ParseLabel(v)
	if err != nil {
		return err
	}
	if _, ok := l[k]; !ok && len(l) >= result.MaxLabels {
		return fmt.Errorf("more than %d labels", result.MaxLabels)
	}
	l[k] = val
	return nil
}

// failInconclusiveUsage is --fail-inconclusive's help, one for every command.
const failInconclusiveUsage = "exit 1 when the comparison with the baseline could judge nothing it matched (every gated comparison inconclusive)"

// registerGateFlags registers the baseline gate's flags of run, report and merge.
func (o *RunOptions) registerGateFlags(fs *flag.FlagSet) {
	fs.BoolVar(&o.FailInconclusive, "fail-inconclusive", false, failInconclusiveUsage)
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

const runSynopsis = "runner [run] PLAN.yaml [flags]\n\nRun every stage of the plan (or those named by --stage) and write the reports.\nFlags may come before or after the plan."

// parseRunOptions parses the arguments of "runner run".
func parseRunOptions(env *Env, args []string) (*RunOptions, error) {
	fs := newFlagSet("run")
	o := &RunOptions{}
	var reports string
	var stages stringList
	fs.StringVar(&o.Out, "out", "", "output `dir`ectory (default results/<plan>-<UTC timestamp>/)")
	fs.StringVar(&reports, "report", strings.Join(DefaultReports, ","), "comma-separated report `formats`: "+strings.Join(ReportFormats, ", "))
	fs.BoolVar(&o.Quiet, "quiet", false, "print only the verdict line on stdout, and only warnings and errors on stderr")
	fs.StringVar(&o.Baseline, "baseline", "", "a previous run (its result `dir`ectory or report.json) to compare each level with; checks read it as baseline and worse()")
	o.registerGateFlags(fs)
	fs.Var(&stages, "stage", "run only this stage `name` (repeatable)")
	fs.StringVar(&o.LogFormat, "log-format", "text", "log `format`: text or json")
	fs.StringVar(&o.LogLevel, "log-level", "info", "log `level`: debug, info, warn or error")
	fs.BoolVar(&o.NoProgress, "no-progress", false, "no live progress display")
	o.registerWide(fs)
	fs.StringVar(&o.Publish, "publish", "", "publish the run into this results `database` once its reports are written (see runner publish --help)")
	var pf planFlags
	pf.register(fs)
	o.registerShardFlags(fs)
	o.registerExportFlags(fs)
	labels := labelFlag{}
	fs.Var(&labels, "label", "`key=value` recorded with the run, adding to or overriding the plan's labels (repeatable; a key is a letter then letters, digits, _ . -, at most 64 bytes; a value one line of at most 256 bytes)")
	fs.DurationVar(&o.ReadyTimeout, "ready-timeout", 0, "how long to wait for each endpoint to answer before the first stage (`DUR`ation), instead of the plan's ready_timeout")
	fs.DurationVar(&o.Slices, "slices", 0, "cut every level of every stage into time slices of this `DUR`ation (e.g. 10s), as a stage's slices does (per-slice figures in report.json, a steadiness verdict, charts over time)")
	pos, err := parseArgs(env, fs, runSynopsis, args)
	if err != nil {
		return nil, err
	}
	if len(labels) > 0 {
		o.Labels = result.Labels(labels)
	}
	o.AllowEnv, o.AllowDirs, o.Sets = pf.allowEnv, pf.allowDirs, pf.sets
	switch len(pos) {
	case 0:
		return nil, exitcode.Errorf(exitcode.Invalid, "run: no plan given (usage: runner PLAN.yaml [flags])")
	case 1:
		o.PlanPath = pos[0]
	default:
		return nil, exitcode.Errorf(exitcode.Invalid, "run: one plan at a time, got %d: %s", len(pos), strings.Join(pos, " "))
	}
	o.Stages = stages
	if o.Reports, err = parseReportFormats(reports); err != nil {
		return nil, err
	}
	if !slices.Contains(LogFormats, o.LogFormat) {
		return nil, exitcode.Errorf(exitcode.Invalid, "run: --log-format: %q is not one of %s", o.LogFormat, strings.Join(LogFormats, ", "))
	}
	if !slices.Contains(LogLevels, o.LogLevel) {
		return nil, exitcode.Errorf(exitcode.Invalid, "run: --log-level: %q is not one of %s%s", o.LogLevel, strings.Join(LogLevels, ", "), suggest(o.LogLevel, LogLevels))
	}
	if o.Quiet {
		// Quiet: the verdict line on stdout, problems on stderr; a
		// --log-level given explicitly still wins.
		o.NoProgress = true
		explicit := false
		fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "log-level" })
		if !explicit {
			o.LogLevel = "warn"
		}
	}
	return o, nil
}

// selectStages returns the plan's stages named in names (all when empty), in
// plan order; an unknown name is a command-line error.
func selectStages(p *scenario.Plan, names []string) ([]*scenario.Stage, error) {
	if len(names) == 0 {
		return p.Stages, nil
	}
	all := make([]string, len(p.Stages))
	for i, s := range p.Stages {
		all[i] = s.Name
	}
	for _, n := range names {
		if !slices.Contains(all, n) {
			return nil, exitcode.Errorf(exitcode.Invalid, "--stage: plan %s has no stage %q%s (stages: %s)", p.Path, n, suggest(n, all), strings.Join(all, ", "))
		}
	}
	var out []*scenario.Stage
	for _, s := range p.Stages {
		if slices.Contains(names, s.Name) {
			out = append(out, s)
		}
	}
	return out, nil
}

// loadPlan loads and validates the plan of a run, with what the job allows
// it; its problems carry exitcode.Invalid.
func loadPlan(env *Env, o *RunOptions) (*scenario.Plan, error) {
	pf := planFlags{allowEnv: o.AllowEnv, allowDirs: o.AllowDirs, sets: o.Sets}
	opts, err := pf.options(env, "run")
	if err != nil {
		return nil, err
	}
	p, err := scenario.Load(o.PlanPath, opts)
	if err != nil {
		return nil, exitcode.With(err, exitcode.Invalid)
	}
	if err := o.applyReadyTimeout(p); err != nil {
		return nil, err
	}
	if err := o.applySlices(p); err != nil {
		return nil, err
	}
	return p, nil
}

// planFlags are the flags with which the job, not the plan, decides what a
// plan may read: environment variables (and where their values may go) and
// directories besides the plan's own. run and validate share them.
type planFlags struct {
	allowEnv  stringList
	allowDirs stringList
	sets      stringList // --set PATH=VALUE, in order
}

func (pf *planFlags) register(fs *flag.FlagSet) {
	pf.registerAllow(fs)
	fs.Var(&pf.sets, "set", "override a plan field for this run: `PATH=VALUE`, VALUE in YAML, PATH dotted with stages and list elements by name "+
		"(stages.sweep.concurrency=[1,2], endpoints.target.base_url=http://127.0.0.1:8001/v1); repeatable, validated as the plan is, "+
		"and the recorded plan.yaml holds the result")
}

// registerAllow registers --allow-env and --allow-dir alone (report --plan).
func (pf *planFlags) registerAllow(fs *flag.FlagSet) {
	fs.Var(&pf.allowEnv, "allow-env", "`NAME[@HOST,...]` may be read by the plan: NAME alone as a public value (any field, any host, shown in reports), "+
		"NAME@HOST as a credential for those hosts only (api_key, headers, a URL's password), never shown; * is every variable; "+
		"repeatable, and read from "+envpolicy.AllowEnvVar+" too (entries separated by spaces); see docs/security.md")
	fs.Var(&pf.allowDirs, "allow-dir", "let the plan read files in `DIR` besides its own directory (repeatable)")
}

// options builds the loader's options from the flags and RUNNER_ALLOW_ENV;
// a malformed entry or a missing directory is a command-line error.
func (pf *planFlags) options(env *Env, cmd string) (scenario.Options, error) {
	allow := &envpolicy.AllowList{}
	if v := env.lookup(envpolicy.AllowEnvVar); v != "" {
		if err := allow.Add(envpolicy.AllowEnvVar, v); err != nil {
			return scenario.Options{}, exitcode.Errorf(exitcode.Invalid, "%s: %v", cmd, err)
		}
	}
	for _, spec := range pf.allowEnv {
		if err := allow.Add("--allow-env", spec); err != nil {
			return scenario.Options{}, exitcode.Errorf(exitcode.Invalid, "%s: %v", cmd, err)
		}
	}
	for _, d := range pf.allowDirs {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			return scenario.Options{}, exitcode.Errorf(exitcode.Invalid, "%s: --allow-dir %s: not a directory", cmd, d)
		}
	}
	var sets []scenario.Set
	for _, arg := range pf.sets {
		s, err := scenario.ParseSet("--set", arg)
		if err != nil {
			return scenario.Options{}, exitcode.Errorf(exitcode.Invalid, "%s: %v", cmd, err)
		}
		sets = append(sets, s)
	}
	return scenario.Options{Getenv: env.Getenv, AllowEnv: allow, AllowDirs: pf.allowDirs, Sets: sets}, nil
}

// applySlices sets every stage's slices to --slices, when it was given.
func (o *RunOptions) applySlices(p *scenario.Plan) error {
	switch {
	case o.Slices == 0:
		return nil
	case o.Slices < scenario.MinSlice || o.Slices > scenario.MaxSlice:
		return exitcode.Errorf(exitcode.Invalid, "run: --slices: %s is not between %s and %s", o.Slices, scenario.MinSlice, scenario.MaxSlice)
	}
	for _, st := range p.Stages {
		st.Slices = scenario.Duration(o.Slices)
	}
	return nil
}

// applyReadyTimeout sets every endpoint's ready_timeout to --ready-timeout,
// when it was given.
func (o *RunOptions) applyReadyTimeout(p *scenario.Plan) error {
	switch {
	case o.ReadyTimeout < 0:
		return exitcode.Errorf(exitcode.Invalid, "run: --ready-timeout: %s is negative", o.ReadyTimeout)
	case o.ReadyTimeout == 0:
		return nil
	}
	for _, ep := range p.Endpoints {
		ep.ReadyTimeout = scenario.Duration(o.ReadyTimeout)
	}
	return nil
}
