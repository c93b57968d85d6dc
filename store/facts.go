package store

import (
	"maps"
	"slices"

	"github.com/runnerbench/runner/result"
)

// labelsOf and hostOf are the run's labels and host, as report.json says.
func labelsOf(rep *result.Report) map[string]string { return rep.Labels }

func hostOf(rep *result.Report) string { return rep.Host }

// setLabels and setHost put a run's labels and host on its report.
func setLabels(rep *result.Report, l map[string]string) {
	if len(l) > 0 {
		rep.Labels = result.Labels(l)
	}
}

func setHost(rep *result.Report, host string) { rep.Host = host }

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }
