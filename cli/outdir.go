package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/runnerbench/runner/internal/exitcode"
	"github.com/runnerbench/runner/records"
)

// resultFiles are the files a run writes into its result directory: its
// records and every report.
func resultFiles() []string {
	return append(slices.Clone(records.Files), records.ReportFiles...)
}

// isResultFile reports whether name is a file a run writes, or the
// temporary file one is written through (".report.json.123.tmp", left
// behind by a crash mid-write).
func isResultFile(name string) bool {
	for _, f := range resultFiles() {
		if name == f || (strings.HasPrefix(name, "."+f+".") && strings.HasSuffix(name, ".tmp")) {
			return true
		}
	}
	return false
}

// prepareOutDir makes dir ready to hold this run's result, whole and alone:
// a result directory holds one run, or its reports could mix two (a new
// report.json beside the summary.md of the run before, when --report names
// fewer formats). A missing or empty directory is used as it is. One that
// holds an earlier run, and nothing else, has that run's files removed:
// --out names where this run's result goes, and re-running into the same
// directory is the everyday loop. One that holds anything Runner did not
// write is refused (exit 2) and left untouched: it is not a result
// directory (a mistyped --out, the repository's root), and Runner never
// deletes a file it did not write. Its earlier run is recognised by
// what only a run writes (earlierRun), so a stray plan.yaml of the user's
// is never taken for one. baseline (--baseline) may not be inside a directory about to be
// cleaned.
func prepareOutDir(dir, baseline string, log zerolog.Logger) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		if st, serr := os.Stat(dir); serr == nil && !st.IsDir() {
			return exitcode.Errorf(exitcode.Invalid, "--out %s: not a directory", dir)
		}
		return exitcode.Errorf(exitcode.RunFailed, "--out %s: %v", dir, err)
	case len(entries) == 0:
		return nil
	}
	var ours, foreign []string
	for _, e := range entries {
		if isResultFile(e.Name()) && !e.IsDir() {
			ours = append(ours, e.Name())
		} else {
			foreign = append(foreign, e.Name())
		}
	}
	what, ok := earlierRun(dir)
	if len(foreign) > 0 || !ok {
		return refuseOutDir(dir, foreign, ours)
	}
	if baseline != "" && within(baseline, dir) {
		return exitcode.Errorf(exitcode.Invalid, "--baseline %s is inside --out %s, whose earlier run this run replaces: copy the baseline elsewhere first, or write to another --out", baseline, dir)
	}
	for _, name := range ours {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return exitcode.Errorf(exitcode.RunFailed, "--out %s: removing the earlier run's %s: %v", dir, name, err)
		}
	}
	log.Info().Str("dir", dir).Str("earlier", what).Msg("replacing the earlier run's result in the output directory")
	return nil
}

// earlierRun recognises a result directory by what only a run writes: the
// header run.jsonl starts with, or (where only reports were written, by
// "runner report --out") a report.json that opens with its schema_version.
// It says which run it found.
func earlierRun(dir string) (string, bool) {
	if h, err := records.ReadHeader(dir); err == nil {
		return "plan " + h.Plan.Name + ", started " + h.StartedAt.Format(time.RFC3339), true
	}
	f, err := os.Open(filepath.Join(dir, records.FileReport))
	if err != nil {
		return "", false
	}
	defer f.Close()
	dec := json.NewDecoder(io.LimitReader(f, 64<<10))
	var toks []json.Token
	for range 3 {
		t, err := dec.Token()
		if err != nil {
			return "", false
		}
		toks = append(toks, t)
	}
	if toks[0] != json.Delim('{') || toks[1] != "schema_version" {
		return "", false
	}
	if _, isNum := toks[2].(float64); !isNum {
		return "", false
	}
	return "reports only (" + records.FileReport + ")", true
}

// refuseOutDir is the error for a directory that is not (only) a result
// directory, naming a few of the files that make it so.
func refuseOutDir(dir string, foreign, ours []string) error {
	names := foreign
	what := "files Runner did not write"
	if len(foreign) == 0 {
		names, what = ours, "files named like a result's but no run header in "+records.FileRun
	}
	var shown []string
	for i, n := range names {
		if i == 5 {
			shown = append(shown, fmt.Sprintf("and %d more", len(names)-5))
			break
		}
		shown = append(shown, strconv.Quote(n)) // a file name can hold anything, a terminal escape too
	}
	return exitcode.Errorf(exitcode.Invalid, "--out %s holds %s (%s): a result directory holds one run and nothing else, and Runner deletes only its own files; choose a new or empty directory",
		dir, what, strings.Join(shown, ", "))
}

// within reports whether path is dir or inside it, lexically.
func within(path, dir string) bool {
	p, err1 := filepath.Abs(path)
	d, err2 := filepath.Abs(dir)
	if err1 != nil || err2 != nil {
		return false
	}
	rel, err := filepath.Rel(d, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
