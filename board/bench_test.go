//go:build unix

package board

import (
	"bytes"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// benchDirs makes n result directories in a temporary directory: copies of
// a real small run's records and report (the fixture alpha/night-1: a sweep
// of three levels against the simulator), each with its own labels, as a
// submission repository holds them (results/<engine>/<submission>/).
func benchDirs(b *testing.B, n int) string {
	b.Helper()
	root := b.TempDir()
	src := filepath.Join(fixtures, "alpha", "night-1")
	for i := range n {
		dir := filepath.Join(root, fmt.Sprintf("engine-%d", i%10), fmt.Sprintf("sub-%04d", i))
		copyDir(b, src, dir)
		relabel(b, dir, labelsOf(fmt.Sprintf("engine=e%d gpus=%d hardware=h%d submission=s%04d", i%10, 1<<(i%4), i%3, i)))
	}
	return root
}

// boardOnce is what `runner board DIR --out` does: load every run, build the
// board, render Markdown, HTML and JSON.
func boardOnce(b *testing.B, root string, o LoadOptions) *Board {
	b.Helper()
	runs, skips, err := Load([]string{root}, o)
	if err != nil || len(skips) > 0 {
		b.Fatalf("Load: %v %v", err, skips)
	}
	bd, err := Build(runs, Options{})
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	for _, w := range []func() error{
		func() error { return WriteMarkdown(&buf, bd) },
		func() error { return WriteHTML(&buf, bd) },
		func() error { return WriteJSON(&buf, bd) },
	} {
		if err := w(); err != nil {
			b.Fatal(err)
		}
	}
	return bd
}

// BenchmarkBoard1000Dirs: a board over 1,000 result directories, from their
// report.json files (the default), and recomputed from their records alone
// (--recompute). Issue 24 asks for under 5 s; bench/run.sh puts the figure
// in docs/performance.md.
func BenchmarkBoard1000Dirs(b *testing.B) {
	root := benchDirs(b, 1000)
	for _, c := range []struct {
		name string
		o    LoadOptions
	}{{"report", LoadOptions{}}, {"recompute", LoadOptions{Recompute: true}}} {
		b.Run(c.name, func(b *testing.B) {
			var bd *Board
			start, cpu := time.Now(), cpuTime()
			for b.Loop() {
				bd = boardOnce(b, root, c.o)
			}
			// Wall time depends on what else the machine runs; the
			// process's CPU time (user + system) less so.
			b.ReportMetric(time.Since(start).Seconds()/float64(b.N), "s/board")
			b.ReportMetric((cpuTime()-cpu).Seconds()/float64(b.N), "cpu-s/board")
			if bd.Runs != 1000 || len(bd.Groups) != 1 || len(bd.Groups[0].Rows) != 1000 {
				b.Fatalf("board: %d runs, %d groups", bd.Runs, len(bd.Groups))
			}
		})
	}
}

// cpuTime is the process's CPU time so far (user + system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
