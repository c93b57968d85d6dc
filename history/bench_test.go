package history_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/history"
	"github.com/runnerbench/runner/internal/synthrun"
	"github.com/runnerbench/runner/store"
)

// BenchmarkHistory1000Runs times a history query over 1,000 published runs
// of one plan (two levels each; docs/performance.md): reading every
// metric's values and judging every window, and the same for one metric.
// The database is built first (minutes), not timed:
//
//	go test ./history -run '^$' -bench History1000Runs -benchtime 3x
func BenchmarkHistory1000Runs(b *testing.B) {
	ctx := context.Background()
	tg, _ := store.ParseDSN(filepath.Join(b.TempDir(), "h.db"))
	db, err := store.Open(ctx, tg, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	for i := range 1000 {
		dir := filepath.Join(b.TempDir(), fmt.Sprint(i))
		err := synthrun.Write(dir, synthrun.Spec{StartedAt: day0.Add(time.Duration(i) * 24 * time.Hour), Seed: uint64(i + 1),
			Concurrency: []int{1, 4}, Requests: 60})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := db.Publish(ctx, dir); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct {
		name    string
		metrics []string
	}{{"all-metrics", nil}, {"one-metric", []string{"ttft_p95_ms"}}} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				start := time.Now()
				s, err := db.Series(ctx, store.SeriesQuery{Filter: store.Filter{Plan: "nightly"}, Metrics: c.metrics})
				if err != nil {
					b.Fatal(err)
				}
				samples := func(run int, stage, label string) (*aggregate.Samples, error) {
					return db.Samples(ctx, s.Runs[run].ID, stage, label)
				}
				h, err := history.Build(s, samples, history.Options{})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(time.Since(start).Seconds(), "s/query")
				b.ReportMetric(float64(len(h.Runs)), "runs")
				b.ReportMetric(float64(len(s.Values)), "values")
			}
		})
	}
}
