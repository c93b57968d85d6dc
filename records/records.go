// Package records is the records stage of the pipeline: the files in a
// result directory from which every report is computed. A run writes them as
// it goes, so an interrupted or killed run keeps everything already
// measured; `runner report` and `runner merge` read them back.
//
//	plan.yaml       the plan's bytes, as run (its sha256 is the report's plan hash)
//	requests.jsonl  one result.Request a line, appended as each request finishes
//	run.jsonl       one Entry a line: the run's header, each stage's record,
//	                each level's record when it ends, each stage's end, the run's end
//	telemetry.jsonl one result.TelemetryScrape a line: each read of the endpoint's
//	                /metrics and of the plan's telemetry targets during a level
//	                (absent when nothing was read)
//
// Every line is written whole with one write(2) on an O_APPEND file, and both
// files are fsynced at every level end. After a kill -9 the one line being
// written may be left unterminated at the end of a file: readers skip it.
package records

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/runnerbench/runner/internal/atomicfile"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
)

// Entry kinds of run.jsonl.
const (
	KindRun        = "run"
	KindStage      = "stage"
	KindLevelStart = "level_start"
	KindLevel      = "level"
	KindStageDone  = "stage_done"
	KindEnd        = "end"
)

// Header is what a run is: written first.
type Header struct {
	RunnerVersion string      `json:"runner_version"`
	Plan          result.Plan `json:"plan"`
	StartedAt     time.Time   `json:"started_at"`
	// Labels are the run's labels (the plan's, overridden by --label), and
	// Host the machine that ran it (empty when unknown): the facts the
	// board and the results database group and name runs by.
	Labels result.Labels `json:"labels,omitempty"`
	Host   string        `json:"host,omitempty"`
	// Stages are the stages selected to run, in order.
	Stages []string `json:"stages"`
	// Shard is this run's part of a sharded run.
	Shard *result.Shard `json:"shard,omitempty"`
	// StartAt is the wall-clock instant a scheduled run's (every sharded
	// run's) first level slot began at; SlotWarmupNs and SlotDrainNs are the
	// slot's warm-up allowance and drain bound, from which every level's
	// instants follow (runner/shape.Schedule).
	StartAt      *time.Time `json:"start_at,omitempty"`
	SlotWarmupNs int64      `json:"slot_warmup_ns,omitempty"`
	SlotDrainNs  int64      `json:"slot_drain_ns,omitempty"`
	// Shards is how many shards a merged run was merged from (0: one run).
	Shards int `json:"shards,omitempty"`
}

// End is how a run ended: written last.
type End struct {
	EndedAt    time.Time `json:"ended_at"`
	StopReason string    `json:"stop_reason"`
	Warnings   []string  `json:"warnings,omitempty"`
	// Export is each export target's account of the run.
	Export []result.ExportStat `json:"export,omitempty"`
	// Telemetry is each telemetry target's account of the run.
	Telemetry []result.TelemetryStat `json:"telemetry,omitempty"`
}

// StageDone is how a stage ended.
type StageDone struct {
	Name  string `json:"name"`
	Error string `json:"error,omitempty"`
	// Interrupted is set when the run was stopped before the stage's
	// levels were done: its stage-scope checks are not judged.
	Interrupted bool `json:"interrupted,omitempty"`
	// SweepStop is why a sweep with stop_at_saturation ended before its
	// last listed level, as the run decided it (nil: it did not).
	SweepStop *result.SweepStop `json:"sweep_stop,omitempty"`
}

// Entry is one line of run.jsonl: one of its records is set, as Kind says.
type Entry struct {
	Kind  string              `json:"kind"`
	Run   *Header             `json:"run,omitempty"`
	Stage *result.StageRecord `json:"stage,omitempty"`
	// Checks are a stage's checks as the plan wrote them, with the stage.
	Checks []*scenario.Check `json:"checks,omitempty"`
	// Search is a search stage's search block as the plan wrote it (defaults
	// applied), with the stage: the report replays its decisions.
	Search *scenario.Search `json:"search,omitempty"`
	// Until is a stage's until: and stop_at_saturation settings (defaults
	// applied), with the stage: the report judges its levels by them.
	Until     *scenario.UntilPlan `json:"until,omitempty"`
	Level     *result.LevelRecord `json:"level,omitempty"`
	StageDone *StageDone          `json:"stage_done,omitempty"`
	End       *End                `json:"end,omitempty"`
}

