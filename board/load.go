package board

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/runnerbench/runner/pipeline"
	"github.com/runnerbench/runner/records"
	"github.com/runnerbench/runner/result"
)

// FileReport is the report a result directory holds (reporters writes it).
const FileReport = "report.json"

// LoadOptions say how result directories are read.
type LoadOptions struct {
	// Recompute computes every run's report from its records (plan.yaml,
	// run.jsonl, requests.jsonl) even where a report.json that belongs to
	// them is present; slower, and the same numbers.
	Recompute bool
	// MaxDepth bounds how deep a parent directory is searched for result
	// directories (0: DefaultMaxDepth).
	MaxDepth int
}

// DefaultMaxDepth is how deep below a given directory result directories
// are looked for (results/<submission>/<run>/ is two).
const DefaultMaxDepth = 6

// maxReport bounds a report.json the board reads (a report of 1,000 levels
// with their histograms is a few MiB).
const maxReport = 256 << 20

// Load reads the runs of the given paths: each a result directory, or a
// directory searched for them (hidden directories and symbolic links are
// not followed). The shards of a sharded run are merged first, with the
// code `runner merge` runs. Each run comes from its report.json when that
// belongs to its records (the same plan hash and start), else from its
// records; a directory that cannot be read as a run is a Skip naming the
// file at fault, never a half-read run. The error is for a path that does
// not exist or holds no result directory at all.
func Load(paths []string, o LoadOptions) ([]Run, []Skip, error) {
	if o.MaxDepth <= 0 {
		o.MaxDepth = DefaultMaxDepth
	}
	var dirs []string
	seen := map[string]bool{}
	for _, p := range paths {
		found, err := findResultDirs(p, o.MaxDepth)
		if err != nil {
			return nil, nil, err
		}
		if len(found) == 0 {
			return nil, nil, fmt.Errorf("%s: no result directory in it (one holds run.jsonl or report.json)", p)
		}
		for _, d := range found {
			if !seen[d] {
				seen[d] = true
				dirs = append(dirs, d)
			}
		}
	}
	whole, shards, skips := sortShards(dirs)
	runs, more := readAll(whole, o)
	skips = append(skips, more...)
	for _, set := range shards {
		r, s := mergeShards(set)
		runs = append(runs, r...)
		skips = append(skips, s...)
	}
	slices.SortFunc(skips, func(a, b Skip) int { return strings.Compare(a.Path, b.Path) })
	return runs, skips, nil
}

// isResultDir reports whether dir holds a run's records or report.
func isResultDir(dir string) bool {
	for _, f := range []string{records.FileRun, FileReport} {
		if st, err := os.Lstat(filepath.Join(dir, f)); err == nil && st.Mode().IsRegular() {
			return true
		}
	}
	return false
}

// findResultDirs returns p when it is a result directory, else the result
// directories below it (not below one: a result directory holds one run),
// in lexical order.
func findResultDirs(p string, maxDepth int) ([]string, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, errors.Unwrap(err))
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s: not a directory (give a result directory, or one that holds them)", p)
	}
	if isResultDir(p) {
		return []string{filepath.Clean(p)}, nil
	}
	var out []string
	root := filepath.Clean(p)
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // an unreadable subdirectory holds nothing we can read
		}
		if path == root {
			return nil
		}
		if !d.IsDir() {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") || strings.Count(path[len(root):], string(filepath.Separator)) > maxDepth {
			return filepath.SkipDir
		}
		if isResultDir(path) {
			out = append(out, path)
			return filepath.SkipDir
		}
		return nil
	})
	return out, err
}

// sortShards splits result directories into whole runs and the shards of
// sharded runs, by run (plan hash, runner version, schedule, count).
func sortShards(dirs []string) (whole []string, shards [][]string, skips []Skip) {
	sets := map[string][]string{}
	var order []string
	for _, d := range dirs {
		h, err := records.ReadHeader(d)
		if err != nil || h.Shard == nil {
			whole = append(whole, d)
			continue
		}
		at := ""
		if h.StartAt != nil {
			at = h.StartAt.UTC().Format(time.RFC3339Nano)
		}
		k := fmt.Sprintf("%s\x00%s\x00%s\x00%d", h.Plan.Hash, h.RunnerVersion, at, h.Shard.Count)
		if _, ok := sets[k]; !ok {
			order = append(order, k)
		}
		sets[k] = append(sets[k], d)
	}
	for _, k := range order {
		shards = append(shards, sets[k])
	}
	return whole, shards, skips
}

