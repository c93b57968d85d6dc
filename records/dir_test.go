package records

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runnerbench/runner/result"
)

// TestReadReportRefuses: every file that is not a report this Runner reads
// is one error saying what it is, and a good one reads back.
func TestReadReportRefuses(t *testing.T) {
	dir := t.TempDir()
	put := func(name, body string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := `{"schema_version": 1, "plan": {"name": "p", "hash": "h"}, "stages": []}`
	for name, c := range map[string]struct{ body, want string }{
		"future":     {`{"schema_version": 2, "stages": []}`, "schema_version 2: written by a newer Runner"},
		"future bad": {`{"schema_version": 2, "stages": 7}`, "schema_version 2: written by a newer Runner"},
		"missing":    {`{"stages": []}`, "not a Runner report"},
		"zero":       {`{"schema_version": 0}`, "not a Runner report"},
		"string":     {`{"schema_version": "1"}`, "1:23: not a Runner report"},
		"typed":      {`{"schema_version": 1, "plan": {"name": "p", "hash": "h"}, "stages": 3}`, "not a Runner report"},
		"empty":      {``, "truncated JSON"},
		"truncated":  {good[:30], "truncated JSON"},
		"garbage":    {"not json", "1:3: malformed JSON"},
	} {
		_, err := ReadReport(put(name+".json", c.body))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, c.want)
		}
	}
	if _, err := ReadReport(filepath.Join(dir, "absent.json")); err == nil || strings.Contains(err.Error(), dir) {
		t.Errorf("a missing file: %v (want an error that leaves naming the file to the caller)", err)
	}
	if _, err := ReadReport(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a directory: %v", err)
	}
	rep, err := ReadReport(put("good.json", good))
	if err != nil || rep.SchemaVersion != result.SchemaVersion || rep.Plan.Hash != "h" {
		t.Errorf("a good report: %+v, %v", rep, err)
	}
}

// TestIsResultDir: a directory is a result directory when it holds run.jsonl
// or report.json as regular files; a directory of that name is not one.
func TestIsResultDir(t *testing.T) {
	root := t.TempDir()
	mk := func(dir, file string, asDir bool) string {
		t.Helper()
		d := filepath.Join(root, dir)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		if asDir {
			err = os.Mkdir(filepath.Join(d, file), 0o755)
		} else {
			err = os.WriteFile(filepath.Join(d, file), nil, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	for d, want := range map[string]bool{
		mk("records", FileRun, false):     true,
		mk("report", FileReport, false):   true,
		mk("plan", FilePlan, false):       false,
		mk("dirnamed", FileRun, true):     false,
		mk("summary", FileSummary, false): false,
	} {
		if got := IsResultDir(d); got != want {
			t.Errorf("IsResultDir(%s) = %v, want %v", filepath.Base(d), got, want)
		}
	}
}

// TestReadHeaderLine: the header's line comes back as written; a first line
// still being written (no newline yet), or not a header, is no header.
func TestReadHeaderLine(t *testing.T) {
	header := `{"kind":"run","run":{"runner_version":"v","plan":{"name":"p","path":"p.yaml","hash":"h"},"started_at":"2030-01-02T03:04:05Z","stages":["s"]}}`
	for name, c := range map[string]struct{ body, want string }{
		"whole":     {header + "\n{\"kind\":\"end\"}\n", ""},
		"cut":       {header, "no complete first line"},
		"not a run": {`{"kind":"level"}` + "\n", "not a run's header"},
		"empty":     {"", "no complete first line"},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, FileRun), []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		line, h, err := ReadHeaderLine(dir)
		switch {
		case c.want == "" && (err != nil || string(line) != header || h.Plan.Hash != "h"):
			t.Errorf("%s: %q, %+v, %v", name, line, h, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), dir)):
			t.Errorf("%s: %v, want an error saying %q, not naming the file", name, err, c.want)
		}
	}
	if _, err := ReadHeader(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("no run.jsonl: %v", err)
	}
}
