package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/checks"
	"github.com/runnerbench/runner/comparison"
	"github.com/runnerbench/runner/internal/exitcode"
	"github.com/runnerbench/runner/internal/logging"
	"github.com/runnerbench/runner/pipeline"
	"github.com/runnerbench/runner/records"
	"github.com/runnerbench/runner/reporters"
	"github.com/runnerbench/runner/reporters/html"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/runner"
)

// cmdRun implements "runner run PLAN.yaml" and "runner PLAN.yaml": load the
// plan, run it through the pipeline with its records going into the output
// directory, and write every report, also when the run is interrupted or a
// stage cannot run. The exit code says what happened: 130 interrupted, 3 the
// run could not be carried out, 1 a check failed, 0 every check passed.
func cmdRun(ctx context.Context, env *Env, args []string) error {
	opts, err := parseRunOptions(env, args)
	if err != nil {
		return err
	}
	p, err := loadPlan(env, opts)
	if err != nil {
		return err
	}
	stages, err := selectStages(p, opts.Stages)
	if err != nil {
		return err
	}
	if err := p.Labels.With(opts.Labels).Check(); err != nil {
		return exitcode.Errorf(exitcode.Invalid, "run: --label: the plan's labels and --label's together: %v", err)
	}
	sharding, err := shardingFor(env, opts, p, stages)
	if err != nil {
		return err
	}
	baseline, err := loadBaseline(opts.Baseline, opts.FailInconclusive)
	if err != nil {
		return err
	}
	// Before any traffic: a baseline of another plan, or lacking a stage or
	// level the plan will run, would leave checks comparing with nothing.
	if err := pipeline.CheckBaseline(p.Name, comparison.PlanWants(p, stages), stages, baseline); err != nil {
		return exitcode.Errorf(exitcode.Invalid, "--baseline %s %v", opts.Baseline, err)
	}
	after := publishAfter{dsn: opts.Publish, allowEnv: opts.AllowEnv, quiet: opts.Quiet}
	if err := after.check(ctx, env, "run"); err != nil {
		return err
	}
	log, err := logging.New(env.Stderr, opts.LogFormat, opts.LogLevel, env.StderrIsTerminal && env.lookup("NO_COLOR") == "")
	if err != nil {
		return exitcode.With(err, exitcode.Invalid)
	}
	outDir := opts.Out
	if outDir == "" {
		outDir = reporters.DefaultOutDir(p.Name, time.Now().UTC())
	}
	if err := prepareOutDir(outDir, opts.Baseline, log); err != nil {
		return err
	}
	// Records are appended as requests finish, so an interrupted or killed run
	// keeps everything already measured.
	recs, err := records.Create(outDir, p.Source)
	if err != nil {
		return exitcode.With(err, exitcode.RunFailed)
	}
	defer recs.Close()
	live := !opts.Quiet && !opts.NoProgress && env.StdoutIsTerminal && env.StderrIsTerminal
	progress := reporters.NewProgress(env.Stderr, live)
	defer progress.Close()
	log.Info().Str("plan", p.Path).Int("stages", len(stages)).Str("out", outDir).Msg("run starting")

	o := pipeline.Options{
		Plan: p, Stages: stages, Records: recs,
		Baseline:      baseline,
		RunnerVersion: VersionString(), Logger: log,
		Labels: opts.Labels, Host: hostName(),
		OnProgress:  func(u runner.Progress) { progress.Update(progressUpdate(u)) },
		OnLevelDone: progress.LevelDone,
		Sharding:    sharding,
	}
	if o.Export, err = exportOptions(opts, p); err != nil {
		return err
	}
	if !live {
		// No progress bar (CI, a pipe, --no-progress): one log line per
		// finished level, so a long level is not a silent minute in the log.
		o.OnLevel = func(stage string, pt *result.Point) { logLevel(log, stage, pt) }
	}
	rep, runErr := pipeline.Run(ctx, o)
	progress.Close()
	if err := recs.Close(); err != nil {
		log.Error().Err(err).Msg("closing the records")
	}
	writeErr := writeReports(env, opts, outDir, outDir, rep, baseline, log)
	if rep.StopReason != result.StopInterrupted {
		runErr = errors.Join(runErr, after.publish(ctx, env, "run", outDir))
	}
	return exitError(rep, runErr, writeErr)
}

// writeReports writes the file reports, the terminal table and the GitHub
// step summary; recDir holds the run's records (the HTML report draws its
// telemetry). Every output is attempted; the errors are joined.
func writeReports(env *Env, opts *RunOptions, outDir, recDir string, rep *result.Report, baseline *pipeline.Baseline, log zerolog.Logger) error {
	var errs []error
	var ro reporters.Options
	if baseline != nil {
		ro.Baseline = baseline.Report
	}
	if opts.HasReport(reporters.FormatHTML) {
		ro.Telemetry = telemetryOf(recDir, log)
	}
	err := reporters.WriteAll(outDir, rep, opts.Reports, ro)
	if err != nil {
		errs = append(errs, err)
	}
	color := reporters.UseColor(env.StdoutIsTerminal, env.Getenv)
	switch {
	case opts.Quiet:
		// --quiet: the verdict line, always, and nothing else on stdout.
		if err := reporters.WriteVerdict(env.Stdout, rep, color); err != nil {
			errs = append(errs, fmt.Errorf("write verdict: %w", err))
		}
	case opts.HasReport(reporters.FormatTable):
		if err := reporters.WriteTable(env.Stdout, rep, reporters.TableOptions{Color: color, Width: tableWidth(env, opts)}); err != nil {
			errs = append(errs, fmt.Errorf("write table: %w", err))
		}
	}
	if path := env.lookup("GITHUB_STEP_SUMMARY"); path != "" {
		log.Debug().Msg("appending to the GitHub step summary")
		if err := reporters.AppendGitHubStepSummary(path, rep); err != nil {
			errs = append(errs, err)
		}
	}
	log.Info().Str("dir", outDir).Str("verdict", rep.Verdict).Str("stop_reason", rep.StopReason).Msg("reports written")
	return errors.Join(errs...)
}

