package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runnerbench/runner/internal/engines"
	"github.com/runnerbench/runner/records"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/sim"
	"github.com/runnerbench/runner/store"
)

// TestE2EPublishRunAndMerge: runner run --publish and runner merge
// --publish, against the simulator over loopback, into SQLite and into a
// real PostgreSQL server: each run lands once, with its labels, every
// request of its records and its verdict; publishing the directories again
// writes nothing; the board drawn from the database names both runs.
func TestE2EPublishRunAndMerge(t *testing.T) {
	srv := startSimHandler(t, sim.FastConfig(), false, nil)
	plan := writePlan(t, `version: 1
name: published
labels: {engine: sim}
endpoints:
  sim: {base_url: `+srv.URL+`/v1}
prompts:
  syn: {synthetic: {input_tokens: 32}}
stages:
  - name: s
    endpoint: sim
    prompts: syn
    output_tokens: 8
    concurrency: [2]
    duration: 600ms
    checks:
      - expr: failed == 0
`)
	sqlite := filepath.Join(t.TempDir(), "results.db")
	targets := []struct {
		name, dsn string
		env       map[string]string
		flags     []string
		password  string
	}{{name: "sqlite", dsn: sqlite}}
	if pg, err := engines.StartPostgres(context.Background()); err != nil {
		engines.Unavailable(t, err)
	} else {
		t.Cleanup(pg.Stop)
		targets = append(targets, struct {
			name, dsn string
			env       map[string]string
			flags     []string
			password  string
		}{"postgres", pg.URL, map[string]string{"PGPASSWORD": pg.Password}, []string{"--allow-env", "PGPASSWORD@127.0.0.1"}, pg.Password})
	}
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			root := t.TempDir()
			one := filepath.Join(root, "one")
			args := append([]string{"run", plan, "--out", one, "--no-progress", "--report", "json", "--label", "commit=c1", "--publish", tg.dsn}, tg.flags...)
			code, _, errs := runCLI(t, tg.env, args...)
			if code != 0 || !strings.Contains(errs, "published") {
				t.Fatalf("run --publish: exit %d, want 0 and a line saying where it was published:\n%s", code, errs)
			}
			if tg.password != "" && strings.Contains(errs, tg.password) {
				t.Errorf("the password was printed:\n%s", errs)
			}
			// Two shards of the same plan, merged and published.
			at := time.Now().Add(1500 * time.Millisecond).UTC().Format(time.RFC3339Nano)
			shards := []string{filepath.Join(root, "shard-0"), filepath.Join(root, "shard-1")}
			var wg sync.WaitGroup
			codes := make([]int, 2)
			outs := make([]string, 2)
			for i, dir := range shards {
				wg.Go(func() {
					codes[i], _, outs[i] = runCLI(t, nil, "run", plan, "--shard", fmt.Sprintf("%d/2", i), "--start-at", at,
						"--slot-warmup", "300ms", "--slot-drain", "300ms", "--out", dir, "--quiet", "--report", "json", "--label", "commit=m1")
				})
			}
			wg.Wait()
			for i := range shards {
				if codes[i] != 0 {
					t.Fatalf("shard %d: exit %d\n%s", i, codes[i], outs[i])
				}
			}
			merged := filepath.Join(root, "merged")
			args = append([]string{"merge", shards[0], shards[1], "--out", merged, "--report", "json", "--publish", tg.dsn}, tg.flags...)
			if code, _, errs := runCLI(t, tg.env, args...); code != 0 || !strings.Contains(errs, "published") {
				t.Fatalf("merge --publish: exit %d\n%s", code, errs)
			}

			tgt, err := store.ParseDSN(tg.dsn)
			if err != nil {
				t.Fatal(err)
			}
			db, err := store.Open(context.Background(), tgt, store.Options{Password: tg.password, ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			runs, err := db.Runs(context.Background(), store.Filter{Plan: "published"})
			if err != nil {
				t.Fatal(err)
			}
			if len(runs) != 2 {
				t.Fatalf("%d runs of the plan in the database, want 2", len(runs))
			}
			want := map[string]string{"c1": one, "m1": merged}
			for _, r := range runs {
				dir := want[r.Labels["commit"]]
				if dir == "" || r.Labels["engine"] != "sim" {
					t.Errorf("run %s has labels %v", r.ID, r.Labels)
					continue
				}
				rep := loadReport(t, dir)
				if r.Report.Verdict != rep.Verdict || r.Report.Verdict != "pass" || r.Report.Shards != rep.Shards {
					t.Errorf("%s: verdict %q shards %d in the database, %q %d in report.json", dir, r.Report.Verdict, r.Report.Shards, rep.Verdict, rep.Shards)
				}
			}
			rows, err := db.CountRows(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			n := int64(0)
			for _, dir := range []string{one, merged} {
				if err := records.EachRequest(dir, func(*result.Request) error { n++; return nil }); err != nil {
					t.Fatal(err)
				}
			}
			if rows["requests"] != n || n == 0 {
				t.Errorf("%d requests in the database, %d in the two directories' records", rows["requests"], n)
			}
			args = append([]string{"publish", one, merged, "--db", tg.dsn}, tg.flags...)
			if code, out, errs := runCLI(t, tg.env, args...); code != 0 || strings.Count(out, "already in") != 2 {
				t.Errorf("publishing again: exit %d, want both already there:\n%s%s", code, out, errs)
			}
			args = append([]string{"board", "--db", tg.dsn, "--markdown"}, tg.flags...)
			if code, out, errs := runCLI(t, tg.env, args...); code != 0 || !strings.Contains(out, "commit=c1") || !strings.Contains(out, "commit=m1") {
				t.Errorf("board --db: exit %d, want both runs named:\n%s%s", code, out, errs)
			}
		})
	}
}
