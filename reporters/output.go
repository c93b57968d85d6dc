package reporters

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/runnerbench/runner/internal/atomicfile"
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

// Formats lists every format --report accepts, in the order they are written.
var Formats = []string{FormatTable, FormatJSON, FormatJUnit, FormatMarkdown, FormatHTML}

// File names inside the output directory.
const (
	FileJSON     = "report.json"
	FileJUnit    = "junit.xml"
	FileMarkdown = "summary.md"
	FileHTML     = "report.html"
	FileRequests = "requests.jsonl"
)

// Options carry what WriteAll cannot know by itself.
type Options struct {
	// Baseline is the report the run was compared with (nil: none); the
	// HTML report draws its curves beside the new ones.
	Baseline *result.Report
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
func WriteAll(dir string, r *result.Report, formats []string, opts Options) error {
	if r == nil {
		return errors.New("write reports: nil report")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create output directory: %w", err)
	}
	var errs []error
	for _, f := range formats {
		var (
			name   string
			render func(io.Writer, *result.Report) error
		)
		switch f {
		case FormatTable:
			continue
		case FormatJSON:
			name, render = FileJSON, WriteJSON
		case FormatJUnit:
			name, render = FileJUnit, WriteJUnit
		case FormatMarkdown:
			name, render = FileMarkdown, WriteMarkdown
		case FormatHTML:
			name, render = FileHTML, func(w io.Writer, r *result.Report) error { return html.Write(w, r, opts.Baseline) }
		default:
			errs = append(errs, fmt.Errorf("write reports: unknown format %q", f))
			continue
		}
		var buf bytes.Buffer
		if err := render(&buf, r); err != nil {
			errs = append(errs, fmt.Errorf("render %s: %w", name, err))
			continue
		}
		if err := atomicfile.Write(filepath.Join(dir, name), buf.Bytes()); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
