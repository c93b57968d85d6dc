package cli

import (
	"slices"

	"github.com/runnerbench/runner/reporters"
)

// ReportFormats are the report formats --report accepts: reporters' list.
var ReportFormats = reporters.Formats

// DefaultReports is what --report is when not given: every format.
var DefaultReports = slices.Clone(reporters.Formats)