// Writer writes a run's records into its result directory.
type Writer struct {
	requests  *JSONLWriter
	journal   *JSONLWriter
	dir       string
	telMu     sync.Mutex
	telemetry *JSONLWriter // opened at the first read
}

// Create writes plan (the plan file's bytes) into dir and opens the record
// files there, truncating any earlier ones.
func Create(dir string, plan []byte) (*Writer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create result directory: %w", err)
	}
	if err := atomicfile.Write(filepath.Join(dir, FilePlan), plan); err != nil {
		return nil, err
	}
	reqs, err := NewJSONL(filepath.Join(dir, FileRequests))
	if err != nil {
		return nil, err
	}
	journal, err := NewJSONL(filepath.Join(dir, FileRun))
	if err != nil {
		_ = reqs.Close()
		return nil, err
	}
	return &Writer{requests: reqs, journal: journal, dir: dir}, nil
}

// Telemetry appends one telemetry read to telemetry.jsonl, creating the
// file at the first. It is safe for concurrent use.
func (w *Writer) Telemetry(s *result.TelemetryScrape) error {
	w.telMu.Lock()
	if w.telemetry == nil {
		t, err := NewJSONL(filepath.Join(w.dir, FileTelemetry))
		if err != nil {
			w.telMu.Unlock()
			return err
		}
		w.telemetry = t
	}
	t := w.telemetry
	w.telMu.Unlock()
	return t.Write(s)
}

// telemetryFile is the telemetry writer, nil before the first read.
func (w *Writer) telemetryFile() *JSONLWriter {
	w.telMu.Lock()
	defer w.telMu.Unlock()
	return w.telemetry
}

// Request appends one finished request. It is safe for concurrent use.
func (w *Writer) Request(r *result.Request) error { return w.requests.Write(r) }

// Entry appends one line to run.jsonl.
func (w *Writer) Entry(e Entry) error { return w.journal.Write(e) }

// Sync makes every record written so far durable on disk.
func (w *Writer) Sync() error {
	err := errors.Join(w.requests.Flush(), w.journal.Flush())
	if t := w.telemetryFile(); t != nil {
		err = errors.Join(err, t.Flush())
	}
	return err
}

// Close syncs and closes the files; closing twice is harmless.
func (w *Writer) Close() error {
	err := errors.Join(w.requests.Close(), w.journal.Close())
	if t := w.telemetryFile(); t != nil {
		err = errors.Join(err, t.Close())
	}
	return err
}

// Run is a result directory's run.jsonl, read back.
type Run struct {
	Header Header
	Stages []*StageRun
	// End is nil when the run did not end (killed, or still running).
	End *End
	// Plan is plan.yaml's bytes.
	Plan []byte
}

// StageRun is one stage's records.
type StageRun struct {
	Record result.StageRecord
	Checks []*scenario.Check
	Search *scenario.Search
	Until  *scenario.UntilPlan
	// Levels are the records of the levels that ended, in order; Started
	// holds a level that started and never ended (the run was killed in it).
	Levels  []*result.LevelRecord
	Started *result.LevelRecord
	// Done is nil when the stage did not end.
	Done *StageDone
}

