package store

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/runnerbench/runner/board"
	"github.com/runnerbench/runner/internal/exitcode"
	"github.com/runnerbench/runner/pipeline"
	"github.com/runnerbench/runner/records"
	"github.com/runnerbench/runner/result"
)

// dirRun is a result directory read for publishing: everything but its
// requests, which are streamed from the file while they are written.
type dirRun struct {
	dir    string
	id     string
	report *result.Report
	run    *records.Run
}

// RunID is the id a result directory's run is published under: the first
// 32 hex digits of the sha256 of its run.jsonl header line, which holds the
// plan's hash, the start time, the runner's version and the labels. The
// same run always has the same id; a re-run, or a merge of shards, another.
func RunID(dir string) (string, error) {
	path := filepath.Join(dir, records.FileRun)
	f, err := os.Open(path)
	if err != nil {
		return "", inputErr(dir, err)
	}
	defer f.Close()
	line, err := bufio.NewReader(io.LimitReader(f, 1<<20)).ReadBytes('\n')
	if errors.Is(err, io.EOF) {
		err = errors.New("no complete first line (the run's header)")
	}
	if err != nil {
		return "", inputErr(path, err)
	}
	if _, err := records.ReadHeader(dir); err != nil {
		return "", inputErr(path, errors.New(strings.TrimPrefix(err.Error(), records.FileRun+": ")))
	}
	sum := sha256.Sum256(bytes.TrimSpace(line))
	return hex.EncodeToString(sum[:16]), nil
}

// readDir reads what publishing dir needs besides its requests: its id,
// its records and its report (report.json, checked against the records;
// recomputed from the records when there is none). A shard is refused:
// its levels hold a part of each level, and its checks are the merge's.
func readDir(dir string) (*dirRun, error) {
	id, err := RunID(dir)
	if err != nil {
		return nil, err
	}
	run, err := records.ReadRun(dir)
	if err != nil {
		return nil, inputErr("", err)
	}
	if run.Header.Shard != nil {
		return nil, inputErr(dir, fmt.Errorf("shard %d of %d of a sharded run: publish the merged run (runner merge)", run.Header.Shard.Index, run.Header.Shard.Count))
	}
	rep, err := readReport(dir, run)
	if err != nil {
		return nil, err
	}
	return &dirRun{dir: dir, id: id, report: rep, run: run}, nil
}

func readReport(dir string, run *records.Run) (*result.Report, error) {
	path := filepath.Join(dir, board.FileReport)
	if _, err := os.Stat(path); err == nil {
		rep, err := board.ReadReport(path)
		if err != nil {
			return nil, inputErr(path, err)
		}
		h := &run.Header
		if rep.Plan.Hash == h.Plan.Hash && rep.StartedAt.Equal(h.StartedAt) && rep.RunnerVersion == h.RunnerVersion {
			return rep, checkLabels(path, rep)
		}
		// A report.json of another run beside the records (as the board
		// reads it): the records are the truth.
	}
	rep, err := pipeline.Recompute(dir, nil)
	if err != nil {
		return nil, inputErr("", err)
	}
	return rep, checkLabels(filepath.Join(dir, records.FileRun), rep)
}

// checkLabels refuses labels past their limits (a hand-edited file).
func checkLabels(path string, rep *result.Report) error {
	if err := rep.Labels.Check(); err != nil {
		return inputErr(path, err)
	}
	return nil
}

// inputErr is a result directory's problem: exit 2, naming the file (where
// the cause does not already).
func inputErr(where string, err error) error {
	if where == "" {
		return exitcode.With(err, exitcode.Invalid)
	}
	return exitcode.Errorf(exitcode.Invalid, "%s: %w", where, err)
}
