// Package schema holds the JSON Schemas of the plan and of report.json,
// generated from the Go types (scenario.Plan, result.Report) by
// "go generate ./schema" and embedded here for "runner schema". A test fails
// when the committed files are stale.
package schema

import _ "embed"

//go:generate go run ./gen

//go:embed plan.schema.json
var planSchema []byte

//go:embed report.schema.json
var reportSchema []byte

// Plan returns the JSON Schema of a plan file.
func Plan() []byte { return planSchema }

// Report returns the JSON Schema of report.json.
func Report() []byte { return reportSchema }