// exitError maps the finished run to its exit code: interrupted first, then a
// run that could not be carried out (an endpoint never ready, a stage that
// could not run, a level whose every request failed, a report not written),
// then failed checks. It reads the verdict's own predicates, so the exit
// code and report.json never disagree.
func exitError(rep *result.Report, runErr, writeErr error) error {
	if rep.StopReason == result.StopInterrupted {
		return exitcode.Errorf(exitcode.Interrupted, "interrupted: reports written with stop reason %q", rep.StopReason)
	}
	var problems []string
	if runErr != nil {
		problems = append(problems, runErr.Error())
	}
	if writeErr != nil {
		problems = append(problems, "reports: "+writeErr.Error())
	}
	problems = append(problems, checks.RunProblems(rep)...)
	if len(problems) > 0 {
		return exitcode.Errorf(exitcode.RunFailed, "%s", strings.Join(problems, "\n"))
	}
	gate, invalid := checks.GateProblem(rep)
	if invalid {
		return exitcode.Errorf(exitcode.Invalid, "--baseline %s: %s", rep.Baseline, gate)
	}
	var failed []string
	if f := checks.FailedChecks(rep); len(f) > 0 {
		failed = append(failed, fmt.Sprintf("%d check(s) failed: %s", len(f), strings.Join(f, "; ")))
	}
	if gate != "" {
		failed = append(failed, gate)
	}
	if len(failed) > 0 {
		return exitcode.Errorf(exitcode.ChecksFailed, "%s", strings.Join(failed, "\n"))
	}
	return nil
}

// loadBaseline reads the --baseline run (nil when path is empty): its
// report and, when its records are beside it, their per-request samples. A
// missing or unreadable one is a command-line error.
func loadBaseline(path string, failInconclusive bool) (*pipeline.Baseline, error) {
	if path == "" {
		if failInconclusive {
			return nil, exitcode.Errorf(exitcode.Invalid, "--fail-inconclusive needs --baseline: it fails a comparison with one that could judge nothing")
		}
		return nil, nil
	}
	rep, samples, err := readRun(path)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Invalid, "--baseline %s: %w", path, err)
	}
	return &pipeline.Baseline{Path: path, Report: rep, Samples: samples, FailInconclusive: failInconclusive}, nil
}

// logLevel logs one finished level: what a CI log shows where a terminal
// would show a progress bar.
func logLevel(log zerolog.Logger, stage string, p *result.Point) {
	ev := log.Info().Str("stage", stage).Str("level_label", p.Label()).
		Int("ok", p.Completed).Int("failed", p.Failed).Float64("duration_s", p.DurationS).
		Float64("output_tps_total", p.OutputTPSTotal)
	if p.TTFTP50Ms != nil {
		ev = ev.Float64("ttft_p50_ms", *p.TTFTP50Ms)
	}
	if p.MaxInFlight != nil {
		ev = ev.Int("max_in_flight", *p.MaxInFlight)
	}
	ev.Msg("level done")
}

// progressUpdate is the bar's part of the engine's progress.
func progressUpdate(u runner.Progress) reporters.ProgressUpdate {
	return reporters.ProgressUpdate{Stage: u.Stage, Level: u.Level, Label: u.Label, Done: u.Done,
		Total: u.Total, Failed: u.Failed, Elapsed: u.Elapsed, OutputTPS: u.OutputTPS,
		TTFTP50Ms: u.TTFTP50Ms, ITLP50Ms: u.ITLP50Ms, Duration: u.Duration}
}

// hostName is the machine's name as the run's facts record it; empty when
// the system will not say, or says something no report should show.
func hostName() string {
	h, err := os.Hostname()
	if err != nil || result.CheckLabelValue("host", h) != nil {
		return ""
	}
	return h
}

// telemetryOf is the run's telemetry reads (telemetry.jsonl in dir) as the
// HTML report draws them; nil when there are none, or when they cannot be
// read (said in the log: the report is written without them).
func telemetryOf(dir string, log zerolog.Logger) *html.Telemetry {
	var reads []*result.TelemetryScrape
	if err := records.EachTelemetry(dir, func(r *result.TelemetryScrape) error {
		reads = append(reads, r)
		return nil
	}); err != nil {
		log.Warn().Err(err).Msg("the HTML report is drawn without the telemetry")
		return nil
	}
	if len(reads) == 0 {
		return nil
	}
	tracks, undrawn := aggregate.Tracks(reads)
	return &html.Telemetry{Tracks: tracks, Undrawn: undrawn}
}
