package reporters

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/runnerbench/runner/records"
	"github.com/runnerbench/runner/result"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// fixture is the golden input: testdata/report.json, a realistic report with
// two stages that ran (closed and open loop), one that could not, nulls,
// low-confidence flags, a level where every request failed, checks of every
// status and warnings.
func fixture(t testing.TB) *result.Report {
	t.Helper()
	return readFixture(t, filepath.Join("testdata", "report.json"))
}

// recorded is report.json of a real run of testdata/recorded/plan.yaml against
// the built-in simulator (the plan says how to record it again): the golden
// tests render what the engine really produces, not only a hand-built report.
func recorded(t testing.TB) *result.Report {
	t.Helper()
	return readFixture(t, filepath.Join("testdata", "recorded", "report.json"))
}

func readFixture(t testing.TB, path string) *result.Report {
	t.Helper()
	r, err := records.ReadReport(path)
	if err != nil {
		t.Fatalf("read fixture %s: %v", path, err)
	}
	return r
}

// golden compares got with testdata/golden/name, or rewrites the file with
// -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./reporters -run %s -update to create it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (rerun with -update if the change is intended)\n--- got ---\n%s\n--- want ---\n%s", name, got, want)
	}
}

func TestGolden(t *testing.T) {
	t.Run("fixture", func(t *testing.T) { goldenSet(t, fixture(t), "") })
	t.Run("recorded", func(t *testing.T) { goldenSet(t, recorded(t), "recorded") })
	t.Run("baseline", func(t *testing.T) { goldenSet(t, withComparison(fixture(t)), "baseline") })
}

// withComparison is r compared with a baseline: its first stage's first
// level with a verdict of each kind, an interval the data cannot bound and a
// metric the gate does not judge, and a level of the run the baseline lacks.
func withComparison(r *result.Report) *result.Report {
	f := func(v float64) *float64 { return &v }
	r.Baseline = "baseline/"
	r.Comparison = &result.ComparisonSummary{Confidence: 0.95, Each: 0.99875, Intervals: 40, Gated: 5, Worse: 1, Better: 1, Same: 2, Inconclusive: 1,
		Levels: 1, Unmatched: 1, Threshold: 0.05, Records: true, Family: &result.GateFamily{Source: "default"}}
	r.Stages[0].Points[0].BaselineComparison = []result.Comparison{
		{Metric: "failed", Statistic: "share", Base: f(0), New: f(0), Abs: f(0), Verdict: "same", Gated: true},
		{Metric: "ttft_p50_ms", Statistic: "p50", Base: f(20), New: f(18), Rel: f(-0.1), Interval: &result.Interval{Lo: -0.12, Hi: -0.08}, Abs: f(-2), Verdict: "better", NBase: 120, NNew: 120, Gated: true},
		{Metric: "tpot_p50_ms", Statistic: "p50", Base: f(2), New: f(2.6), Rel: f(0.3), Interval: &result.Interval{Lo: 0.2, Hi: 0.4}, Abs: f(0.6), Verdict: "worse", NBase: 120, NNew: 120, Gated: true},
		{Metric: "ttft_p99_ms", Statistic: "p99", Base: f(24), New: f(27), Rel: f(0.125), Interval: &result.Interval{Lo: -1, Hi: 3369910125.733}, Abs: f(3), Verdict: "inconclusive",
			Reason: "too few samples: p99 needs 100, base has 32, new 32", NBase: 32, NNew: 32, Gated: true},
		{Metric: "e2e_p95_ms", Statistic: "p95", Base: f(150), New: f(150.5), Rel: f(0.0033), Interval: &result.Interval{Lo: -0.01, Hi: 0.02}, Abs: f(0.5), Verdict: "same", NBase: 120, NNew: 120, Gated: true},
		{Metric: "dispatch_lag_p99_ms", Base: f(0.1), New: f(5), Rel: f(49), Abs: f(4.9)},
	}
	return r
}

// goldenSet renders r in every format and compares each with its golden file
// under testdata/golden/dir.
func goldenSet(t *testing.T, r *result.Report, dir string) {
	for _, tc := range []struct {
		file   string
		render func(*bytes.Buffer) error
	}{
		{"table.txt", func(b *bytes.Buffer) error { return WriteTable(b, r, TableOptions{}) }},
		{"table-100.txt", func(b *bytes.Buffer) error { return WriteTable(b, r, TableOptions{Width: DefaultWidth}) }},
		{"report.json", func(b *bytes.Buffer) error { return WriteJSON(b, r) }},
		{"junit.xml", func(b *bytes.Buffer) error { return WriteJUnit(b, r) }},
		{"summary.md", func(b *bytes.Buffer) error { return WriteMarkdown(b, r) }},
	} {
		t.Run(tc.file, func(t *testing.T) {
			var a, b bytes.Buffer
			if err := tc.render(&a); err != nil {
				t.Fatal(err)
			}
			// Deterministic: map order and the clock must not leak in.
			if err := tc.render(&b); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a.Bytes(), b.Bytes()) {
				t.Fatal("two renderings of the same report differ")
			}
			golden(t, filepath.Join(dir, tc.file), a.Bytes())
		})
	}
}
