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

	"github.com/runnerbench/runner/result"
)

// The files of a result directory, named here once: the records a run
// writes as it goes, and the reports written from them at its end (by the
// reporters, through their formats list).
const (
	FilePlan     = "plan.yaml"
	FileRequests = "requests.jsonl"
	FileRun      = "run.jsonl"
	// FileTelemetry is written by a run that reads telemetry (the
	// endpoint's /metrics or the plan's telemetry targets); a result
	// directory without it has none.
	FileTelemetry = "telemetry.jsonl"

	FileReport  = "report.json"
	FileJUnit   = "junit.xml"
	FileSummary = "summary.md"
	FileHTML    = "report.html"
)

// Files are the record files a result directory holds.
var Files = []string{FilePlan, FileRequests, FileRun, FileTelemetry}

// ReportFiles are the report files a result directory may hold, each
// written by one --report format.
var ReportFiles = []string{FileReport, FileJUnit, FileSummary, FileHTML}

// IsResultDir reports whether dir holds a run's records (run.jsonl) or its
// report (report.json), each a regular file: what tells a result directory
// from a directory that holds them.
func IsResultDir(dir string) bool {
	return isFile(filepath.Join(dir, FileRun)) || isFile(filepath.Join(dir, FileReport))
}

// HasRun reports whether dir holds a run.jsonl, a regular file.
func HasRun(dir string) bool { return isFile(filepath.Join(dir, FileRun)) }

// HasReport reports whether dir holds a report.json, a regular file.
func HasReport(dir string) bool { return isFile(filepath.Join(dir, FileReport)) }

// HasRecords reports whether dir holds a run's records (plan.yaml, run.jsonl
// and requests.jsonl), from which its report and samples can be read.
func HasRecords(dir string) bool {
	for _, f := range []string{FilePlan, FileRun, FileRequests} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return false
		}
	}
	return true
}

func isFile(path string) bool {
	st, err := os.Lstat(path)
	return err == nil && st.Mode().IsRegular()
}

// ReadHeader reads only the run's header, the first line of run.jsonl: what
// tells a result directory from any other (every run writes it first). The
// error does not name the file: the caller says it is run.jsonl.
func ReadHeader(dir string) (*Header, error) {
	_, h, err := ReadHeaderLine(dir)
	return h, err
}

// ReadHeaderLine is ReadHeader, with the header's line as written (spaces
// trimmed): what the results database's run id is the hash of. A first line
// without its newline is still being written, or was cut by a kill: it is
// no header yet.
func ReadHeaderLine(dir string) ([]byte, *Header, error) {
	f, err := os.Open(filepath.Join(dir, FileRun))
	if err != nil {
		return nil, nil, errors.Unwrap(err)
	}
	defer f.Close()
	// A header is a few hundred bytes; 1 MiB bounds what a stranger's
	// file can make us read.
	line, err := bufio.NewReader(io.LimitReader(f, 1<<20)).ReadBytes('\n')
	if errors.Is(err, io.EOF) {
		return nil, nil, errors.New("no complete first line (the run's header)")
	}
	if err != nil {
		return nil, nil, err
	}
	line = bytes.TrimSpace(line)
	var e Entry
	if err := json.Unmarshal(line, &e); err != nil || e.Kind != KindRun || e.Run == nil {
		return nil, nil, errors.New("its first line is not a run's header")
	}
	return line, e.Run, nil
}

// maxReport bounds a report.json read back (a report of 1,000 levels with
// their histograms is a few MiB).
const maxReport = 256 << 20

// ReadReport reads a report.json, refusing a file that is not one: not
// JSON, truncated, another program's JSON, or a report of a newer Runner
// (a schema version this one does not know). One decoding pass reads a
// good report; a bad one is looked at again only to say what it is. The
// error does not name the file: the caller knows which it read.
func ReadReport(path string) (*result.Report, error) {
	data, err := readBounded(path, maxReport)
	if err != nil {
		return nil, err
	}
	var rep result.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		if why := probeReport(data); why != nil {
			return nil, why
		}
		return nil, jsonError(data, err)
	}
	switch {
	case rep.SchemaVersion > result.SchemaVersion:
		return nil, newerReport(rep.SchemaVersion)
	case rep.SchemaVersion < 1 || rep.Plan.Hash == "" || rep.Stages == nil:
		return nil, fmt.Errorf("not a Runner report (no schema_version, plan or stages)")
	}
	return &rep, nil
}

// probeReport says what a report.json that does not decode is, when its
// first fields say so: a newer Runner's (whose fields may have changed).
func probeReport(data []byte) error {
	var probe struct {
		SchemaVersion int `json:"schema_version"`
	}
	if json.Unmarshal(data, &probe) == nil && probe.SchemaVersion > result.SchemaVersion {
		return newerReport(probe.SchemaVersion)
	}
	return nil
}

func newerReport(v int) error {
	return fmt.Errorf("schema_version %d: written by a newer Runner (this one reads %d); upgrade runner", v, result.SchemaVersion)
}

// jsonError says where a JSON file stops being what it should be.
func jsonError(data []byte, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn) && syn.Offset >= int64(len(bytes.TrimRight(data, " \t\r\n"))):
		return fmt.Errorf("truncated JSON (it ends after %d bytes)", len(data))
	case errors.As(err, &syn):
		line, col := position(data, syn.Offset)
		return fmt.Errorf("%d:%d: malformed JSON: %v", line, col, err)
	case errors.As(err, &typ):
		line, col := position(data, typ.Offset)
		return fmt.Errorf("%d:%d: not a Runner report: %v", line, col, err)
	case err.Error() == "unexpected end of JSON input":
		return fmt.Errorf("truncated JSON (it ends after %d bytes)", len(data))
	}
	return fmt.Errorf("malformed JSON: %v", err)
}

// position is the 1-based line and column of a byte offset.
func position(data []byte, off int64) (int, int) {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := len(before) - bytes.LastIndexByte(before, '\n')
	return line, col
}

// readBounded reads a regular file of at most limit bytes.
func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, errors.Unwrap(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file")
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%d bytes, more than the %d MiB a report may be", st.Size(), limit>>20)
	}
	data := make([]byte, 0, st.Size())
	buf := bytes.NewBuffer(data)
	_, err = buf.ReadFrom(f)
	return buf.Bytes(), err
}