// readAll reads whole runs, in parallel, keeping the input order.
func readAll(dirs []string, o LoadOptions) ([]Run, []Skip) {
	type res struct {
		run  *Run
		skip *Skip
	}
	out := make([]res, len(dirs))
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(runtime.GOMAXPROCS(0), max(len(dirs), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				r, s := readDir(dirs[i], o)
				out[i] = res{r, s}
			}
		}()
	}
	for i := range dirs {
		next <- i
	}
	close(next)
	wg.Wait()
	var runs []Run
	var skips []Skip
	for _, r := range out {
		if r.run != nil {
			runs = append(runs, *r.run)
		}
		if r.skip != nil {
			skips = append(skips, *r.skip)
		}
	}
	return runs, skips
}

// readDir reads one whole run's result directory.
func readDir(dir string, o LoadOptions) (*Run, *Skip) {
	hasRecords := fileExists(filepath.Join(dir, records.FileRun))
	var hdr *records.Header
	if hasRecords {
		h, err := records.ReadHeader(dir)
		if err != nil {
			return nil, &Skip{Path: filepath.Join(dir, records.FileRun), Reason: err.Error()}
		}
		hdr = h
	}
	reportPath := filepath.Join(dir, FileReport)
	if fileExists(reportPath) && !(o.Recompute && hasRecords) {
		rep, err := ReadReport(reportPath)
		if err != nil {
			return nil, &Skip{Path: reportPath, Reason: err.Error()}
		}
		if hdr == nil || belongs(rep, hdr) {
			return checked(rep, dir, reportPath)
		}
		// A report.json of another run (or an older one) beside the
		// records: the records are the truth.
	}
	if !hasRecords {
		return nil, &Skip{Path: filepath.Join(dir, records.FileRun), Reason: "missing: not a result directory"}
	}
	rep, err := pipeline.Recompute(dir, nil)
	if err != nil {
		return nil, &Skip{Path: dir, Reason: "recomputing its report from the records: " + err.Error()}
	}
	return checked(rep, dir, filepath.Join(dir, records.FileRun))
}

// belongs reports whether a report.json was computed from the records whose
// header is h.
func belongs(rep *result.Report, h *records.Header) bool {
	return rep.Plan.Hash == h.Plan.Hash && rep.StartedAt.Equal(h.StartedAt) && rep.RunnerVersion == h.RunnerVersion
}

// checked is the run of a report read from dir, unless its report holds
// what the board refuses (a shard's part, labels past their limits).
func checked(rep *result.Report, dir, file string) (*Run, *Skip) {
	if rep.Shard != nil {
		return nil, &Skip{Path: file, Reason: fmt.Sprintf("shard %d of %d alone: give every shard's directory (they are merged first)", rep.Shard.Index, rep.Shard.Count)}
	}
	if err := rep.Labels.Check(); err != nil {
		return nil, &Skip{Path: file, Reason: err.Error()}
	}
	run := FromReport(rep, dir)
	return &run, nil
}

// ReadReport reads a report.json, refusing a file that is not one: not
// JSON, truncated, another program's JSON, or a report of a newer Runner
// (a schema version this one does not know). One decoding pass reads a
// good report; a bad one is looked at again only to say what it is.
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

func fileExists(path string) bool {
	st, err := os.Lstat(path)
	return err == nil && st.Mode().IsRegular()
}

// mergeShards merges the shards of one sharded run into a temporary result
// directory (the code `runner merge` runs) and reads the merged run; shards
// that do not make a whole run are each a Skip saying why.
func mergeShards(dirs []string) ([]Run, []Skip) {
	skipAll := func(reason string) []Skip {
		var out []Skip
		for _, d := range dirs {
			out = append(out, Skip{Path: d, Reason: reason})
		}
		return out
	}
	s, err := pipeline.ReadShards(dirs)
	if err != nil {
		return nil, skipAll(strings.TrimPrefix(err.Error(), pipeline.ErrRefused.Error()+": "))
	}
	tmp, err := os.MkdirTemp("", "runner-board-merge-")
	if err != nil {
		return nil, skipAll("merging the shards: " + err.Error())
	}
	defer os.RemoveAll(tmp)
	rep, err := s.Write(filepath.Join(tmp, "merged"), nil)
	if err != nil {
		return nil, skipAll("merging the shards: " + err.Error())
	}
	sorted := slices.Clone(dirs)
	slices.Sort(sorted)
	run, skip := checked(rep, strings.Join(sorted, ", "), sorted[0])
	if skip != nil {
		return nil, []Skip{*skip}
	}
	return []Run{*run}, nil
}
