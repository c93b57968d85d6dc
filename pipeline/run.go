package pipeline

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/runnerbench/runner/runner/shard"

	"github.com/rs/zerolog"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/export"
	"github.com/runnerbench/runner/internal/redact"
	"github.com/runnerbench/runner/records"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/runner"
	"github.com/runnerbench/runner/runner/host"
	"github.com/runnerbench/runner/runner/telemetry"
	"github.com/runnerbench/runner/scenario"
	"github.com/runnerbench/runner/sim"
	"github.com/runnerbench/runner/stopping"
)

// Options configure a run.
type Options struct {
	// Plan is the loaded plan and PlanBytes its file's bytes (kept with the
	// records, so a report can be recomputed from them).
	Plan      *scenario.Plan
	PlanBytes []byte
	// Stages are the stages to run, in order (all of the plan's when nil).
	Stages []*scenario.Stage
	// Records receives the run's records (nil: kept in memory only).
	Records *records.Writer
	// Baseline is a previous run the report is compared with, and its
	// checks read (nil: none).
	Baseline *Baseline
	// RunnerVersion is written into the report.
	RunnerVersion string
	// Labels are added to the plan's labels, overriding the plan's value of a
	// key both have (--label); Host is the machine's name (empty: unknown).
	Labels result.Labels
	Host   string
	Logger zerolog.Logger
	// OnProgress receives live progress of the level being run; may be nil.
	OnProgress func(runner.Progress)
	// OnLevelDone is called after each level's records are durable; may be nil.
	OnLevelDone func()
	// OnLevel receives each level's point once it is computed (a multi-turn
	// level's, not its turns'); may be nil.
	OnLevel func(stage string, p *result.Point)
	// Sharding makes the run one shard of a sharded run, or schedules its
	// levels (runner.NewSharding; nil: a whole run, levels back to back).
	Sharding *shard.Sharding
	// Export sends the run's figures to Prometheus or OpenTelemetry while it
	// runs (nil, or no targets: none). Plan, RunID and Warn are filled in.
	Export *export.Options
}

// Run runs the plan's stages and returns the report, also when the run is
// interrupted (ctx cancelled: stop reason interrupted) or cannot be carried
// out (err says why: an endpoint never became ready, a record could not be
// written). A stage that cannot run is recorded in the report, not returned.
func Run(ctx context.Context, o Options) (*result.Report, error) {
	if o.Stages == nil {
		o.Stages = o.Plan.Stages
	}
	h := &records.Header{
		RunnerVersion: o.RunnerVersion,
		Plan:          result.Plan{Name: o.Plan.Name, Path: o.Plan.Path, Hash: o.Plan.Hash},
		StartedAt:     utcNow(),
		Labels:        o.Plan.Labels.With(o.Labels),
		Host:          o.Host,
	}
	for _, st := range o.Stages {
		h.Stages = append(h.Stages, st.Name)
	}
	describeSharding(h, o.Sharding)
	r := &run{o: o, log: o.Logger}
	r.write(records.Entry{Kind: records.KindRun, Run: h})
	if err := r.startExport(h); err != nil {
		return nil, err
	}
	r.startTelemetry()
	stages, runErr := r.execute(ctx)
	end := &records.End{EndedAt: utcNow(), StopReason: result.StopCompleted}
	r.closeExport(end)
	r.closeTelemetry(end)
	switch {
	case ctx.Err() != nil:
		end.StopReason = result.StopInterrupted
	case runErr != nil:
		end.StopReason = result.StopError
		end.Warnings = append(end.Warnings, runErr.Error())
	}
	r.write(records.Entry{Kind: records.KindEnd, End: end})
	r.sync()
	return assemble(h, stages, end, o.Baseline), errors.Join(runErr, r.writeErr)
}

// run is one run in progress.
type run struct {
	o        Options
	log      zerolog.Logger
	writeErr error // the first failure to write a record
	exp      *export.Exporter
	runID    string
	tel      *telemetry.Sampler
}

