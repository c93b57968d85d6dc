package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/runnerbench/runner/comparison"
	"github.com/runnerbench/runner/result"
)

// Filter selects runs.
type Filter struct {
	// Plan is the plan's name ("" any).
	Plan string
	// Where are labels every run must carry with these values.
	Where map[string]string
	// Since keeps runs started at or after it (zero: all).
	Since time.Time
}

// Run is a published run as the database holds it.
type Run struct {
	ID string
	// Source is the result directory it was published from, as given.
	Source    string
	StartedAt time.Time
	Labels    map[string]string
	// Report is the run's report as published: its facts, stages, points
	// (every metric) and checks; without baseline comparisons.
	Report *result.Report
	// Identities are, by stage name, what each stage measured (its load,
	// endpoint and model) with the run's labels: what a history's series
	// must share (Series fills it; Runs leaves it to the report).
	Identities map[string]comparison.Identity
}

// where is the SQL condition on runs r for f, and its arguments.
func (d *DB) where(f Filter) (string, []any) {
	var conds []string
	var args []any
	if f.Plan != "" {
		conds = append(conds, "r.plan = ?")
		args = append(args, f.Plan)
	}
	if !f.Since.IsZero() {
		conds = append(conds, "r.started_at >= ?")
		args = append(args, d.timeArg(f.Since))
	}
	for _, k := range sortedKeys(f.Where) {
		conds = append(conds, "EXISTS (SELECT 1 FROM run_labels w WHERE w.run_id = r.run_id AND w.key = ? AND w.value = ?)")
		args = append(args, k, f.Where[k])
	}
	if len(conds) == 0 {
		return "1 = 1", nil
	}
	return strings.Join(conds, " AND "), args
}

// Runs reads the runs f selects, oldest first, each with its whole report.
func (d *DB) Runs(ctx context.Context, f Filter) ([]*Run, error) {
	runs, err := d.runRows(ctx, f)
	if err != nil {
		return nil, d.fail(err)
	}
	byID := map[string]*Run{}
	for _, r := range runs {
		byID[r.ID] = r
	}
	cond, args := d.where(f)
	steps := []func(context.Context, string, []any, map[string]*Run) error{d.readLabels, d.readStages, d.readLevels, d.readChecks}
	for _, step := range steps {
		if err := step(ctx, cond, args, byID); err != nil {
			return nil, d.fail(err)
		}
	}
	for _, r := range runs {
		setLabels(r.Report, r.Labels)
	}
	return runs, nil
}

