package store_test

import (
	"cmp"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runnerbench/runner/board"
	"github.com/runnerbench/runner/internal/exitcode"
	"github.com/runnerbench/runner/pipeline"
	"github.com/runnerbench/runner/records"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/store"
	"github.com/runnerbench/runner/store/synthrun"
)

var day0 = time.Date(2030, 3, 1, 2, 0, 0, 0, time.UTC)

// synth writes a synthetic run into a new directory under t's temp dir.
func synth(t testing.TB, s synthrun.Spec) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	if err := synthrun.Write(dir, s); err != nil {
		t.Fatal(err)
	}
	return dir
}

func openSQLite(t testing.TB, path string, ro bool) *store.DB {
	t.Helper()
	tg, err := store.ParseDSN("sqlite:" + path)
	if err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(context.Background(), tg, store.Options{ReadOnly: ro})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// roundTrip publishes two runs into db, publishes the first again (a
// no-op), and holds what the database gives back to the directories': the
// reports, and every comparison sample of every level.
func roundTrip(t *testing.T, db *store.DB) {
	ctx := context.Background()
	dirs := []string{
		synth(t, synthrun.Spec{StartedAt: day0, Seed: 1, Concurrency: []int{1, 4}, Labels: map[string]string{"engine": "sim", "note": "<b>x</b>"}}),
		synth(t, synthrun.Spec{StartedAt: day0.Add(24 * time.Hour), Seed: 2, Concurrency: []int{1, 4}, Labels: map[string]string{"engine": "other"}}),
	}
	for _, d := range dirs {
		p, err := db.Publish(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		if p.Already || p.Requests != 400 || len(p.RunID) != 32 {
			t.Fatalf("publish %s: %+v, want 400 requests written", d, p)
		}
	}
	again, err := db.Publish(ctx, dirs[0])
	if err != nil || !again.Already || again.Requests != 0 {
		t.Fatalf("publishing again: %+v, %v; want a no-op", again, err)
	}
	runs, err := db.Runs(ctx, store.Filter{Plan: "nightly"})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 {
		t.Fatalf("%d runs, want 2", len(runs))
	}
	for i, d := range dirs {
		want := readReport(t, d)
		for si := range want.Stages {
			for pi := range want.Stages[si].Points {
				want.Stages[si].Points[pi].BaselineComparison = nil
			}
		}
		if got, w := jsonOf(t, runs[i].Report), jsonOf(t, want); got != w {
			at := firstDiff(got, w)
			t.Errorf("run %d: the database's report differs from %s's report.json at byte %d:\n got …%s…\nwant …%s…", i, d, at, clip(got, at), clip(w, at))
		}
		sameSamples(t, db, runs[i].ID, d, want)
	}
	sameSeries(t, db)
}

// sameSeries: a history of every metric (read from the levels' points)
// holds the values a history naming every metric reads from level_metrics,
// value for value.
func sameSeries(t *testing.T, db *store.DB) {
	t.Helper()
	ctx := context.Background()
	var names []string
	for _, m := range result.Metrics() {
		names = append(names, m.Name)
	}
	var got [2][]store.Value
	for i, metrics := range [][]string{nil, names} {
		s, err := db.Series(ctx, store.SeriesQuery{Filter: store.Filter{Plan: "nightly"}, Metrics: metrics})
		if err != nil {
			t.Fatal(err)
		}
		got[i] = s.Values
		slices.SortFunc(got[i], func(a, b store.Value) int {
			return cmp.Or(cmp.Compare(a.Run, b.Run), cmp.Compare(a.Stage, b.Stage), cmp.Compare(a.Label, b.Label), cmp.Compare(a.Metric, b.Metric))
		})
	}
	if len(got[0]) < 100 || !slices.Equal(got[0], got[1]) {
		t.Errorf("every metric: %d values; naming them all: %d, or they differ", len(got[0]), len(got[1]))
	}
}

func TestSQLiteRoundTrip(t *testing.T) {
	roundTrip(t, openSQLite(t, filepath.Join(t.TempDir(), "results.db"), false))
}

// sameSamples holds every level's samples read from the database to the
// ones pipeline reads from the directory.
func sameSamples(t *testing.T, db *store.DB, id, dir string, rep *result.Report) {
	t.Helper()
	fromDir, err := pipeline.RecordSamples(dir, rep)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range rep.Stages {
		for _, p := range st.Points {
			got, err := db.Samples(context.Background(), id, st.Name, p.Label())
			if err != nil {
				t.Fatal(err)
			}
			want := fromDir(st.Name, p.Label())
			if got == nil || want == nil {
				t.Fatalf("%s %s: samples %v from the database, %v from the directory", st.Name, p.Label(), got, want)
			}
			for _, src := range []result.Sample{result.SampleTTFT, result.SampleTPOT, result.SampleE2E, result.SampleOutputTokens,
				result.SampleStreamTPS, result.SampleFailed, result.SamplePrefill} {
				if g, w := got.Sample(src), want.Sample(src); !reflect.DeepEqual(g, w) {
					t.Errorf("%s %s sample %v: the database's differs from the directory's", st.Name, p.Label(), src)
				}
			}
		}
	}
}

func readReport(t testing.TB, dir string) *result.Report {
	t.Helper()
	rep, err := records.ReadReport(filepath.Join(dir, records.FileReport))
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func jsonOf(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPublishMalformed: a broken result directory is exit 2 naming the
// file, and leaves nothing in the database, even when the break is in the
// middle of its requests (one transaction per run).
func TestPublishMalformed(t *testing.T) {
	ctx := context.Background()
	db := openSQLite(t, filepath.Join(t.TempDir(), "results.db"), false)
	cases := map[string]struct {
		file   string
		break_ func(path string) error
		want   string
	}{
		"requests line": {records.FileRequests, func(p string) error { return corruptLine(p, 150) }, "requests.jsonl: line 150"},
		"run header":    {records.FileRun, func(p string) error { return os.WriteFile(p, []byte("{\"kind\":\"stage\"}\n"), 0o644) }, "run.jsonl"},
		"foreign json":  {records.FileReport, func(p string) error { return os.WriteFile(p, []byte(`{"name":"not ours"}`), 0o644) }, "report.json"},
		"newer report":  {records.FileReport, func(p string) error { return os.WriteFile(p, []byte(`{"schema_version": 99}`), 0o644) }, "report.json"},
		"no run.jsonl":  {records.FileRun, os.Remove, "run.jsonl"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			dir := synth(t, synthrun.Spec{StartedAt: day0, Seed: 3})
			if err := c.break_(filepath.Join(dir, c.file)); err != nil {
				t.Fatal(err)
			}
			_, err := db.Publish(ctx, dir)
			if err == nil || exitcode.Of(err) != exitcode.Invalid || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v (exit %d), want exit 2 naming %s", err, exitcode.Of(err), c.want)
			}
		})
	}
	runs, err := db.Runs(ctx, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 0 {
		t.Errorf("%d runs in the database after only failed publishes", len(runs))
	}
	assertNoRows(t, db)
}

// corruptLine replaces line n (1-based) of the file with garbage.
func corruptLine(path string, n int) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	lines := strings.SplitAfter(string(b), "\n")
	lines[n-1] = "{\"stage\": oops\n"
	return os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644)
}

func assertNoRows(t *testing.T, db *store.DB) {
	t.Helper()
	n, err := db.CountRows(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for table, c := range n {
		if c != 0 && table != "schema_version" {
			t.Errorf("table %s holds %d rows after a failed publish", table, c)
		}
	}
}

// TestReadOnlyAndUnreachable: a database that cannot be written, or is not
// there, is exit 3 with the cause.
func TestReadOnlyAndUnreachable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Log("as root a file's mode does not stop writes: the read-only case opens the database read-only instead")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "results.db")
	openSQLite(t, path, false).Close()
	ro := openSQLite(t, path, true)
	_, err := ro.Publish(ctx, synth(t, synthrun.Spec{StartedAt: day0}))
	if err == nil || exitcode.Of(err) != exitcode.RunFailed || !strings.Contains(err.Error(), "readonly") {
		t.Errorf("publish into a read-only database: %v (exit %d), want exit 3 saying it is read-only", err, exitcode.Of(err))
	}
	tg, _ := store.ParseDSN(filepath.Join(t.TempDir(), "missing.db"))
	if _, err := store.Open(ctx, tg, store.Options{ReadOnly: true}); err == nil || exitcode.Of(err) != exitcode.RunFailed || !strings.Contains(err.Error(), "no database") {
		t.Errorf("a missing database: %v, want exit 3 saying there is none", err)
	}
	tg, _ = store.ParseDSN(filepath.Join(t.TempDir(), "no", "such", "dir.db"))
	if _, err := store.Open(ctx, tg, store.Options{}); err == nil || exitcode.Of(err) != exitcode.RunFailed {
		t.Errorf("a database in a missing directory: %v, want exit 3", err)
	}
}

