package board

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/runnerbench/runner/records"
)

// FuzzReadReport: whatever a report.json holds, opening its directory and
// drawing its board is a report or an error, never a panic.
func FuzzReadReport(f *testing.F) {
	good, err := os.ReadFile(filepath.Join(fixtures, "search", "one", records.FileReport))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte(`{"schema_version": 1, "plan": {"name": "p", "hash": "h"}, "stages": [{"name": "s", "points": [{"concurrency": -1, "output_tps_total": 1e308}]}]}`))
	f.Add([]byte(`{"schema_version": 2}`))
	f.Add([]byte(`[]`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, records.FileReport)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		run, skip := readDir(dir, LoadOptions{})
		if skip != nil {
			return
		}
		for _, rank := range []string{"", "output_tps_total at ttft_p95_ms < 500", "capacity:interactive"} {
			r, _ := ParseRank(rank)
			if _, err := Build([]Run{*run, *run}, Options{Rank: r}); err != nil {
				t.Fatal(err)
			}
		}
	})
}
