// Command gen writes plan.schema.json and report.schema.json from the Go types.
// Run it with "go generate ./schema" (from the module root) after changing
// scenario, sim or result types.
package main

import (
	"fmt"
	"os"

	"github.com/runnerbench/runner/schema/internal/build"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "schema/gen:", err)
		os.Exit(1)
	}
}

func run() error {
	plan, report, err := build.Schemas()
	if err != nil {
		return err
	}
	if err := os.WriteFile("plan.schema.json", plan, 0o644); err != nil {
		return err
	}
	return os.WriteFile("report.schema.json", report, 0o644)
}