func (d *DB) runRows(ctx context.Context, f Filter) ([]*Run, error) {
	cond, args := d.where(f)
	rows, err := d.db.QueryContext(ctx, d.rebind(`SELECT r.run_id, r.source, r.plan, r.plan_path, r.plan_hash, r.runner_version, r.host,
		r.started_ns, r.ended_ns, r.stop_reason, r.verdict, r.shards, r.warnings FROM runs r WHERE `+cond+
		` ORDER BY r.started_at, r.run_id`), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*Run
	for rows.Next() {
		rep := &result.Report{SchemaVersion: result.SchemaVersion, Stages: []result.Stage{}}
		var started int64
		var ended sql.NullInt64
		var host, warnings string
		r := &Run{Report: rep}
		if err := rows.Scan(&r.ID, &r.Source, &rep.Plan.Name, &rep.Plan.Path, &rep.Plan.Hash, &rep.RunnerVersion, &host,
			&started, &ended, &rep.StopReason, &rep.Verdict, &rep.Shards, &warnings); err != nil {
			return nil, err
		}
		rep.StartedAt = time.Unix(0, started).UTC()
		if ended.Valid {
			rep.EndedAt = time.Unix(0, ended.Int64).UTC()
		}
		r.StartedAt = rep.StartedAt
		setHost(rep, host)
		if err := json.Unmarshal([]byte(warnings), &rep.Warnings); err != nil {
			return nil, fmt.Errorf("run %s: warnings: %w", r.ID, err)
		}
		if len(rep.Warnings) == 0 {
			rep.Warnings = nil
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func (d *DB) readLabels(ctx context.Context, cond string, args []any, byID map[string]*Run) error {
	return d.each(ctx, "SELECT l.run_id, l.key, l.value FROM run_labels l JOIN runs r ON r.run_id = l.run_id WHERE "+cond, args,
		func(sc func(...any) error) error {
			var id, k, v string
			if err := sc(&id, &k, &v); err != nil {
				return err
			}
			if r := byID[id]; r != nil {
				if r.Labels == nil {
					r.Labels = map[string]string{}
				}
				r.Labels[k] = v
			}
			return nil
		})
}

func (d *DB) readStages(ctx context.Context, cond string, args []any, byID map[string]*Run) error {
	return d.each(ctx, "SELECT s.run_id, s.detail FROM stages s JOIN runs r ON r.run_id = s.run_id WHERE "+cond+
		" ORDER BY s.run_id, s.position", args, func(sc func(...any) error) error {
		var id string
		var detail []byte
		if err := sc(&id, &detail); err != nil {
			return err
		}
		r := byID[id]
		if r == nil {
			return nil
		}
		var st result.Stage
		if err := json.Unmarshal(detail, &st); err != nil {
			return fmt.Errorf("run %s: stage: %w", id, err)
		}
		st.Points, st.Checks = []result.Point{}, []result.CheckOutcome{}
		r.Report.Stages = append(r.Report.Stages, st)
		return nil
	})
}

func (d *DB) readLevels(ctx context.Context, cond string, args []any, byID map[string]*Run) error {
	return d.each(ctx, "SELECT l.run_id, l.stage, l.point FROM levels l JOIN runs r ON r.run_id = l.run_id WHERE "+cond+
		" ORDER BY l.run_id, l.stage, l.position", args, func(sc func(...any) error) error {
		var id, stage string
		var point []byte
		if err := sc(&id, &stage, &point); err != nil {
			return err
		}
		st := byID[id].stage(stage)
		if st == nil {
			return nil
		}
		var p result.Point
		if err := json.Unmarshal(point, &p); err != nil {
			return fmt.Errorf("run %s: stage %s: point: %w", id, stage, err)
		}
		st.Points = append(st.Points, p)
		return nil
	})
}

func (d *DB) readChecks(ctx context.Context, cond string, args []any, byID map[string]*Run) error {
	return d.each(ctx, `SELECT c.run_id, c.stage, c.name, c.expr, c.scope, c.severity, c.level, c.level_label, c.status, c.message, c.vals
		FROM checks c JOIN runs r ON r.run_id = c.run_id WHERE `+cond+" ORDER BY c.run_id, c.stage, c.position", args,
		func(sc func(...any) error) error {
			var id, stage string
			var c result.CheckOutcome
			var level *int64
			var vals []byte
			if err := sc(&id, &stage, &c.Name, &c.Expr, &c.Scope, &c.Severity, &level, &c.LevelLabel, &c.Status, &c.Message, &vals); err != nil {
				return err
			}
			st := byID[id].stage(stage)
			if st == nil {
				return nil
			}
			if level != nil {
				c.Level = result.Ptr(int(*level))
			}
			if err := json.Unmarshal(vals, &c.Values); err != nil {
				return fmt.Errorf("run %s: check %s: %w", id, c.Name, err)
			}
			if len(c.Values) == 0 {
				c.Values = nil
			}
			st.Checks = append(st.Checks, c)
			return nil
		})
}

func (r *Run) stage(name string) *result.Stage {
	if r == nil {
		return nil
	}
	for i := range r.Report.Stages {
		if r.Report.Stages[i].Name == name {
			return &r.Report.Stages[i]
		}
	}
	return nil
}

// each runs q and calls fn with a scanner for every row.
func (d *DB) each(ctx context.Context, q string, args []any, fn func(scan func(...any) error) error) error {
	rows, err := d.db.QueryContext(ctx, d.rebind(q), args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows.Scan); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Value is one metric of one level of one run.
type Value struct {
	Run   int // index into Series.Runs
	Stage string
	Label string
	// Position is the level's order in its stage.
	Position int
	// Metric is the catalogue name; Value its value as report.json has it.
	Metric string
	Value  float64
	// Judgeable is false for a level that was interrupted or whose client
	// was the bottleneck: its numbers are shown, never compared.
	Judgeable bool
}

// SeriesQuery selects the metric values of a history.
type SeriesQuery struct {
	Filter
	// Stage and Label limit the levels ("" all); Metrics the metrics
	// (nil: all).
	Stage, Label string
	Metrics      []string
}

// Series is a history's data: the runs, oldest first, and their values.
type Series struct {
	Runs   []*Run // with ID, StartedAt, Labels and Identities (no Report)
	Values []Value
}

// Series reads the values q selects in two queries (runs, values), so a
// history over thousands of runs is one pass over an index.
func (d *DB) Series(ctx context.Context, q SeriesQuery) (*Series, error) {
	out, err := d.series(ctx, q)
	return out, d.fail(err)
}

func (d *DB) series(ctx context.Context, q SeriesQuery) (*Series, error) {
	runs, err := d.runRows(ctx, q.Filter)
	if err != nil {
		return nil, err
	}
	out := &Series{}
	index := map[string]int{}
	byID := map[string]*Run{}
	for i, r := range runs {
		index[r.ID], byID[r.ID] = i, r
		r.Report = nil
		out.Runs = append(out.Runs, r)
	}
	cond, args := d.where(q.Filter)
	if err := d.readLabels(ctx, cond, args, byID); err != nil {
		return nil, err
	}
	if err := d.readIdentities(ctx, cond, args, byID); err != nil {
		return nil, err
	}
	// The levels first (a few per run), then the values alone: a history of
	// every metric is a hundred values a level, read run by run through the
	// primary key (IN, not a join looking up each value's run), their names
	// scanned as bytes and interned.
	if len(q.Metrics) == 0 {
		// Every metric: from each level's point (the report's, as
		// published, of which level_metrics holds the same values one row
		// each): 2 rows a run instead of 100 or so, decoded in Go faster
		// than the driver returns the rows.
		if err := d.pointValues(ctx, cond, args, q, index, out); err != nil {
			return nil, err
		}
		sort.SliceStable(out.Values, func(i, j int) bool { return out.Values[i].Run < out.Values[j].Run })
		return out, nil
	}
	type levelKey struct {
		run          int
		stage, label string
	}
	type levelInfo struct {
		position  int
		judgeable bool
	}
	levels := map[levelKey]levelInfo{}
	lsel, largs := levelFilter(`SELECT l.run_id, l.stage, l.label, l.position, l.interrupted, l.client_bottleneck
		FROM levels l WHERE l.run_id IN (SELECT r.run_id FROM runs r WHERE `+cond+`)`, "l", q, args)
	err = d.each(ctx, lsel, largs, func(sc func(...any) error) error {
		var id, stage, label string
		var info levelInfo
		var interrupted, bottleneck bool
		if err := sc(&id, &stage, &label, &info.position, &interrupted, &bottleneck); err != nil {
			return err
		}
		if i, ok := index[id]; ok {
			info.judgeable = !interrupted && !bottleneck
			levels[levelKey{i, stage, label}] = info
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	names := map[string]string{}
	intern := func(b []byte) string {
		if s, ok := names[string(b)]; ok {
			return s
		}
		s := string(b)
		names[s] = s
		return s
	}
	sel, args := levelFilter(`SELECT m.run_id, m.stage, m.label, m.metric, m.value
		FROM level_metrics m WHERE m.run_id IN (SELECT r.run_id FROM runs r WHERE `+cond+`)`, "m", q, args)
	if len(q.Metrics) > 0 {
		sel += " AND m.metric IN (" + strings.TrimSuffix(strings.Repeat("?, ", len(q.Metrics)), ", ") + ")"
		for _, m := range q.Metrics {
			args = append(args, m)
		}
	}
	err = d.each(ctx, sel, args, func(sc func(...any) error) error {
		var id, stage, label, metric sql.RawBytes
		var v Value
		if err := sc(&id, &stage, &label, &metric, &v.Value); err != nil {
			return err
		}
		i, ok := index[string(id)]
		if !ok {
			return nil
		}
		v.Run, v.Stage, v.Label, v.Metric = i, intern(stage), intern(label), intern(metric)
		info, ok := levels[levelKey{i, v.Stage, v.Label}]
		if !ok {
			return nil
		}
		v.Position, v.Judgeable = info.position, info.judgeable
		out.Values = append(out.Values, v)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.SliceStable(out.Values, func(i, j int) bool { return out.Values[i].Run < out.Values[j].Run })
	return out, nil
}

// readIdentities fills each run's Identities: its stages as published
// (endpoint, model, API, mode, load, search) and the lengths its first
// level asked for, with the run's labels (read before).
func (d *DB) readIdentities(ctx context.Context, cond string, args []any, byID map[string]*Run) error {
	stages := map[[2]string]*result.Stage{}
	err := d.each(ctx, "SELECT s.run_id, s.detail FROM stages s JOIN runs r ON r.run_id = s.run_id WHERE "+cond, args,
		func(sc func(...any) error) error {
			var id string
			var detail []byte
			if err := sc(&id, &detail); err != nil {
				return err
			}
			var st result.Stage
			if err := json.Unmarshal(detail, &st); err != nil {
				return fmt.Errorf("run %s: stage: %w", id, err)
			}
			stages[[2]string{id, st.Name}] = &st
			return nil
		})
	if err != nil {
		return err
	}
	lengths := map[[2]string][2]int{}
	err = d.each(ctx, `SELECT m.run_id, m.stage, m.metric, m.value FROM level_metrics m
		JOIN levels l ON l.run_id = m.run_id AND l.stage = m.stage AND l.label = m.label
		JOIN runs r ON r.run_id = m.run_id
		WHERE l.position = 0 AND m.metric IN ('input_tokens', 'output_tokens') AND `+cond, args,
		func(sc func(...any) error) error {
			var id, stage, metric string
			var v float64
			if err := sc(&id, &stage, &metric, &v); err != nil {
				return err
			}
			k := [2]string{id, stage}
			l := lengths[k]
			l[map[string]int{"input_tokens": 0, "output_tokens": 1}[metric]] = int(v)
			lengths[k] = l
			return nil
		})
	if err != nil {
		return err
	}
	for k, st := range stages {
		r := byID[k[0]]
		if r == nil {
			continue
		}
		id := comparison.StageIdentity(r.Labels, st, nil)
		if l, ok := lengths[k]; ok {
			id.Load = id.Load.WithLengths(l[0], l[1])
		}
		if r.Identities == nil {
			r.Identities = map[string]comparison.Identity{}
		}
		r.Identities[st.Name] = id
	}
	return nil
}

// pointValues appends every numeric metric of every level q selects, as
// Publish wrote them into level_metrics: the metric's value in the level's
// point, when it has one and it is finite.
func (d *DB) pointValues(ctx context.Context, cond string, args []any, q SeriesQuery, index map[string]int, out *Series) error {
	ms := result.Metrics()
	sel, args := levelFilter(`SELECT l.run_id, l.stage, l.label, l.position, l.interrupted, l.client_bottleneck, l.point
		FROM levels l WHERE l.run_id IN (SELECT r.run_id FROM runs r WHERE `+cond+`)`, "l", q, args)
	return d.each(ctx, sel, args, func(sc func(...any) error) error {
		var id, stage, label string
		var position int
		var interrupted, bottleneck bool
		var point sql.RawBytes
		if err := sc(&id, &stage, &label, &position, &interrupted, &bottleneck, &point); err != nil {
			return err
		}
		i, ok := index[id]
		if !ok {
			return nil
		}
		var p result.Point
		if err := json.Unmarshal(point, &p); err != nil {
			return fmt.Errorf("run %s: stage %s: point: %w", id, stage, err)
		}
		for k := range ms {
			m := &ms[k]
			v, ok := m.Value(&p)
			if !ok || !m.Numeric() || math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			out.Values = append(out.Values, Value{Run: i, Stage: stage, Label: label, Position: position, Metric: m.Name,
				Value: v, Judgeable: !interrupted && !bottleneck})
		}
		return nil
	})
}

// levelFilter adds q's stage and level to a query on table alias t.
func levelFilter(sel, t string, q SeriesQuery, args []any) (string, []any) {
	args = slices.Clone(args)
	if q.Stage != "" {
		sel += " AND " + t + ".stage = ?"
		args = append(args, q.Stage)
	}
	if q.Label != "" {
		sel += " AND " + t + ".label = ?"
		args = append(args, q.Label)
	}
	return sel, args
}

// Tables are the schema's tables: schema_version, then those the migrations
// create, in their order (TestMigrationsAgree holds the list to them).
var Tables = []string{"schema_version", "runs", "run_labels", "stages", "levels", "level_metrics", "level_records", "checks", "requests"}

// CountRows counts every table's rows.
func (d *DB) CountRows(ctx context.Context) (map[string]int64, error) {
	out := map[string]int64{}
	for _, t := range Tables {
		var n int64
		if err := d.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+t).Scan(&n); err != nil {
			return nil, d.fail(err)
		}
		out[t] = n
	}
	return out, nil
}
