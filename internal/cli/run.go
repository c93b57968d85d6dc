package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/runnerbench/runner/internal/exitcode"
	"github.com/runnerbench/runner/internal/logging"
	"github.com/runnerbench/runner/reporters"
	"github.com/runnerbench/runner/reporters/html"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/runner"
	"github.com/runnerbench/runner/runner/checks"
	"github.com/runnerbench/runner/scenario"
	"github.com/runnerbench/runner/sim"
)

// cmdRun implements "runner run PLAN.yaml" and "runner PLAN.yaml": load the
// plan, start any in-process simulators, wait for every endpoint, run the
// selected stages, evaluate their checks, and write every report, also when
// the run is interrupted or a stage cannot run. The exit code says what
// happened: 130 interrupted, 3 the run could not be carried out, 1 a check
// failed, 0 every check passed.
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
	var baseline *result.Report
	if opts.Baseline != "" {
		if baseline, err = loadBaseline(opts.Baseline); err != nil {
			return err
		}
	}
	log, err := logging.New(env.Stderr, opts.LogFormat, opts.LogLevel, env.StderrIsTerminal && env.lookup("NO_COLOR") == "")
	if err != nil {
		return exitcode.With(err, exitcode.Invalid)
	}

	started := time.Now().UTC()
	outDir := opts.Out
	if outDir == "" {
		outDir = reporters.DefaultOutDir(p.Name, started)
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return exitcode.With(fmt.Errorf("create output directory: %w", err), exitcode.RunFailed)
	}
	// Records are appended as requests finish, so an interrupted or killed run
	// keeps everything already measured.
	records, err := reporters.NewJSONL(filepath.Join(outDir, reporters.FileRequests))
	if err != nil {
		return exitcode.With(err, exitcode.RunFailed)
	}
	defer records.Close()

	r := &execution{
		env: env, opts: opts, plan: p, log: log, records: records,
		progress: reporters.NewProgress(env.Stderr, !opts.Quiet && !opts.NoProgress && env.StdoutIsTerminal && env.StderrIsTerminal),
		report: &result.Report{
			SchemaVersion: result.SchemaVersion,
			RunnerVersion: VersionString(),
			Plan:          result.Plan{Name: p.Name, Path: p.Path, Hash: p.Hash},
			StartedAt:     started,
			StopReason:    result.StopCompleted,
			Baseline:      opts.Baseline,
		},
	}
	defer r.progress.Close()
	log.Info().Str("plan", p.Path).Int("stages", len(stages)).Str("out", outDir).Msg("run starting")

	runErr := r.execute(ctx, stages, baseline)
	if ctx.Err() != nil {
		r.report.StopReason = result.StopInterrupted
	} else if runErr != nil {
		r.report.StopReason = result.StopError
		r.report.Warnings = append(r.report.Warnings, runErr.Error())
	}
	r.report.EndedAt = time.Now().UTC()
	r.report.Verdict = verdict(r.report)
	r.progress.Close()
	if err := records.Close(); err != nil {
		log.Error().Err(err).Msg("closing requests.jsonl")
	}

	writeErr := r.writeReports(outDir, baseline)
	return exitError(r.report, runErr, writeErr)
}

// execution carries one execution's state.
type execution struct {
	env      *Env
	opts     *RunOptions
	plan     *scenario.Plan
	log      zerolog.Logger
	records  *reporters.JSONLWriter
	progress *reporters.Progress
	report   *result.Report
}

