package store

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"time"

	"github.com/runnerbench/runner/internal/exitcode"
	"github.com/runnerbench/runner/records"
	"github.com/runnerbench/runner/result"
)

// Published says what publishing one result directory did.
type Published struct {
	Dir   string
	RunID string
	// Already is set when the run was in the database before: nothing
	// was written.
	Already bool
	// Requests is how many request records were written.
	Requests int64
}

// errAlready ends a transaction whose run another publisher wrote first.
var errAlready = errors.New("already published")

// Publish writes the run recorded in dir into the database, in one
// transaction: all of it or, on any error, nothing. A run already there
// is left as it is (Published.Already). A malformed result directory is an
// error with exit code 2 naming the file; a database that cannot be written
// one with exit code 3.
func (d *DB) Publish(ctx context.Context, dir string) (Published, error) {
	out := Published{Dir: dir}
	id, err := RunID(dir)
	if err != nil {
		return out, err
	}
	out.RunID = id
	if ok, err := d.has(ctx, id); err != nil || ok {
		out.Already = ok
		return out, d.fail(err)
	}
	in, err := readDir(dir, id)
	if err != nil {
		return out, err
	}
	err = d.inTx(ctx, func(w writer) error {
		n, err := d.writeRun(ctx, w, in)
		out.Requests = n
		return err
	})
	if errors.Is(err, errAlready) {
		out.Already, out.Requests = true, 0
		return out, nil
	}
	return out, d.fail(err)
}

func (d *DB) has(ctx context.Context, id string) (bool, error) {
	var n int
	err := d.db.QueryRowContext(ctx, d.rebind("SELECT COUNT(*) FROM runs WHERE run_id = ?"), id).Scan(&n)
	return n > 0, err
}

// writeRun writes one run's rows; it returns the requests written.
func (d *DB) writeRun(ctx context.Context, w writer, in *dirRun) (int64, error) {
	rep := in.report
	warnings, _ := json.Marshal(nonNil(rep.Warnings))
	var ended, endedNs any
	if !rep.EndedAt.IsZero() {
		ended, endedNs = d.timeArg(rep.EndedAt), rep.EndedAt.UnixNano()
	}
	n, err := w.exec(ctx, `INSERT INTO runs (run_id, source, plan, plan_path, plan_hash, runner_version, host, started_at, ended_at,
		started_ns, ended_ns, stop_reason, verdict, shards, warnings, requests, published_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?)
		ON CONFLICT (run_id) DO NOTHING`,
		in.id, in.dir, rep.Plan.Name, rep.Plan.Path, rep.Plan.Hash, rep.RunnerVersion, hostOf(rep), d.timeArg(rep.StartedAt), ended,
		rep.StartedAt.UnixNano(), endedNs, rep.StopReason, rep.Verdict, rep.Shards, string(warnings), d.timeArg(time.Now()))
	if err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, errAlready
	}
	labels := labelsOf(rep)
	for _, k := range sortedKeys(labels) {
		if _, err := w.exec(ctx, "INSERT INTO run_labels (run_id, key, value) VALUES (?, ?, ?)", in.id, k, labels[k]); err != nil {
			return 0, err
		}
	}
	for i := range rep.Stages {
		if err := d.writeStage(ctx, w, in, i); err != nil {
			return 0, err
		}
	}
	if err := d.writeLevelRecords(ctx, w, in); err != nil {
		return 0, err
	}
	reqs, err := d.writeRequests(ctx, w, in)
	if err != nil {
		return 0, err
	}
	_, err = w.exec(ctx, "UPDATE runs SET requests = ? WHERE run_id = ?", reqs, in.id)
	return reqs, err
}

