package store

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"

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
	line, _, err := records.ReadHeaderLine(dir)
	if err != nil {
		return "", inputErr(filepath.Join(dir, records.FileRun), err)
	}
	sum := sha256.Sum256(line)
	return hex.EncodeToString(sum[:16]), nil
}

// readDir reads what publishing dir, whose run id is id, needs besides its
// requests: its records and its report (pipeline.Open: report.json where it
// belongs to the records, else recomputed). A shard is refused: its levels
// hold a part of each level, and its checks are the merge's.
func readDir(dir, id string) (*dirRun, error) {
	op, err := pipeline.Open(dir, pipeline.OpenOptions{Records: true})
	if err != nil {
		return nil, inputErr("", err)
	}
	return &dirRun{dir: dir, id: id, report: op.Report, run: op.Records}, nil
}

// inputErr is a result directory's problem: exit 2, naming the file (where
// the cause does not already).
func inputErr(where string, err error) error {
	if where == "" {
		return exitcode.With(err, exitcode.Invalid)
	}
	return exitcode.Errorf(exitcode.Invalid, "%s: %w", where, err)
}
