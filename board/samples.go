package board

import (
	"strings"
	"sync"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/pipeline"
	"github.com/runnerbench/runner/records"
	"github.com/runnerbench/runner/result"
)

// DirSamples is the SamplesFunc of runs Load read from result directories:
// each run's records are replayed once, when a decision first asks for one
// of its levels, and kept for the board's other questions. A run merged
// from shards (its source names every shard), a report.json without its
// records, or records of another run than the one read, give none.
func DirSamples(runs []Run) SamplesFunc {
	byDir := map[string]*Run{}
	for i := range runs {
		byDir[runs[i].Source] = &runs[i]
	}
	var mu sync.Mutex
	cache := map[string]func(stage, label string) *aggregate.Samples{}
	return func(source, stage, level string) *aggregate.Samples {
		mu.Lock()
		defer mu.Unlock()
		f, ok := cache[source]
		if !ok {
			cache[source] = nil
			if r := byDir[source]; r != nil && !strings.Contains(source, ", ") && records.HasRecords(source) {
				rep := &result.Report{Plan: result.Plan{Hash: r.Facts.PlanHash}, StartedAt: r.Facts.StartedAt}
				if s, err := pipeline.RecordSamples(source, rep); err == nil {
					cache[source] = s
				}
			}
			f = cache[source]
		}
		if f == nil {
			return nil
		}
		return f(stage, level)
	}
}