// ReadRun reads a result directory's plan and run.jsonl. Its requests are
// read separately, as a stream (EachRequest): there may be millions.
func ReadRun(dir string) (*Run, error) {
	plan, err := os.ReadFile(filepath.Join(dir, FilePlan))
	if err != nil {
		return nil, fmt.Errorf("%s: not a result directory: %w", dir, err)
	}
	run := &Run{Plan: plan}
	var stage *StageRun
	err = eachLine(filepath.Join(dir, FileRun), func(line int, data []byte) error {
		var e Entry
		if err := json.Unmarshal(data, &e); err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		switch {
		case e.Kind == KindRun && e.Run != nil && line == 1:
			run.Header = *e.Run
		case line == 1:
			return fmt.Errorf("line 1: want the run's header, got %q", e.Kind)
		case e.Kind == KindStage && e.Stage != nil:
			stage = &StageRun{Record: *e.Stage, Checks: e.Checks, Search: e.Search, Until: e.Until}
			run.Stages = append(run.Stages, stage)
		case e.Kind == KindLevelStart && e.Level != nil && stage != nil && e.Level.Stage == stage.Record.Name:
			stage.Started = e.Level
		case e.Kind == KindLevel && e.Level != nil && stage != nil && e.Level.Stage == stage.Record.Name:
			stage.Levels = append(stage.Levels, e.Level)
			stage.Started = nil
		case e.Kind == KindStageDone && e.StageDone != nil && stage != nil && e.StageDone.Name == stage.Record.Name:
			stage.Done = e.StageDone
		case e.Kind == KindEnd && e.End != nil:
			run.End = e.End
		default:
			return fmt.Errorf("line %d: unexpected %q entry", line, e.Kind)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, FileRun), err)
	}
	if run.Header.Plan.Hash == "" {
		return nil, fmt.Errorf("%s: no run header", filepath.Join(dir, FileRun))
	}
	return run, nil
}

// EachRequest calls fn with every request of the result directory, in file
// order, reading one line at a time.
func EachRequest(dir string, fn func(*result.Request) error) error {
	path := filepath.Join(dir, FileRequests)
	err := eachLine(path, func(line int, data []byte) error {
		var r result.Request
		if err := json.Unmarshal(data, &r); err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		return fn(&r)
	})
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// EachTelemetry calls fn with every read of telemetry.jsonl, in file order
// (the order the reads ended in, per target), one line at a time. A result
// directory without the file has no telemetry: fn is not called and the
// error is nil.
func EachTelemetry(dir string, fn func(*result.TelemetryScrape) error) error {
	path := filepath.Join(dir, FileTelemetry)
	err := eachLine(path, func(line int, data []byte) error {
		var s result.TelemetryScrape
		if err := json.Unmarshal(data, &s); err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		return fn(&s)
	})
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// LevelTelemetry reads the telemetry of one level of the result directory:
// its reads (of every target, in file order).
func LevelTelemetry(dir, stage string, level int) ([]*result.TelemetryScrape, error) {
	var out []*result.TelemetryScrape
	err := EachTelemetry(dir, func(s *result.TelemetryScrape) error {
		if s.Stage == stage && s.Level == level {
			out = append(out, s)
		}
		return nil
	})
	return out, err
}

// maxLine bounds one record line (a request record is a few hundred bytes; a
// level record with a wide ITL histogram some tens of KiB).
const maxLine = 64 << 20

// eachLine calls fn with every newline-terminated line of the file; a last
// line without a newline (a write cut by kill -9) is skipped.
func eachLine(path string, fn func(line int, data []byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	for n := 1; ; n++ {
		data, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			data, err = readLong(r, data)
		}
		if err == io.EOF {
			return nil // the end, or an unterminated last line: skip it
		}
		if err != nil {
			return err
		}
		if data = bytes.TrimSpace(data); len(data) == 0 {
			continue
		}
		if err := fn(n, data); err != nil {
			return err
		}
	}
}

// readLong reads the rest of a line longer than the reader's buffer.
func readLong(r *bufio.Reader, first []byte) ([]byte, error) {
	line := append([]byte(nil), first...)
	for {
		more, err := r.ReadSlice('\n')
		line = append(line, more...)
		if len(line) > maxLine {
			return nil, fmt.Errorf("line longer than %d MiB", maxLine>>20)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}