// startTelemetry builds the run's sampler: the plan's telemetry targets,
// and the endpoints' own /metrics unless the plan turns that off.
func (r *run) startTelemetry() {
	t := r.o.Plan.Telemetry
	var targets []*telemetry.Target
	if t != nil {
		for _, tg := range t.Targets {
			if tg == nil {
				continue
			}
			h := http.Header{}
			for k, v := range tg.Headers {
				h.Set(k, v.Reveal())
			}
			targets = append(targets, &telemetry.Target{Name: tg.Name, URL: tg.URL, Header: h, Keep: telemetry.KeepFor(tg.Metrics)})
			r.log.Info().Str("target", tg.Name).Str("url", redact.URL(tg.URL)).Str("every", t.Every().String()).Msg("reading telemetry")
		}
	}
	if len(targets) == 0 && !t.ReadsEndpoint() {
		return
	}
	r.tel = telemetry.New(targets, t.Every(), t.ReadTimeout())
}

// closeTelemetry records each telemetry target's account of the run, with
// a warning for one that failed reads.
func (r *run) closeTelemetry(end *records.End) {
	if r.tel == nil {
		return
	}
	r.tel.Close()
	for _, st := range r.tel.Stats() {
		end.Telemetry = append(end.Telemetry, st)
		if st.Failed > 0 {
			end.Warnings = append(end.Warnings, fmt.Sprintf(
				"telemetry target %s (%s): %d of %d reads failed (last: %s); its samples are missing from those reads' times, and the figures come from the rest",
				st.Target, st.URL, st.Failed, st.Reads, st.LastError))
		}
	}
}

// exportDrain is how long the end of a run waits for queued export batches.
const exportDrain = 5 * time.Second

// startExport starts the exporter, when the run exports.
func (r *run) startExport(h *records.Header) error {
	o := r.o.Export
	if o == nil || len(o.Targets) == 0 {
		return nil
	}
	eo := *o
	eo.Plan, eo.RunID, eo.Labels = h.Plan.Name, export.RunID(h.Plan.Hash, h.StartedAt), h.Labels
	eo.Warn = func(msg string) { r.log.Warn().Msg(msg) }
	exp, err := export.New(eo)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	r.exp, r.runID = exp, eo.RunID
	for _, t := range eo.Targets {
		r.log.Info().Str("to", t.To).Str("url", t.Shown()).Str("run_id", eo.RunID).Msg("exporting")
	}
	return nil
}

// closeExport lets queued batches go (for at most exportDrain) and records
// each target's account, with a warning for one that dropped samples.
func (r *run) closeExport(end *records.End) {
	if r.exp == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), exportDrain)
	defer cancel()
	for _, st := range r.exp.Close(ctx) {
		st.RunID = r.runID
		end.Export = append(end.Export, st)
		if w := export.Warning(st); w != "" {
			end.Warnings = append(end.Warnings, w)
		}
	}
}

// execute starts the endpoints and runs the stages. It returns an error only
// when the run could not be carried out (an endpoint never became ready);
// stage failures are recorded in the stage.
func (r *run) execute(ctx context.Context) ([]stageResult, error) {
	if err := checkPorts(r.o.Plan, r.o.Stages); err != nil {
		return nil, err
	}
	if need, stage := filesNeeded(r.o.Plan, r.o.Stages); need > 0 {
		// Before any endpoint or simulator starts: a level with more streams
		// than the process may open sockets for would fail part-way with
		// "too many open files" inside its measured window.
		if err := host.RaiseFileLimit(need); err != nil {
			return nil, fmt.Errorf("stage %s needs %d sockets at once (an in-process simulator counts both ends): %w", stage, need, err)
		}
	}
	engines, closeAll, err := r.startEndpoints(ctx)
	defer closeAll()
	if err != nil {
		return nil, err
	}
	var out []stageResult
	for _, st := range r.o.Stages {
		if ctx.Err() != nil {
			break
		}
		sink := &stageSink{run: r, agg: aggregate.NewStage(0), plan: st}
		if r.o.Baseline != nil {
			sink.agg.KeepSamples() // for the comparison with the baseline
		}
		sink.look = stopping.NewLive(st, sink.agg)
		err := engines[st.Endpoint].RunStage(ctx, r.o.Plan.LoadPlan(st), sink)
		// A cancelled run may have stopped the stage between two levels,
		// where no level is marked interrupted: the stage says so.
		done := &records.StageDone{Name: st.Name, Interrupted: ctx.Err() != nil, SweepStop: sink.look.SweepStop()}
		if err != nil && ctx.Err() == nil {
			done.Error = err.Error()
			sink.agg.Error(done.Error)
			r.log.Error().Str("stage", st.Name).Err(err).Msg("stage could not run")
		}
		r.write(records.Entry{Kind: records.KindStageDone, StageDone: done})
		r.sync()
		out = append(out, stageResult{agg: sink.agg, plan: st, interrupted: done.Interrupted, sweepStop: done.SweepStop})
		r.log.Info().Str("stage", st.Name).Msg("stage done")
	}
	return out, nil
}

