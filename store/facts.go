package store

import (
	"maps"
	"slices"

	"github.com/runnerbench/runner/result"
)

// labelsOf and hostOf are the run's labels and host, as report.json says.
func labelsOf(rep *result.Report) map[string]string { return nil }

func hostOf(rep *result.Report) string { return "" }

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }

// setLabels and setHost put a run's labels and host on its report.
func setLabels(rep *result.Report, l map[string]string) {}

func setHost(rep *result.Report, host string) {}
