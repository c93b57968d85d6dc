package cli

import (
	"context"
	"flag"
	"slices"
	"strings"

	"github.com/rs/zerolog"

	"github.com/runnerbench/runner/internal/exitcode"
	"github.com/runnerbench/runner/internal/logging"
	"github.com/runnerbench/runner/pipeline"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
)

const reportSynopsis = `runner report DIR [flags]

Recompute every report of a result directory (report.json, junit.xml,
summary.md, report.html and the table) from its records alone: plan.yaml,
run.jsonl and requests.jsonl. The checks are the ones the run recorded; with
--baseline they compare against that report. With --plan NEW.yaml they are
NEW's checks and SLOs instead, when NEW sends the load the run sent (exit 2
naming the first difference otherwise), and the report says which changed.
Exits as the run would have.`

// cmdReport implements "runner report DIR".
func cmdReport(_ context.Context, env *Env, args []string) error {
	fs := newFlagSet("report")
	o, reports := reportFlags(fs, "write the reports into this `dir`ectory instead of DIR")
	var rg regateFlags
	rg.register(fs)
	pos, err := parseArgs(env, fs, reportSynopsis, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return exitcode.Errorf(exitcode.Invalid, "report: expected one result directory, got %d", len(pos))
	}
	dir := pos[0]
	baseline, err := o.reportInputs(*reports)
	if err != nil {
		return err
	}
	log, _ := logging.New(env.Stderr, o.LogFormat, o.LogLevel, false)
	rep, err := rg.recompute(env, dir, baseline, log)
	if err != nil {
		return err
	}
	out := o.Out
	if out == "" {
		out = dir
	}
	if !within(out, dir) || !within(dir, out) { // another directory than DIR
		// Another directory gets this run's reports alone, as --out of a run does.
		if err := prepareOutDir(out, o.Baseline, log); err != nil {
			return err
		}
	}
	writeErr := writeReports(env, o, out, dir, rep, baseline, log)
	return exitError(rep, nil, writeErr)
}

// parseReportFormats parses a --report value: known names, repeats collapsed.
func parseReportFormats(s string) ([]string, error) {
	var out []string
	for _, r := range strings.Split(s, ",") {
		r = strings.TrimSpace(r)
		if r == "" {
			continue
		}
		if !slices.Contains(ReportFormats, r) {
			return nil, exitcode.Errorf(exitcode.Invalid, "--report: unknown format %q%s (one of %s)", r, suggest(r, ReportFormats), strings.Join(ReportFormats, ", "))
		}
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out, nil
}

// reportFlags registers the flags of the commands that compute reports from
// records (report, merge); outUsage says what --out is there. It returns
// the options and --report's value.
func reportFlags(fs *flag.FlagSet, outUsage string) (*RunOptions, *string) {
	o := &RunOptions{LogFormat: "text", LogLevel: "warn"}
	fs.StringVar(&o.Out, "out", "", outUsage)
	reports := fs.String("report", strings.Join(DefaultReports, ","), "comma-separated report `formats`: "+strings.Join(ReportFormats, ", "))
	fs.BoolVar(&o.Quiet, "quiet", false, "print only the verdict line on stdout")
	fs.StringVar(&o.Baseline, "baseline", "", "a previous run (its result `dir`ectory or report.json) to compare each level with; checks read it as baseline and worse()")
	o.registerGateFlags(fs)
	addCommonFlags(fs, &o.LogFormat, &o.LogLevel, &o.NoProgress, &o.Quiet, o.LogLevel) // their log
	o.registerWide(fs)
	return o, reports
}

// reportInputs parses --report into o and reads the --baseline run.
func (o *RunOptions) reportInputs(reports string) (*pipeline.Baseline, error) {
	var err error
	if o.Reports, err = parseReportFormats(reports); err != nil {
		return nil, err
	}
	return loadBaseline(o.Baseline, o.FailInconclusive)
}

// regateFlags are report's --plan and what the plan may read.
type regateFlags struct {
	plan string
	pf   planFlags
}

func (r *regateFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&r.plan, "plan", "", "judge the records with the checks and SLOs of this `plan` instead of the run's; its endpoints, prompts and stages' load must be the run's")
	r.pf.registerAllow(fs)
}

// recompute recomputes dir's report: with the run's checks, saying so when
// its plan.yaml was edited since (the edit changes nothing), or with
// --plan's.
func (r *regateFlags) recompute(env *Env, dir string, baseline *pipeline.Baseline, log zerolog.Logger) (*result.Report, error) {
	if r.plan == "" {
		if err := pipeline.EditedPlan(dir); err != nil {
			log.Warn().Msg(err.Error())
		}
		rep, err := pipeline.Recompute(dir, baseline)
		if err != nil {
			return nil, exitcode.Errorf(exitcode.Invalid, "report: %w", err)
		}
		return rep, nil
	}
	opts, err := r.pf.options(env, "report")
	if err != nil {
		return nil, err
	}
	next, err := scenario.Load(r.plan, opts)
	if err != nil {
		return nil, exitcode.With(err, exitcode.Invalid)
	}
	rep, err := pipeline.Regate(dir, baseline, next)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Invalid, "report: --plan %s: %w", r.plan, err)
	}
	return rep, nil
}