func firstDiff(a, b string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func clip(s string, at int) string { return s[max(0, at-60):min(len(s), at+60)] }

// TestBoardFromDatabase: the board drawn from the database equals the board
// drawn from the result directories it was published from, also with a
// label filter and --since.
func TestBoardFromDatabase(t *testing.T) {
	ctx := context.Background()
	db := openSQLite(t, filepath.Join(t.TempDir(), "results.db"), false)
	parent := t.TempDir()
	var dirs []string
	for i, engine := range []string{"vllm", "sglang", "vllm", "<i>x</i>"} {
		dir := filepath.Join(parent, "run"+string(rune('a'+i)))
		err := synthrun.Write(dir, synthrun.Spec{StartedAt: day0.Add(time.Duration(i) * time.Hour), Seed: uint64(10 + i),
			TTFTMs: 80 + 10*float64(i), Concurrency: []int{1, 4}, Labels: map[string]string{"engine": engine, "gpus": "2"}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Publish(ctx, dir); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	fromDirs, skips, err := board.Load([]string{parent}, board.LoadOptions{})
	if err != nil || len(skips) > 0 {
		t.Fatal(err, skips)
	}
	published, err := db.Runs(ctx, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	fromDB := board.FromStore(published)
	if len(fromDB) != 4 {
		t.Fatalf("%d runs from the database, want 4", len(fromDB))
	}
	want, got := mustBoard(t, fromDirs), mustBoard(t, fromDB)
	if !strings.Contains(want, `"rows":[{`) || !strings.Contains(want, `\u003ci\u003ex`) {
		t.Fatalf("the directories' board has no rows, or lost a label: %s", want)
	}
	if got != want {
		at := firstDiff(got, want)
		t.Fatalf("the board from the database differs at byte %d:\n got …%s…\nwant …%s…", at, clip(got, at), clip(want, at))
	}
	vllm, err := db.Runs(ctx, store.Filter{Where: map[string]string{"engine": "vllm"}, Since: day0.Add(30 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if len(vllm) != 1 || vllm[0].Source != dirs[2] {
		t.Errorf("--where engine=vllm --since: %d runs, want only %s", len(vllm), dirs[2])
	}
}

func mustBoard(t *testing.T, runs []board.Run) string {
	t.Helper()
	b, err := board.Build(runs, board.Options{Metrics: board.DefaultMetrics})
	if err != nil {
		t.Fatal(err)
	}
	return jsonOf(t, b)
}