// startEndpoints starts the simulators the selected stages use, builds one
// engine per endpoint and waits until each answers. The returned func closes
// everything it started.
func (r *run) startEndpoints(ctx context.Context) (map[string]*runner.Engine, func(), error) {
	engines := map[string]*runner.Engine{}
	var closers []func()
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	for _, st := range r.o.Stages {
		name := st.Endpoint
		if engines[name] != nil {
			continue
		}
		ep := r.o.Plan.Endpoints[name]
		baseURL := ep.BaseURL
		if ep.Simulator != nil {
			// The simulator stops when the run has drained (closeAll), not when
			// ctx is cancelled: on Ctrl-C the requests must see the run's
			// cancellation before their server goes away, or an in-flight
			// stream ends as "truncated" instead of "interrupted".
			srv, err := sim.Start(context.WithoutCancel(ctx), *ep.Simulator)
			if err != nil {
				return engines, closeAll, fmt.Errorf("endpoint %s: start the simulator: %w", name, err)
			}
			closers = append(closers, func() { _ = srv.Close() })
			baseURL = srv.URL()
			r.log.Info().Str("endpoint", name).Str("url", baseURL).Msg("simulator started")
		}
		opts := runner.Options{Logger: r.log, OnProgress: r.o.OnProgress, Sharding: r.o.Sharding,
			Telemetry: r.tel, TelemetryEndpoint: r.o.Plan.Telemetry.ReadsEndpoint()}
		if r.exp != nil {
			opts.OnProgress, opts.OnGaps = r.exportProgress(r.o.OnProgress), r.exp.Gaps
		}
		eng, err := runner.NewEngine(runner.Target{Name: name, Endpoint: ep, BaseURL: baseURL}, opts)
		if err != nil {
			return engines, closeAll, fmt.Errorf("endpoint %s: %w", name, err)
		}
		closers = append(closers, eng.Close)
		engines[name] = eng
		wait := ep.ReadyTimeout.D()
		r.log.Info().Str("endpoint", name).Str("url", redact.URL(baseURL)).Str("timeout", wait.String()).Msg("waiting for the endpoint")
		if err := eng.WaitReady(ctx, wait); err != nil {
			if ctx.Err() != nil {
				return engines, closeAll, nil
			}
			return engines, closeAll, err // names the endpoint, the timeout and the URLs tried
		}
	}
	return engines, closeAll, nil
}

// write appends an entry to run.jsonl; a failure is logged once and
// returned by Run (the report is still produced from memory).
func (r *run) write(e records.Entry) {
	if r.o.Records == nil {
		return
	}
	r.noteWriteErr(r.o.Records.Entry(e))
}

func (r *run) noteWriteErr(err error) {
	if err != nil && r.writeErr == nil && !errors.Is(err, records.ErrClosed) {
		r.writeErr = fmt.Errorf("records: %w", err)
		r.log.Error().Err(err).Msg("writing the run's records")
	}
}

// sync makes the records durable (at every level and stage end).
func (r *run) sync() {
	if r.o.Records != nil {
		if err := r.o.Records.Sync(); err != nil {
			r.log.Error().Err(err).Msg("syncing the run's records")
		}
	}
}

// exportProgress hands the engine's progress to the exporter, and to next.
func (r *run) exportProgress(next func(runner.Progress)) func(runner.Progress) {
	return func(p runner.Progress) {
		r.exp.Progress(p.Stage, p.Level, p.Sent, p.InFlight)
		if next != nil {
			next(p)
		}
	}
}

// stageSink is where a stage's records go: to the record files, and to the
// stage's aggregate, which computes each level's point.
type stageSink struct {
	run      *run
	agg      *aggregate.Stage
	plan     *scenario.Stage
	endpoint string
	look     *stopping.Live // the stage's stopping rules (nil: none)
}

func (s *stageSink) StageStarted(st *result.StageRecord) {
	s.run.write(stageEntry(st, s.plan))
	s.agg.StageStarted(st)
	s.endpoint = st.Endpoint.Name
}

