package reporters

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/runnerbench/runner/records"
	"github.com/runnerbench/runner/reporters/html"
)

func TestDefaultOutDir(t *testing.T) {
	ts := time.Date(2026, 3, 4, 5, 6, 7, 0, time.FixedZone("x", 3600))
	for plan, want := range map[string]string{
		"my-plan": "results/my-plan-20260304T040607Z",
		"a/b c":   "results/a-b-c-20260304T040607Z",
		"../../x": "results/x-20260304T040607Z",
		"":        "results/run-20260304T040607Z",
		"ok_v1.2": "results/ok_v1.2-20260304T040607Z",
	} {
		if got := DefaultOutDir(plan, ts); got != filepath.FromSlash(want) {
			t.Errorf("DefaultOutDir(%q) = %q, want %q", plan, got, want)
		}
	}
}

func TestWriteAll(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out", "run")
	r := fixture(t)
	if err := WriteAll(dir, r, []string{"table", "json", "junit", "markdown", "html"}, Options{}); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"junit.xml", "report.html", "report.json", "summary.md"}; !reflect.DeepEqual(names, want) {
		t.Errorf("files = %v, want %v (and no temp files left)", names, want)
	}
	check := func(name string, render func(*bytes.Buffer) error) {
		var want bytes.Buffer
		if err := render(&want); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Errorf("%s differs from its renderer's output", name)
		}
	}
	check("report.json", func(b *bytes.Buffer) error { return WriteJSON(b, r) })
	check("junit.xml", func(b *bytes.Buffer) error { return WriteJUnit(b, r) })
	check("summary.md", func(b *bytes.Buffer) error { return WriteMarkdown(b, r) })
	check("report.html", func(b *bytes.Buffer) error { return html.Write(b, r, nil) })
}

func TestWriteAllErrors(t *testing.T) {
	dir := t.TempDir()
	r := fixture(t)
	// An unknown format fails, but the other reports are still written.
	err := WriteAll(dir, r, []string{"pdf", "json"}, Options{})
	if err == nil || !strings.Contains(err.Error(), `unknown format "pdf"`) {
		t.Errorf("err = %v, want the unknown format", err)
	}
	if _, statErr := os.Stat(filepath.Join(dir, records.FileReport)); statErr != nil {
		t.Errorf("report.json not written after another format failed: %v", statErr)
	}
	if err := WriteAll(dir, nil, []string{"json"}, Options{}); err == nil {
		t.Error("nil report accepted")
	}
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteAll(filepath.Join(blocker, "sub"), r, []string{"json"}, Options{}); err == nil {
		t.Error("want an error when the directory cannot be created")
	}
}

// TestReadmeReportFormats: the run flags (docs/cli.md) list every --report
// format, in order (the one list is Formats).
func TestReadmeReportFormats(t *testing.T) {
	b, err := os.ReadFile("../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := "`--report " + strings.Join(Formats, ",") + "`"; !strings.Contains(string(b), want) {
		t.Fatalf("docs/cli.md does not list %s", want)
	}
}

// TestFormatsWriteReportFiles: the files the --report formats write are
// records.ReportFiles, the result directory's report files (which runner
// run --out clears and the board and compare read), each once.
func TestFormatsWriteReportFiles(t *testing.T) {
	var files []string
	for _, f := range formats {
		if f.file != "" {
			files = append(files, f.file)
		}
	}
	if !reflect.DeepEqual(files, records.ReportFiles) {
		t.Errorf("the formats write %v; records.ReportFiles lists %v", files, records.ReportFiles)
	}
}
