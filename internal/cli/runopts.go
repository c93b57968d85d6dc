package cli

import (
	"slices"
	"strings"

	"github.com/runnerbench/runner/internal/exitcode"
	"github.com/runnerbench/runner/scenario"
)

// ReportFormats are the report formats --report accepts (reporters.Formats).
var ReportFormats = []string{"table", "json", "junit", "markdown", "html"}

// DefaultReports is what --report is when not given.
var DefaultReports = []string{"table", "json", "junit", "markdown", "html"}

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
	// Quiet prints only problems and the verdict (and implies NoProgress).
	Quiet bool
	// Baseline is a previous report.json that checks can compare against.
	Baseline string
	// Stages limits the run to these stages (all when empty), in plan order.
	Stages []string
	// LogFormat is text or json; LogLevel is debug, info, warn or error.
	LogFormat string
	LogLevel  string
	// NoProgress turns the live progress display off.
	NoProgress bool
}

// HasReport reports whether format was asked for.
func (o *RunOptions) HasReport(format string) bool { return slices.Contains(o.Reports, format) }

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
	fs.BoolVar(&o.Quiet, "quiet", false, "print only problems and the verdict")
	fs.StringVar(&o.Baseline, "baseline", "", "a previous report.json `file` that checks can compare against (baseline.*)")
	fs.Var(&stages, "stage", "run only this stage `name` (repeatable)")
	fs.StringVar(&o.LogFormat, "log-format", "text", "log `format`: text or json")
	fs.StringVar(&o.LogLevel, "log-level", "info", "log `level`: debug, info, warn or error")
	fs.BoolVar(&o.NoProgress, "no-progress", false, "no live progress display")
	pos, err := parseArgs(env, fs, runSynopsis, args)
	if err != nil {
		return nil, err
	}
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
		o.NoProgress = true
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

// loadPlan loads and validates a plan; its problems carry exitcode.Invalid.
func loadPlan(env *Env, path string) (*scenario.Plan, error) {
	p, err := scenario.Load(path, env.Getenv)
	if err != nil {
		return nil, exitcode.With(err, exitcode.Invalid)
	}
	return p, nil
}