func (s *stageSink) LevelStarted(rec *result.LevelRecord) {
	start := *rec
	start.Start = utcNow() // the level's warm-ups begin: an upper bound on its window's start
	s.run.write(records.Entry{Kind: records.KindLevelStart, Level: &start})
	s.agg.LevelStarted(rec)
	if e := s.run.exp; e != nil {
		e.LevelStarted(rec.Stage, rec.Level, rec.Spec.Label, s.endpoint)
	}
}

// Request is called concurrently by the engine's workers.
func (s *stageSink) Request(req *result.Request) {
	if w := s.run.o.Records; w != nil {
		if err := w.Request(req); err != nil {
			s.run.log.Error().Err(err).Msg("writing requests.jsonl")
		}
	}
	s.agg.Request(req)
	if e := s.run.exp; e != nil {
		e.Request(req)
	}
}

// Telemetry is called concurrently by the sampler's goroutines.
func (s *stageSink) Telemetry(r *result.TelemetryScrape) {
	if w := s.run.o.Records; w != nil {
		if err := w.Telemetry(r); err != nil {
			s.run.log.Error().Err(err).Msg("writing telemetry.jsonl")
		}
	}
	s.agg.Telemetry(r)
}

func (s *stageSink) LevelDone(rec *result.LevelRecord) result.Point {
	s.look.Annotate(rec)
	s.run.write(records.Entry{Kind: records.KindLevel, Level: rec})
	s.run.sync()
	if f := s.run.o.OnLevelDone; f != nil {
		f()
	}
	p := s.agg.LevelDone(rec)
	if e := s.run.exp; e != nil {
		e.LevelDone(rec.Stage, rec.Level, &p, &rec.ITL)
	}
	if f := s.run.o.OnLevel; f != nil {
		f(rec.Stage, &p)
	}
	s.look.LevelDone(&p)
	return p
}

// Look answers the engine's look at an until level (runner.Looker).
func (s *stageSink) Look(rec *result.LevelRecord, done int) *result.LevelStop {
	return s.look.Look(rec, done)
}

// StopSweep reports whether the sweep reached saturation
// (runner.SweepStopper).
func (s *stageSink) StopSweep() bool { return s.look.StopSweep() }

// Skipped notes the levels a stopped sweep did not run.
func (s *stageSink) Skipped(specs []result.LevelSpec) { s.look.Skipped(specs) }

// filesNeeded is the most sockets any selected level keeps open at once (its
// concurrency, or max_concurrency in open loop), counted twice for an
// in-process simulator, whose server end of each connection is a descriptor
// of this process too, and the stage that needs them. An open-loop stage
// without max_concurrency has no bound known in advance and is not counted.
func filesNeeded(p *scenario.Plan, stages []*scenario.Stage) (int, string) {
	need, name := 0, ""
	for _, st := range stages {
		streams := streamsOf(st)
		if ep := p.Endpoints[st.Endpoint]; ep != nil && ep.Simulator != nil {
			streams *= 2
		}
		if streams > need {
			need, name = streams, st.Name
		}
	}
	return need, name
}

// streamsOf is the most streams a stage keeps open at once: its largest
// concurrency, max_concurrency cap or concurrency search bound (0: an open
// loop without a cap, which has no bound to check).
func streamsOf(st *scenario.Stage) int {
	streams := st.MaxConcurrency
	for _, c := range st.Concurrency {
		streams = max(streams, c)
	}
	if s := st.Search; s != nil && s.Over == scenario.OverConcurrency {
		streams = max(streams, int(s.Max))
	}
	return streams
}

// checkPorts refuses a stage whose streams to its server outnumber the
// ephemeral ports of one source address (host.CheckPorts), before any
// traffic: past them the connections would fail part-way.
func checkPorts(p *scenario.Plan, stages []*scenario.Stage) error {
	for _, st := range stages {
		server := "the built-in simulator"
		if ep := p.Endpoints[st.Endpoint]; ep != nil && ep.Simulator == nil {
			server = hostPort(ep.BaseURL)
		}
		if err := host.CheckPorts(streamsOf(st), server); err != nil {
			return fmt.Errorf("stage %s: %w", st.Name, err)
		}
	}
	return nil
}

// hostPort is a base URL's host and port (the scheme's default when it
// names none), as connections are made to it.
func hostPort(base string) string {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return redact.URL(base)
	}
	if u.Port() != "" {
		return u.Host
	}
	port := "80"
	if u.Scheme == "https" {
		port = "443"
	}
	return net.JoinHostPort(u.Hostname(), port)
}
