package pipeline

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/runnerbench/runner/records"
	"github.com/runnerbench/runner/result"
)

// Opened is a finished run read back from its result directory: the one
// way the board, the results database (and through it history), runner
// export and the benchmarks read one.
type Opened struct {
	// Dir is the result directory (for a sharded run, its shards'
	// directories, sorted, joined by ", ").
	Dir string
	// Header is the run's header (run.jsonl's first line); nil for a
	// directory that holds a report.json alone.
	Header *records.Header
	// Records are its plan.yaml and run.jsonl, read whole: set when
	// OpenOptions.Records asks for them.
	Records *records.Run
	// Report is its report.json where that belongs to the records (the same
	// plan hash, start and runner version), else computed from the records
	// with the code runner report runs.
	Report *result.Report
}

// OpenOptions say how Open reads a result directory.
type OpenOptions struct {
	// Recompute computes the report from the records even where a
	// report.json that belongs to them is present (slower, the same
	// numbers). A directory without records still gives its report.json.
	Recompute bool
	// Records reads run.jsonl whole (Opened.Records), and refuses a
	// directory without records: publishing writes every level's record.
	Records bool
	// Shard accepts a shard's part of a sharded run alone (export sends
	// what the shard's live run sent); refused otherwise.
	Shard bool
}

// OpenError is a result directory Open refuses, or cannot read: the file at
// fault (the directory where no one file is) and why.
type OpenError struct {
	Path string
	Err  error
}

// Error is the file at fault and why.
func (e *OpenError) Error() string { return e.Path + ": " + e.Err.Error() }

// Unwrap is why.
func (e *OpenError) Unwrap() error { return e.Err }

// Open reads the finished run in dir: its header and report, and with
// o.Records its records. The report is its report.json when that belongs to
// the records, else recomputed from them (a report.json of another run
// beside the records is passed over: the records are the truth). It
// refuses, each with one *OpenError naming the file: a directory with
// neither run.jsonl nor report.json; a run.jsonl whose first line is not a
// run's header; a report.json that is not a report this Runner reads;
// records that cannot be recomputed; a shard's part of a sharded run
// alone; labels past their limits (a hand-edited file).
func Open(dir string, o OpenOptions) (*Opened, error) {
	runPath, reportPath := filepath.Join(dir, records.FileRun), filepath.Join(dir, records.FileReport)
	out := &Opened{Dir: dir}
	hasReport := records.HasReport(dir)
	switch {
	case records.HasRun(dir):
		h, err := records.ReadHeader(dir)
		if err != nil {
			return nil, &OpenError{runPath, err}
		}
		out.Header = h
		if err := refuseShard(h.Shard, o); err != nil {
			return nil, &OpenError{runPath, err}
		}
	case !hasReport:
		return nil, &OpenError{runPath, errors.New("missing: not a result directory")}
	case o.Records:
		return nil, &OpenError{runPath, errors.New("missing: the directory holds a report.json alone, and the run's records are needed")}
	}
	if o.Records {
		if err := out.readRecords(); err != nil {
			return nil, err
		}
	}
	from := reportPath
	if hasReport && !(o.Recompute && out.Header != nil) {
		rep, err := records.ReadReport(reportPath)
		if err != nil {
			return nil, &OpenError{reportPath, err}
		}
		if out.Header == nil || belongs(rep, out.Header) {
			out.Report = rep
		}
	}
	if out.Report == nil {
		if err := out.readRecords(); err != nil {
			return nil, err
		}
		rep, err := recompute(dir, out.Records, nil)
		if err != nil {
			return nil, &OpenError{dir, fmt.Errorf("recomputing its report from the records: %w", err)}
		}
		out.Report, from = rep, runPath
	}
	if err := refuseReport(out.Report, o); err != nil {
		return nil, &OpenError{from, err}
	}
	if !o.Records {
		out.Records = nil // read for recomputing only
	}
	return out, nil
}

// readRecords reads the run's records, once.
func (op *Opened) readRecords() error {
	if op.Records != nil {
		return nil
	}
	run, err := records.ReadRun(op.Dir)
	if err != nil {
		return &OpenError{op.Dir, fmt.Errorf("reading its records: %w", err)}
	}
	op.Records = run
	return nil
}

// OpenShards reads the shards of one sharded run, in any order, as the
// whole run: they are merged into a temporary directory, with the code
// runner merge runs, its report computed from the merged records, and the
// directory removed (the Opened has no Records). Shards that do not make a
// whole run are refused as ReadShards refuses them (ErrRefused); a merged
// run refused as Open refuses one is an *OpenError naming the first shard.
func OpenShards(dirs []string) (*Opened, error) {
	s, err := ReadShards(dirs)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "runner-open-shards-")
	if err != nil {
		return nil, fmt.Errorf("merging the shards: %w", err)
	}
	defer os.RemoveAll(tmp)
	rep, err := s.Write(filepath.Join(tmp, "merged"), nil)
	if err != nil {
		return nil, fmt.Errorf("merging the shards: %w", err)
	}
	sorted := slices.Sorted(slices.Values(dirs))
	if err := refuseReport(rep, OpenOptions{}); err != nil {
		return nil, &OpenError{sorted[0], err}
	}
	return &Opened{Dir: strings.Join(sorted, ", "), Header: s.header(), Report: rep}, nil
}

// belongs reports whether a report.json was computed from the records whose
// header is h.
func belongs(rep *result.Report, h *records.Header) bool {
	return rep.Plan.Hash == h.Plan.Hash && rep.StartedAt.Equal(h.StartedAt) && rep.RunnerVersion == h.RunnerVersion
}

// refuseShard refuses a shard's part of a sharded run, unless o accepts
// one: its levels hold a part of each level, and its checks are the
// merge's. A shard of one is a whole run.
func refuseShard(s *result.Shard, o OpenOptions) error {
	if s == nil || s.Count <= 1 || o.Shard {
		return nil
	}
	return fmt.Errorf("shard %d of %d alone: its levels hold a part of each level; merge every shard first (runner merge)", s.Index, s.Count)
}

// refuseReport refuses what a run's report holds that no reader takes: a
// shard's part (see refuseShard), labels past their limits.
func refuseReport(rep *result.Report, o OpenOptions) error {
	if err := refuseShard(rep.Shard, o); err != nil {
		return err
	}
	return rep.Labels.Check()
}
