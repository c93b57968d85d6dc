package board

import (
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
	"github.com/runnerbench/runner/store"
)

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
	if records.IsResultDir(p) {
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
		if records.IsResultDir(path) {
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

// readDir reads one whole run's result directory (pipeline.Open); one it
// refuses is a Skip naming the file at fault.
func readDir(dir string, o LoadOptions) (*Run, *Skip) {
	op, err := pipeline.Open(dir, pipeline.OpenOptions{Recompute: o.Recompute})
	if err != nil {
		return nil, skipOf(dir, err)
	}
	run := FromReport(op.Report, op.Dir)
	return &run, nil
}

// skipOf is the Skip of an error opening dir: the file it names, else dir.
func skipOf(dir string, err error) *Skip {
	var oe *pipeline.OpenError
	if errors.As(err, &oe) {
		return &Skip{Path: oe.Path, Reason: oe.Err.Error()}
	}
	return &Skip{Path: dir, Reason: err.Error()}
}

// mergeShards reads the shards of one sharded run as the whole run
// (pipeline.OpenShards: merged first, with the code runner merge runs);
// shards that do not make a whole run are each a Skip saying why.
func mergeShards(dirs []string) ([]Run, []Skip) {
	op, err := pipeline.OpenShards(dirs)
	var oe *pipeline.OpenError
	switch {
	case errors.As(err, &oe):
		return nil, []Skip{*skipOf("", err)}
	case err != nil:
		reason := strings.TrimPrefix(err.Error(), pipeline.ErrRefused.Error()+": ")
		var out []Skip
		for _, d := range dirs {
			out = append(out, Skip{Path: d, Reason: reason})
		}
		return nil, out
	}
	return []Run{FromReport(op.Report, op.Dir)}, nil
}

// FromStore are the runs of a results database as the board reads them:
// each published report, named by the directory it was published from, so
// a board drawn from the database is the board of those directories.
func FromStore(runs []*store.Run) []Run {
	out := make([]Run, len(runs))
	for i, r := range runs {
		out[i] = FromReport(r.Report, r.Source)
	}
	return out
}
