package reporters

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/runnerbench/runner/result"
)

func TestParseFormats(t *testing.T) {
	for in, want := range map[string][]string{
		"table":                          {"table"},
		"table,json,junit,markdown,html": {"table", "json", "junit", "markdown", "html"},
		" JSON , junit,json,md ":         {"json", "junit", "markdown"},
		"json,,junit":                    {"json", "junit"},
	} {
		got, err := ParseFormats(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("ParseFormats(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for in, wantErr := range map[string]string{
		"json,xml": `unknown report format "xml"`,
		"":         "no report format given",
		" , ":      "no report format given",
	} {
		_, err := ParseFormats(in)
		if err == nil || !strings.Contains(err.Error(), wantErr) || !strings.Contains(err.Error(), "table, json, junit, markdown, html") {
			t.Errorf("ParseFormats(%q) error = %v, want %q and the valid list", in, err, wantErr)
		}
	}
}

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
	var htmlCalls int
	opts := Options{HTML: func(w io.Writer, rep *result.Report) error {
		htmlCalls++
		_, err := io.WriteString(w, "<html>"+rep.Plan.Name+"</html>")
		return err
	}}
	if err := WriteAll(dir, r, []string{"table", "json", "junit", "markdown", "html"}, opts); err != nil {
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
	if htmlCalls != 1 {
		t.Errorf("html hook called %d times", htmlCalls)
	}
}

func TestWriteAllErrors(t *testing.T) {
	dir := t.TempDir()
	r := fixture(t)
	// html without a hook fails, but the other reports are still written.
	err := WriteAll(dir, r, []string{"html", "json"}, Options{})
	if err == nil || !strings.Contains(err.Error(), "no html renderer") {
		t.Errorf("err = %v, want the missing html renderer", err)
	}
	if _, statErr := os.Stat(filepath.Join(dir, FileJSON)); statErr != nil {
		t.Errorf("report.json not written after another format failed: %v", statErr)
	}
	boom := errors.New("boom")
	err = WriteAll(dir, r, []string{"html"}, Options{HTML: func(io.Writer, *result.Report) error { return boom }})
	if !errors.Is(err, boom) {
		t.Errorf("hook error not wrapped: %v", err)
	}
	if _, statErr := os.Stat(filepath.Join(dir, FileHTML)); !os.IsNotExist(statErr) {
		t.Error("a failed render must leave no file behind")
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