// execute starts the endpoints and runs the stages. It returns an error only
// when the run could not be carried out (an endpoint never became ready);
// stage failures are recorded in the report.
func (r *execution) execute(ctx context.Context, stages []*scenario.Stage, baseline *result.Report) error {
	if need, stage := filesNeeded(r.plan, stages); need > 0 {
		// Before any endpoint or simulator starts: a level with more streams
		// than the process may open sockets for would fail part-way with
		// "too many open files" inside its measured window.
		if err := runner.RaiseFileLimit(need); err != nil {
			return fmt.Errorf("stage %s needs %d sockets at once (an in-process simulator counts both ends): %w", stage, need, err)
		}
	}
	engines, closeAll, err := r.startEndpoints(ctx, stages)
	defer closeAll()
	if err != nil {
		return err
	}
	for _, st := range stages {
		if ctx.Err() != nil {
			break
		}
		eng := engines[st.Endpoint]
		res, err := eng.RunStage(ctx, r.plan, st)
		if res == nil {
			res = &result.Stage{Name: st.Name, API: st.API, Mode: st.Mode}
		}
		if err != nil && ctx.Err() == nil {
			res.Error = err.Error()
			r.log.Error().Str("stage", st.Name).Err(err).Msg("stage could not run")
		}
		baseStage := checks.BaselineStage(baseline, st.Name)
		res.Checks = checks.EvaluateStage(st, res, baseStage)
		if baseline != nil {
			r.report.Warnings = append(r.report.Warnings, baselineGaps(r.opts.Baseline, baseStage, res)...)
		}
		r.report.Stages = append(r.report.Stages, *res)
		if err := r.records.Flush(); err != nil {
			r.log.Error().Err(err).Msg("flushing requests.jsonl")
		}
		r.log.Info().Str("stage", st.Name).Int("levels", len(res.Points)).Msg("stage done")
	}
	return nil
}

// startEndpoints starts the simulators the selected stages use, builds one
// engine per endpoint and waits until each answers. The returned func closes
// everything it started.
func (r *execution) startEndpoints(ctx context.Context, stages []*scenario.Stage) (map[string]*runner.Engine, func(), error) {
	engines := map[string]*runner.Engine{}
	var closers []func()
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	for _, st := range stages {
		name := st.Endpoint
		if engines[name] != nil {
			continue
		}
		ep := r.plan.Endpoints[name]
		baseURL := ep.BaseURL
		if ep.Simulator != nil {
			srv, err := sim.Start(ctx, *ep.Simulator)
			if err != nil {
				return engines, closeAll, fmt.Errorf("endpoint %s: start the simulator: %w", name, err)
			}
			closers = append(closers, func() { _ = srv.Close() })
			baseURL = srv.URL()
			r.log.Info().Str("endpoint", name).Str("url", baseURL).Msg("simulator started")
		}
		eng, err := runner.NewEngine(runner.Target{Name: name, Endpoint: ep, BaseURL: baseURL}, runner.Options{
			Logger:    r.log,
			OnRequest: r.record,
			OnProgress: func(p runner.Progress) {
				r.progress.Update(reporters.ProgressUpdate(p))
			},
			OnLevelDone: func(string, int) {
				r.progress.LevelDone()
				if err := r.records.Flush(); err != nil {
					r.log.Error().Err(err).Msg("flushing requests.jsonl")
				}
			},
		})
		if err != nil {
			return engines, closeAll, fmt.Errorf("endpoint %s: %w", name, err)
		}
		closers = append(closers, eng.Close)
		engines[name] = eng
		wait := ep.ReadyTimeout.D()
		r.log.Info().Str("endpoint", name).Str("timeout", wait.String()).Msg("waiting for the endpoint")
		if err := eng.WaitReady(ctx, wait); err != nil {
			if ctx.Err() != nil {
				return engines, closeAll, nil
			}
			return engines, closeAll, err // names the endpoint, the timeout and the URLs tried
		}
	}
	return engines, closeAll, nil
}

// record appends one finished request to requests.jsonl. It is called from
// every stream's goroutine; the writer is safe for that.
func (r *execution) record(req *result.Request) {
	if err := r.records.Write(req); err != nil && !errors.Is(err, reporters.ErrClosed) {
		r.log.Error().Err(err).Msg("writing requests.jsonl")
	}
}

// writeReports writes the file reports, the terminal table and the GitHub
// step summary. Every output is attempted; the errors are joined.
func (r *execution) writeReports(outDir string, baseline *result.Report) error {
	var errs []error
	err := reporters.WriteAll(outDir, r.report, r.opts.Reports, reporters.Options{
		HTML: func(w io.Writer, rep *result.Report) error { return html.Write(w, rep, baseline) },
	})
	if err != nil {
		errs = append(errs, err)
	}
	if r.opts.HasReport(reporters.FormatTable) && (!r.opts.Quiet || r.report.Verdict != result.StatusPass) {
		color := reporters.UseColor(r.env.StdoutIsTerminal, r.env.Getenv)
		if err := reporters.WriteTable(r.env.Stdout, r.report, reporters.TableOptions{Color: color}); err != nil {
			errs = append(errs, fmt.Errorf("write table: %w", err))
		}
	}
	if path := r.env.lookup("GITHUB_STEP_SUMMARY"); path != "" {
		if err := reporters.AppendGitHubStepSummary(path, r.report); err != nil {
			errs = append(errs, err)
		}
	}
	r.log.Info().Str("dir", outDir).Str("verdict", r.report.Verdict).Str("stop_reason", r.report.StopReason).Msg("reports written")
	return errors.Join(errs...)
}

