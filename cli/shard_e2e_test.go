package cli

// End-to-end tests of sharded runs: shard processes of one plan against one
// simulator process on loopback, merged by runner merge.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runnerbench/runner/aggregate"
	"github.com/runnerbench/runner/records"
	"github.com/runnerbench/runner/result"
)

// startSimProc starts `runner sim --fast --itl-ms 5` on a free loopback port and
// returns its base URL.
func startSimProc(t *testing.T) string {
	t.Helper()
	// Decode steps of 5 ms, not --fast's 1 ms: the runner's kernel-timed
	// read lag on a busy machine passes 1 ms at p99, and a level whose
	// reads are later than its token gaps is rightly client-bound, which
	// leaves a comparison of it nothing to judge.
	p := startRunner(t, childEnv(), "sim", "--fast", "--itl-ms", "5", "--listen", "127.0.0.1:0")
	re := regexp.MustCompile(`at (http://127\.0\.0\.1:\d+/v1)`)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := re.FindStringSubmatch(p.stdout.String()); m != nil {
			return m[1]
		}
		select {
		case <-p.done:
			t.Fatalf("runner sim exited:\n%s", p.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("runner sim printed no URL")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// shardedPlan has a closed-loop stage whose first level has fewer streams
// than three shards, and an open-loop stage; every level lasts 1 s.
func shardedPlan(t *testing.T, url string) string {
	t.Helper()
	return writePlan(t, `version: 1
name: sharded
endpoints:
  sim:
    base_url: `+url+`
prompts:
  syn:
    synthetic:
      input_tokens: {min: 32, max: 96}
stages:
  - name: closed
    endpoint: sim
    prompts: syn
    output_tokens: {min: 8, max: 24}
    concurrency: [2, 5]
    duration: 1s
    checks:
      - expr: failed == 0
  - name: open
    endpoint: sim
    prompts: syn
    output_tokens: 16
    rate: [60]
    arrival: gamma
    burstiness: 2
    duration: 1s
    checks:
      - expr: completed > 10
`)
}

// TestE2EShardsMergeIsTheUnion runs three shard processes of one plan
// against one simulator, merges them, and checks every merged metric
// against the same metrics computed from the union of the shards' records,
// and the headline ones against a computation from the raw samples.
func TestE2EShardsMergeIsTheUnion(t *testing.T) {
	t.Parallel()
	plan := shardedPlan(t, startSimProc(t))
	root := t.TempDir()
	at := time.Now().Add(2 * time.Second).UTC().Format(time.RFC3339Nano)
	var dirs []string
	var procs []*proc
	for i := range 3 {
		dir := filepath.Join(root, fmt.Sprint("shard-", i))
		dirs = append(dirs, dir)
		procs = append(procs, startRunner(t, childEnv(), plan, "--shard", fmt.Sprintf("%d/3", i), "--start-at", at,
			"--slot-warmup", "400ms", "--slot-drain", "300ms", "--out", dir, "--quiet", "--report", "json",
			"--label", "commit=abc123", "--label", fmt.Sprint("pod=runner-", i)))
	}
	for i, p := range procs {
		if code := p.wait(t, 60*time.Second); code != 0 {
			t.Fatalf("shard %d: exit %d\n%s", i, code, p.stderr.String())
		}
		rep := loadReport(t, dirs[i])
		if rep.Shard == nil || *rep.Shard != (result.Shard{Index: i, Count: 3}) || statuses(rep)[result.StatusSkipped] != 3 {
			t.Errorf("shard %d's report: shard %v, checks %v (want all 3 deferred to the merge)", i, rep.Shard, statuses(rep))
		}
	}
	if s := procs[2].stderr.String(); !strings.Contains(s, "level skipped") || !strings.Contains(s, "level_label=c=2") {
		t.Errorf("shard 2 did not say it skipped c=2:\n%s", s)
	}
	merged := filepath.Join(root, "merged")
	code, _, stderr := runRunner(t, childEnv(), "merge", dirs[2], dirs[0], dirs[1], "--out", merged, "--quiet", "--report", "json,junit,markdown,html")
	if code != 0 {
		t.Fatalf("merge: exit %d\n%s", code, stderr)
	}
	rep := loadReport(t, merged)
	if rep.Shards != 3 || statuses(rep)[result.StatusPass] != 3 {
		t.Errorf("merged report: shards %d, checks %v", rep.Shards, statuses(rep))
	}
	checkUnion(t, dirs, merged, rep)
	// The merge keeps the labels the shards agree on, and not a pod's own.
	if len(rep.Labels) != 1 || rep.Labels["commit"] != "abc123" || rep.Host == "" {
		t.Errorf("merged report: labels %v, host %q; want commit=abc123 alone and the shards' host", rep.Labels, rep.Host)
	}
	// merge --baseline: the merged run against itself gates something, says
	// so first, and judged something, so --fail-inconclusive passes.
	vs := filepath.Join(root, "vs")
	if code, _, stderr := runRunner(t, childEnv(), "merge", dirs[0], dirs[1], dirs[2], "--out", vs, "--baseline", merged, "--fail-inconclusive", "--report", "json,markdown"); code != 0 {
		t.Errorf("merge --baseline --fail-inconclusive: exit %d\n%s", code, stderr)
	} else if c := loadReport(t, vs).Comparison; c == nil || c.Gated == 0 || c.Worse != 0 || c.Same == 0 || !c.FailInconclusive ||
		!strings.Contains(readFile(t, filepath.Join(vs, "summary.md")), "\n\nCompared: gated ") {
		t.Errorf("merge --baseline: comparison %+v", c)
	}
	again := filepath.Join(root, "again")
	if code, _, stderr := runRunner(t, childEnv(), "report", merged, "--out", again, "--quiet", "--report", "json"); code != 0 {
		t.Fatalf("report of the merged directory: exit %d\n%s", code, stderr)
	}
	if a, b := readFile(t, filepath.Join(merged, "report.json")), readFile(t, filepath.Join(again, "report.json")); a != b {
		t.Errorf("the merged directory's records recompute to another report:\n%s", firstDiff([]byte(a), []byte(b)))
	}
}

// checkUnion checks each merged level against its shards' records.
func checkUnion(t *testing.T, dirs []string, merged string, rep *result.Report) {
	t.Helper()
	mrun, err := records.ReadRun(merged)
	if err != nil {
		t.Fatal(err)
	}
	var runs []*records.Run
	var reqs []*result.Request
	var reads []*result.TelemetryScrape
	nonces := map[string]bool{}
	for _, d := range dirs {
		run, err := records.ReadRun(d)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, run)
		if err := records.EachTelemetry(d, func(r *result.TelemetryScrape) error { reads = append(reads, r); return nil }); err != nil {
			t.Fatal(err)
		}
		err = records.EachRequest(d, func(r *result.Request) error {
			if nonces[r.Nonce] {
				t.Errorf("nonce %s sent twice", r.Nonce)
			}
			nonces[r.Nonce] = true
			reqs = append(reqs, r)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for i, st := range mrun.Stages {
		for j, mrec := range st.Levels {
			var parts []*result.LevelRecord
			for _, run := range runs {
				parts = append(parts, run.Stages[i].Levels[j])
			}
			checkWindow(t, mrec, parts)
			var union []*result.Request
			for _, r := range reqs {
				if r.Stage == st.Record.Name && r.Level == j && !r.Warmup {
					union = append(union, r)
				}
			}
			var tel []*result.TelemetryScrape
			for _, r := range reads {
				if r.Stage == st.Record.Name && r.Level == j {
					tel = append(tel, r)
				}
			}
			checkPoint(t, mrec, union, tel, rep.Stages[i].Points[j])
		}
	}
}

// checkWindow: the merged window is the union of the shards' windows, its
// gaps all theirs, its server counters the first shard's that has them.
func checkWindow(t *testing.T, m *result.LevelRecord, parts []*result.LevelRecord) {
	t.Helper()
	var start, end time.Time
	var gaps int64
	var server *result.ServerDelta
	for _, p := range parts {
		gaps += p.ITL.Count
		if p.Skipped {
			continue
		}
		if start.IsZero() || p.Start.Before(start) {
			start = p.Start
		}
		if p.End.After(end) {
			end = p.End
		}
		if server == nil {
			server = p.Server
		}
	}
	sj, _ := json.Marshal(server)
	mj, _ := json.Marshal(m.Server)
	if !m.Start.Equal(start) || !m.End.Equal(end) || m.WallNs != int64(end.Sub(start)) || m.ITL.Count != gaps || gaps == 0 || string(sj) != string(mj) || len(m.Parts) != 3 {
		t.Errorf("%s: merged window %v–%v (%d ns), %d gaps, server %s; the shards' union %v–%v, %d gaps, server %s",
			m.Spec.Label, m.Start, m.End, m.WallNs, m.ITL.Count, mj, start, end, gaps, sj)
	}
}

// checkPoint: the merged point is the point of the union's requests, every
// metric of it, and its headline numbers are what the raw samples give.
func checkPoint(t *testing.T, m *result.LevelRecord, union []*result.Request, reads []*result.TelemetryScrape, got result.Point) {
	t.Helper()
	seqs := map[int]bool{}
	for _, r := range union {
		if seqs[r.Seq] {
			t.Errorf("%s: sequence number %d sent by two shards", m.Spec.Label, r.Seq)
		}
		seqs[r.Seq] = true
	}
	s := aggregate.NewStage(0)
	s.LevelStarted(m)
	for _, r := range union {
		s.Request(r)
	}
	s.StageStarted(&result.StageRecord{Name: m.Stage})
	for _, r := range reads {
		s.Telemetry(r)
	}
	want := s.LevelDone(m)
	a, _ := json.Marshal(want)
	var back result.Point // as report.json holds it
	_ = json.Unmarshal(a, &back)
	a, _ = json.Marshal(back)
	b, _ := json.Marshal(got)
	if !bytes.Equal(a, b) {
		t.Errorf("%s: merged point differs from the union's:\nmerged %s\nunion  %s", m.Spec.Label, b, a)
	}
	var ttft []float64
	var out int
	for _, r := range union {
		if r.OK {
			ttft = append(ttft, *r.TTFTMs)
			out += r.OutputTokens
		}
	}
	slices.Sort(ttft)
	rule := func(p float64) float64 { // the reference's percentile rule
		return math.Round(ttft[int(math.RoundToEven(p*float64(len(ttft)-1)))]*100) / 100
	}
	tps := math.Round(float64(out)/time.Duration(m.WallNs).Seconds()*100) / 100
	if got.NRequests != len(union) || len(ttft) < 20 || *got.TTFTP50Ms != rule(0.5) || *got.TTFTP95Ms != rule(0.95) || *got.TTFTP99Ms != rule(0.99) || got.OutputTPSTotal != tps {
		t.Errorf("%s: n %d, ttft p50/p95/p99 %v/%v/%v, %v tok/s; the union's samples: n %d, %v/%v/%v, %v tok/s",
			m.Spec.Label, got.NRequests, *got.TTFTP50Ms, *got.TTFTP95Ms, *got.TTFTP99Ms, got.OutputTPSTotal,
			len(union), rule(0.5), rule(0.95), rule(0.99), tps)
	}
}

// TestE2EOneShardMergeIsTheRun: a one-shard run's merge is the run: the
// same exit code and, byte for byte, the same reports.
func TestE2EOneShardMergeIsTheRun(t *testing.T) {
	t.Parallel()
	for _, plan := range []string{"gate.yaml", "violated.yaml"} {
		t.Run(plan, func(t *testing.T) {
			t.Parallel()
			run, merged := filepath.Join(t.TempDir(), "run"), filepath.Join(t.TempDir(), "merged")
			formats := "json,junit,markdown,html"
			code, _, stderr := runRunner(t, childEnv(), e2ePlan(plan), "--shard", "0/1", "--out", run, "--quiet", "--report", formats)
			if code != 0 && code != 1 {
				t.Fatalf("run: exit %d\n%s", code, stderr)
			}
			code2, _, stderr := runRunner(t, childEnv(), "merge", run, "--out", merged, "--quiet", "--report", formats)
			if code2 != code {
				t.Fatalf("merge: exit %d, the run exited %d\n%s", code2, code, stderr)
			}
			sameReports(t, run, merged, "of the merge differs from the run's")
			// Merging again into the same --out replaces the earlier merge.
			if code3, _, stderr := runRunner(t, childEnv(), "merge", run, "--out", merged, "--quiet", "--report", formats); code3 != code {
				t.Fatalf("second merge into the same --out: exit %d, want %d\n%s", code3, code, stderr)
			}
			sameReports(t, run, merged, "of the second merge differs from the run's")
		})
	}
}
