package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/result"
)

// Samples are the per-request samples of one point of a published run
// (stage, point label): the same, value for value, as aggregate computes
// from the run's result directory, so a comparison of published runs is
// the comparison of their directories. Nil when the run has no such level
// record (a point without one).
func (d *DB) Samples(ctx context.Context, runID, stage, label string) (*aggregate.Samples, error) {
	s, err := d.samples(ctx, runID, stage, label)
	return s, d.fail(err)
}

func (d *DB) samples(ctx context.Context, runID, stage, label string) (*aggregate.Samples, error) {
	var level sql.NullInt64
	var turn int
	err := d.db.QueryRowContext(ctx, d.rebind("SELECT level, turn FROM levels WHERE run_id = ? AND stage = ? AND label = ?"),
		runID, stage, label).Scan(&level, &turn)
	if err == sql.ErrNoRows || (err == nil && !level.Valid) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var raw []byte
	err = d.db.QueryRowContext(ctx, d.rebind("SELECT record FROM level_records WHERE run_id = ? AND stage = ? AND level = ?"),
		runID, stage, level.Int64).Scan(&raw)
	if err == sql.ErrNoRows {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rec result.LevelRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		return nil, fmt.Errorf("run %s: level record: %w", runID, err)
	}
	// The level alone, as aggregate.Stage feeds it, without computing
	// its point: only its samples are wanted.
	lvl := aggregate.NewLevel(rec.Spec, 0)
	lvl.KeepSamples()
	err = d.each(ctx, "SELECT "+joinCols(requestColumns[1:])+" FROM requests WHERE run_id = ? AND stage = ? AND level = ? AND NOT warmup",
		[]any{runID, stage, level.Int64}, func(sc func(...any) error) error {
			r, err := scanRequest(sc)
			if err != nil {
				return err
			}
			lvl.Add(r)
			return nil
		})
	if err != nil {
		return nil, err
	}
	all, turns := lvl.Samples(&rec)
	if turn > 0 {
		if turn > len(turns) {
			return nil, nil
		}
		return turns[turn-1], nil
	}
	return all, nil
}

// scanRequest reads a requests row (without run_id) back into the fields
// of a request the statistics read.
func scanRequest(sc func(...any) error) (*result.Request, error) {
	var r result.Request
	var startNs int64
	var ttft, ttfat, tpot, ttftSched, e2eSched, maxITL, prompt sql.NullFloat64
	err := sc(&r.Stage, &r.Level, &r.Seq, &r.Replicate, &r.Shard, &r.Turn, &r.Warmup, &r.Nonce, &startNs,
		&r.DispatchLagMs, &r.OK, &r.Status, &r.ErrorKind, &ttft, &ttfat, &r.ReasoningChunks, &tpot, &r.E2EMs,
		&ttftSched, &e2eSched, &maxITL, &prompt, &r.InputTokens, &r.OutputTokens, &r.MaxTokens, &r.FinishReason)
	if err != nil {
		return nil, err
	}
	r.Start = time.Unix(0, startNs).UTC()
	r.TTFTMs, r.TTFATMs, r.TPOTMs = ptr(ttft), ptr(ttfat), ptr(tpot)
	r.TTFTFromScheduleMs, r.E2EFromScheduleMs, r.MaxITLMs = ptr(ttftSched), ptr(e2eSched), ptr(maxITL)
	if prompt.Valid {
		r.ServerTimings = &result.ServerTimings{PromptMs: prompt.Float64}
	}
	return &r, nil
}

func ptr(v sql.NullFloat64) *float64 {
	if !v.Valid {
		return nil
	}
	return &v.Float64
}

func joinCols(cols []string) string {
	out := ""
	for i, c := range cols {
		if i > 0 {
			out += ", "
		}
		out += c
	}
	return out
}