// verdict is fail when any fail-severity check failed, a stage could not run,
// a level's every request failed (exit 3, so report.json must not say pass),
// or the run did not complete.
func verdict(rep *result.Report) string {
	if rep.StopReason != result.StopCompleted {
		return result.StatusFail
	}
	for _, st := range rep.Stages {
		if st.Error != "" || checks.Failed(st.Checks) {
			return result.StatusFail
		}
		for _, pt := range st.Points {
			if pt.NRequests > 0 && pt.Completed == 0 {
				return result.StatusFail
			}
		}
	}
	return result.StatusPass
}

// exitError maps the finished run to its exit code: interrupted first, then a
// run that could not be carried out (an endpoint never ready, a stage that
// could not run, a level whose every request failed, a report not written),
// then failed checks.
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
	for _, st := range rep.Stages {
		if st.Error != "" {
			problems = append(problems, fmt.Sprintf("stage %s: %s", st.Name, st.Error))
		}
		for _, pt := range st.Points {
			if pt.NRequests > 0 && pt.Completed == 0 {
				msg := fmt.Sprintf("stage %s %s: every request failed", st.Name, pt.Label())
				if pt.Error != nil {
					msg += " (first: " + *pt.Error + ")"
				}
				problems = append(problems, msg)
			}
		}
	}
	if len(problems) > 0 {
		return exitcode.Errorf(exitcode.RunFailed, "%s", strings.Join(problems, "\n"))
	}
	var failed []string
	for _, st := range rep.Stages {
		for _, c := range st.Checks {
			if c.Status == result.StatusFail {
				name := st.Name + " / " + c.Name
				if c.LevelLabel != "" {
					name = st.Name + " / " + c.LevelLabel + " / " + c.Name
				}
				failed = append(failed, name)
			}
		}
	}
	if len(failed) > 0 {
		return exitcode.Errorf(exitcode.ChecksFailed, "%d check(s) failed: %s", len(failed), strings.Join(failed, "; "))
	}
	return nil
}

// loadBaseline reads the --baseline report; a missing or unreadable one is a
// command-line error.
func loadBaseline(path string) (*result.Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Invalid, "--baseline: %w", err)
	}
	defer f.Close()
	rep, err := reporters.ReadJSON(f)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Invalid, "--baseline %s: %w", path, err)
	}
	return rep, nil
}

// baselineGaps names what of res the --baseline report (at path) cannot be
// compared with: the whole stage, or single levels. Checks there see
// baseline == nil, so a guarded check passes without comparing anything.
func baselineGaps(path string, base, res *result.Stage) []string {
	if len(res.Points) == 0 {
		return nil
	}
	if base == nil {
		return []string{fmt.Sprintf("baseline %s has no stage %s: its checks ran with baseline == nil", path, res.Name)}
	}
	missing := checks.MissingBaselineLevels(base, res)
	if len(missing) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("baseline %s has no level %s of stage %s: checks there ran with baseline == nil", path, strings.Join(missing, ", "), res.Name)}
}

// filesNeeded is the most sockets any selected level keeps open at once (its
// concurrency, or max_concurrency in open loop), counted twice for an
// in-process simulator, whose server end of each connection is a descriptor
// of this process too, and the stage that needs them. An open-loop stage
// without max_concurrency has no bound known in advance and is not counted.
func filesNeeded(p *scenario.Plan, stages []*scenario.Stage) (int, string) {
	need, name := 0, ""
	for _, st := range stages {
		streams := st.MaxConcurrency
		for _, c := range st.Concurrency {
			streams = max(streams, c)
		}
		if ep := p.Endpoints[st.Endpoint]; ep != nil && ep.Simulator != nil {
			streams *= 2
		}
		if streams > need {
			need, name = streams, st.Name
		}
	}
	return need, name
}
