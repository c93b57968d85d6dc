package store_test

import (
	"context"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/runnerbench/runner/store"
	"github.com/runnerbench/runner/store/synthrun"
)

// Publishing a run of 1,000,000 requests (docs/performance.md): run with
//
//	go test ./store -run '^$' -bench 'Publish' -benchtime 1x
//
// It prints the seconds to publish (the directory is written first, not
// timed) and the peak Go heap while publishing, beside a run of 100,000
// requests: flat memory is the same peak for both. The CPU seconds are
// the figure a quiet machine's wall clock would show (the database server's
// own work aside).
func BenchmarkPublishSQLite(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(label(n), func(b *testing.B) {
			dir := bigRun(b, n)
			for range b.N {
				db := openSQLite(b, filepath.Join(b.TempDir(), "results.db"), false)
				publishTimed(b, db, dir)
			}
		})
	}
}

func BenchmarkPublishPostgres(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(label(n), func(b *testing.B) {
			dir := bigRun(b, n)
			for range b.N {
				url, pw := pgDatabase(b)
				publishTimed(b, openPg(b, url, pw), dir)
			}
		})
	}
}

// cpuTime is the process's CPU time (user and system): on a machine
// shared with other work, what the wall clock cannot show.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func label(n int) string {
	if n >= 1_000_000 {
		return "1M"
	}
	return "100k"
}

func bigRun(b *testing.B, n int) string {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "run")
	if err := synthrun.Write(dir, synthrun.Spec{StartedAt: day0, Seed: 9, Concurrency: []int{64}, Requests: n}); err != nil {
		b.Fatal(err)
	}
	return dir
}

// publishTimed publishes dir, reporting its seconds and the peak heap.
func publishTimed(b *testing.B, db *store.DB, dir string) {
	b.Helper()
	runtime.GC()
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
	start, cpu0 := time.Now(), cpuTime()
	p, err := db.Publish(context.Background(), dir)
	took, cpu := time.Since(start), cpuTime()-cpu0
	close(stop)
	wg.Wait()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(took.Seconds(), "s/publish")
	b.ReportMetric(cpu.Seconds(), "cpu-s/publish")
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(p.Requests), "requests")
}
