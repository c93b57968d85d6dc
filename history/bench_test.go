package history_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/history"
	"github.com/runnerbench/runner/store"
	"github.com/runnerbench/runner/store/synthrun"
)

// BenchmarkHistory1000Runs times a history query over 1,000 published runs
// of one plan (two levels each; docs/performance.md): reading every
// metric's values (s/read) and judging every window too (s/history), and
// the same for one metric, with the process's CPU seconds beside the wall
// clock; marks counts the changes marked (an unchanged history: every one
// a false alarm).
// The database is built first (minutes), not timed, and kept in the temporary
// directory for the next run (delete runner-bench-history-1000.db to build
// it again):
//
//	go test ./history -run '^$' -bench History1000Runs -benchtime 3x
func BenchmarkHistory1000Runs(b *testing.B) {
	ctx := context.Background()
	db := benchDB(b, ctx)
	defer db.Close()
	for _, c := range []struct {
		name    string
		metrics []string
	}{{"all-metrics", nil}, {"one-metric", []string{"ttft_p95_ms"}}} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				start, cpu0 := time.Now(), cpuTime()
				s, err := db.Series(ctx, store.SeriesQuery{Filter: store.Filter{Plan: "nightly"}, Metrics: c.metrics})
				if err != nil {
					b.Fatal(err)
				}
				read := time.Since(start)
				samples := func(run int, stage, label string) (*aggregate.Samples, error) {
					return db.Samples(ctx, s.Runs[run].ID, stage, label)
				}
				h, err := history.Build(s, samples, history.Options{})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(time.Since(start).Seconds(), "s/history")
				b.ReportMetric((cpuTime() - cpu0).Seconds(), "cpu-s/history")
				b.ReportMetric(read.Seconds(), "s/read")
				changes := 0
				for _, se := range h.Series {
					for _, p := range se.Points {
						if p.Change {
							changes++
						}
					}
				}
				b.ReportMetric(float64(changes), "marks")
				b.ReportMetric(float64(len(h.Runs)), "runs")
				b.ReportMetric(float64(len(s.Values)), "values")
			}
		})
	}
}

// cpuTime is the process's CPU time, user and system: on a shared machine
// the wall clock says as much about the neighbours.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchDB(b *testing.B, ctx context.Context) *store.DB {
	path := filepath.Join(os.TempDir(), "runner-bench-history-1000.db")
	_, err := os.Stat(path)
	fresh := err != nil
	tg, _ := store.ParseDSN(path + ".tmp")
	if !fresh {
		tg, _ = store.ParseDSN(path)
	}
	_ = os.Remove(path + ".tmp")
	db, err := store.Open(ctx, tg, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if !fresh {
		return db
	}
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
		_ = os.RemoveAll(dir)
	}
	db.Close()
	if err := os.Rename(path+".tmp", path); err != nil {
		b.Fatal(err)
	}
	tg, _ = store.ParseDSN(path)
	if db, err = store.Open(ctx, tg, store.Options{}); err != nil {
		b.Fatal(err)
	}
	return db
}