// writeStage writes a stage, its points with every catalogue metric, and
// its checks.
func (d *DB) writeStage(ctx context.Context, w writer, in *dirRun, i int) error {
	st := in.report.Stages[i]
	detail := st
	detail.Points, detail.Checks = nil, nil
	db, err := json.Marshal(detail)
	if err != nil {
		return err
	}
	if _, err := w.exec(ctx, `INSERT INTO stages (run_id, position, stage, endpoint, base_url, model, api, mode, load, error, detail)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, in.id, i, st.Name, st.Endpoint.Name, st.Endpoint.BaseURL, st.Endpoint.Model,
		st.API, st.Mode, st.Load, st.Error, string(db)); err != nil {
		return err
	}
	levelOf := levelIndex(in.run, st.Name)
	ms := result.Metrics()
	for j := range st.Points {
		p := st.Points[j]
		p.BaselineComparison = nil
		pb, err := json.Marshal(p)
		if err != nil {
			return err
		}
		var lvl any
		if idx, ok := levelOf[result.LevelLabel(p.Concurrency, p.Rate, p.Probe, 0)]; ok {
			lvl = idx
		}
		if _, err := w.exec(ctx, `INSERT INTO levels (run_id, stage, position, label, level, concurrency, rate, probe, turn,
			replicates, interrupted, client_bottleneck, point) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			in.id, st.Name, j, p.Label(), lvl, p.Concurrency, floatOrNil(p.Rate), p.Probe, p.Turn, p.Replicates,
			p.Interrupted, p.ClientBottleneck, string(pb)); err != nil {
			return err
		}
		for k := range ms {
			m := &ms[k]
			v, ok := m.Value(&p)
			if !ok || !m.Numeric() || math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			if _, err := w.exec(ctx, "INSERT INTO level_metrics (run_id, stage, label, metric, value) VALUES (?, ?, ?, ?, ?)",
				in.id, st.Name, p.Label(), m.Name, v); err != nil {
				return err
			}
		}
	}
	for j, c := range st.Checks {
		vals, err := json.Marshal(nonNilMap(c.Values))
		if err != nil {
			return err
		}
		if _, err := w.exec(ctx, `INSERT INTO checks (run_id, stage, position, name, expr, scope, severity, level, level_label,
			status, message, vals) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, in.id, st.Name, j, c.Name, c.Expr, c.Scope,
			c.Severity, intOrNil(c.Level), c.LevelLabel, c.Status, c.Message, string(vals)); err != nil {
			return err
		}
	}
	return nil
}

// levelIndex maps a stage's level labels to their records' indexes.
func levelIndex(run *records.Run, stage string) map[string]int {
	out := map[string]int{}
	for _, sr := range run.Stages {
		if sr.Record.Name != stage {
			continue
		}
		for _, l := range levelsOf(sr) {
			out[l.Spec.Label] = l.Level
		}
	}
	return out
}

// levelsOf is a stage's level records, with the one it was killed in.
func levelsOf(sr *records.StageRun) []*result.LevelRecord {
	if sr.Started != nil {
		return append(append([]*result.LevelRecord{}, sr.Levels...), sr.Started)
	}
	return sr.Levels
}

func (d *DB) writeLevelRecords(ctx context.Context, w writer, in *dirRun) error {
	for _, sr := range in.run.Stages {
		for _, l := range levelsOf(sr) {
			b, err := json.Marshal(l)
			if err != nil {
				return err
			}
			if _, err := w.exec(ctx, "INSERT INTO level_records (run_id, stage, level, label, record) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
				in.id, sr.Record.Name, l.Level, l.Spec.Label, string(b)); err != nil {
				return err
			}
		}
	}
	return nil
}

// requestColumns are the requests table's columns, in the order
// requestRow gives them.
var requestColumns = []string{"run_id", "stage", "level", "seq", "replicate", "shard", "turn", "warmup", "nonce", "start_ns",
	"dispatch_lag_ms", "ok", "status", "error_kind", "ttft_ms", "ttfat_ms", "reasoning_chunks", "tpot_ms", "e2e_ms",
	"ttft_from_schedule_ms", "e2e_from_schedule_ms", "max_itl_ms", "server_prompt_ms", "input_tokens", "output_tokens",
	"max_tokens", "finish_reason"}

func requestRow(id string, r *result.Request) []any {
	var prompt any
	if r.ServerTimings != nil {
		prompt = r.ServerTimings.PromptMs
	}
	return []any{id, r.Stage, int64(r.Level), int64(r.Seq), int64(r.Replicate), int64(r.Shard), int64(r.Turn), r.Warmup, r.Nonce,
		r.Start.UnixNano(), finite(r.DispatchLagMs), r.OK, int64(r.Status), r.ErrorKind, floatOrNil(r.TTFTMs), floatOrNil(r.TTFATMs),
		int64(r.ReasoningChunks), floatOrNil(r.TPOTMs), finite(r.E2EMs), floatOrNil(r.TTFTFromScheduleMs), floatOrNil(r.E2EFromScheduleMs),
		floatOrNil(r.MaxITLMs), prompt, int64(r.InputTokens), int64(r.OutputTokens), int64(r.MaxTokens), r.FinishReason}
}

// requestBatch is how many request rows go into one statement (SQLite)
// or one COPY (PostgreSQL): large enough to amortise a round trip, small
// enough that memory stays flat.
const requestBatch = 4096

// writeRequests streams requests.jsonl into the requests table in batches:
// one goroutine reads and decodes the lines while this one inserts, so
// the two costs overlap; at most a few batches are in memory at once. A
// malformed line is the directory's error (exit 2), a failed insert the
// database's.
func (d *DB) writeRequests(ctx context.Context, w writer, in *dirRun) (int64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	batches := make(chan [][]any, 2)
	readErr := make(chan error, 1)
	go func() {
		defer close(batches)
		batch := make([][]any, 0, requestBatch)
		err := records.EachRequest(in.dir, func(r *result.Request) error {
			batch = append(batch, requestRow(in.id, r))
			if len(batch) < requestBatch {
				return nil
			}
			select {
			case batches <- batch:
				batch = make([][]any, 0, requestBatch)
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		if err == nil && len(batch) > 0 {
			batches <- batch
		}
		readErr <- err
	}()
	var n int64
	for batch := range batches {
		if err := w.insertRows(ctx, "requests", requestColumns, batch); err != nil {
			cancel()
			for range batches { // let the reader finish
			}
			return 0, err
		}
		n += int64(len(batch))
	}
	if err := <-readErr; err != nil {
		return 0, exitcode.With(err, exitcode.Invalid)
	}
	return n, ctx.Err()
}

func floatOrNil(p *float64) any {
	if p == nil || math.IsNaN(*p) || math.IsInf(*p, 0) {
		return nil
	}
	return *p
}

func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

func intOrNil(p *int) any {
	if p == nil {
		return nil
	}
	return int64(*p)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func nonNilMap(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// placeholders is "(?, ?, ...), (...)" for rows of n columns.
func placeholders(rows, n int) string {
	one := "(" + strings.TrimSuffix(strings.Repeat("?, ", n), ", ") + ")"
	return strings.TrimSuffix(strings.Repeat(one+", ", rows), ", ")
}
