package reporters

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/runnerbench/runner/internal/atomicfile"
	"github.com/runnerbench/runner/records"
	"github.com/runnerbench/runner/reporters/html"
	"github.com/runnerbench/runner/result"
)

// Report format names, as given to --report.
const (
	FormatTable    = "table"
	FormatJSON     = "json"
	FormatJUnit    = "junit"
	FormatMarkdown = "markdown"
	FormatHTML     = "html"
)

// format is one --report format: its file in the output directory ("" for
// the terminal's table, which WriteAll skips) and how it is rendered.
type format struct {
	name, file string
	render     func(w io.Writer, r *result.Report, o Options) error
}

// formats is every --report format, in the order they are written: the one
// list the command line's --report and WriteAll read.
var formats = []format{
	{FormatTable, "", nil},
	{FormatJSON, records.FileReport, func(w io.Writer, r *result.Report, _ Options) error { return WriteJSON(w, r) }},
	{FormatJUnit, records.FileJUnit, func(w io.Writer, r *result.Report, _ Options) error { return WriteJUnit(w, r) }},
	{FormatMarkdown, records.FileSummary, func(w io.Writer, r *result.Report, _ Options) error { return WriteMarkdown(w, r) }},
	{FormatHTML, records.FileHTML, func(w io.Writer, r *result.Report, o Options) error {
		return html.WriteWith(w, r, html.Options{Baseline: o.Baseline, Telemetry: o.Telemetry})
	}},
}

// Formats lists every format --report accepts, in the order they are written.
var Formats = func() []string {
	out := make([]string, len(formats))
	for i, f := range formats {
		out[i] = f.name
	}
	return out
}()

// Options carry what WriteAll cannot know by itself.
type Options struct {
	// Baseline is the report the run was compared with (nil: none); the
	// HTML report draws its curves beside the new ones.
	Baseline *result.Report
	// Telemetry is the run's telemetry reads as the HTML report draws them
	// over time (nil: none).
	Telemetry *html.Telemetry
}

// DefaultOutDir is where a run writes when --out is not given:
// results/<plan>-<UTC start, 20060102T150405Z>. The plan name is reduced to
// characters safe in a path on every OS, so a plan named "a/b c" cannot
// escape results/.
func DefaultOutDir(planName string, t time.Time) string {
	return filepath.Join("results", safeName(planName)+"-"+t.UTC().Format("20060102T150405Z"))
}

func safeName(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		default:
			return '-'
		}
	}, s)
	s = strings.Trim(s, ".-")
	if s == "" {
		return "run"
	}
	return s
}

// WriteAll writes the selected file reports into dir (created if missing):
// json → report.json, junit → junit.xml, markdown → summary.md, html →
// report.html. "table" is a terminal format and is skipped here. Each file is
// rendered in memory and then written to a temporary file renamed into place,
// so a reader (or a crash) never sees half a report. One report failing does
// not stop the others; the errors are joined.
func WriteAll(dir string, r *result.Report, names []string, opts Options) error {
	if r == nil {
		return errors.New("write reports: nil report")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create output directory: %w", err)
	}
	var errs []error
	for _, name := range names {
		i := slices.IndexFunc(formats, func(f format) bool { return f.name == name })
		if i < 0 {
			errs = append(errs, fmt.Errorf("write reports: unknown format %q", name))
			continue
		}
		f := formats[i]
		if f.render == nil {
			continue // a terminal format
		}
		var buf bytes.Buffer
		if err := f.render(&buf, r, opts); err != nil {
			errs = append(errs, fmt.Errorf("render %s: %w", f.file, err))
			continue
		}
		if err := atomicfile.Write(filepath.Join(dir, f.file), buf.Bytes()); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
