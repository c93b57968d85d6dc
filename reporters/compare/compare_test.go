package compare

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/olekukonko/tablewriter/pkg/twwidth"

	"github.com/runnerbench/runner/comparison"
	"github.com/runnerbench/runner/internal/render/termtable"
	"github.com/runnerbench/runner/result"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

func p(v float64) *float64 { return &v }

// fixture is a comparison of two levels (a third is not in the baseline)
// with a verdict of each kind, equal counts, an interval wider than the
// data can say, and rows the gate does not judge.
func fixture() *comparison.Result {
	return &comparison.Result{
		Summary: result.ComparisonSummary{Confidence: 0.95, Each: 0.999, Intervals: 50, Gated: 6, Worse: 2, Better: 1, Same: 2, Inconclusive: 1,
			Levels: 2, Unmatched: 1, Threshold: 0.05, Records: true,
			Family: &result.GateFamily{Source: "plan", Metrics: []string{"failed", "ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms"}}},
		Levels: []comparison.Level{{Stage: "sw|eep", Label: "c=1", Rows: []result.Comparison{
			{Metric: "failed", Statistic: "share", Base: p(0), New: p(0), Abs: p(0), Verdict: "same", Gated: true},
			{Metric: "tpot_p50_ms", Statistic: "p50", Base: p(2), New: p(2.31), Rel: p(0.155), Interval: &result.Interval{Lo: 0.142, Hi: 0.168},
				Abs: p(0.31), Verdict: "worse", NBase: 120, NNew: 120, Gated: true},
			{Metric: "ttft_p50_ms", Statistic: "p50", Base: p(20), New: p(20.1), Rel: p(0.005), Interval: &result.Interval{Lo: -0.01, Hi: 0.02},
				Abs: p(0.1), Verdict: "same", NBase: 120, NNew: 120, Gated: true},
			{Metric: "ttft_p99_ms", Statistic: "p99", Base: p(24), New: p(27), Rel: p(0.125), Interval: &result.Interval{Lo: -1, Hi: 3369910125.733},
				Abs: p(3), Verdict: "inconclusive", Reason: "too few samples: p99 needs 100, base has 32, new 32", NBase: 32, NNew: 32, Gated: true},
			{Metric: "e2e_p95_ms", Base: p(150), New: p(200), Rel: p(0.333), Abs: p(50), Reason: comparison.NotGated},
			{Metric: "dispatch_lag_p99_ms", Base: p(0.1), New: p(5), Rel: p(49), Abs: p(4.9)},
		}}, {Stage: "sw|eep", Label: "c=4", Rows: []result.Comparison{
			{Metric: "tpot_p50_ms", Statistic: "p50", Base: p(2), New: p(3), Rel: p(0.5), Interval: &result.Interval{Lo: 0.4, Hi: 0.6},
				Abs: p(1), Verdict: "worse", NBase: 120, NNew: 120, Gated: true},
			{Metric: "ttft_p50_ms", Statistic: "p50", Base: p(20), New: p(18), Rel: p(-0.1), Interval: &result.Interval{Lo: -0.12, Hi: -0.08},
				Abs: p(-2), Verdict: "better", NBase: 120, NNew: 120, Gated: true},
		}}},
		Missing: []string{"sw|eep c=16 is not in the baseline"},
		Limits:  []string{"stage sw|eep: The KV cache is no longer the limit: a full batch is, from c=16 (it was from c=24)."},
	}
}

func render(t *testing.T, md bool, res *comparison.Result, o Options) string {
	t.Helper()
	var b bytes.Buffer
	var err error
	if md {
		err = Markdown(&b, res, o)
	} else {
		err = Text(&b, res, o)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestFirstLineSaysWhatWasGated: the first line of the text and of the
// Markdown is the headline with the counts, "Partial" when a level of the
// new run has no baseline level, and names the family judged.
func TestFirstLineSaysWhatWasGated(t *testing.T) {
	pct := 10.0
	for _, md := range []bool{false, true} {
		out := render(t, md, fixture(), Options{FailAbove: &pct})
		first, _, _ := strings.Cut(out, "\n")
		want := "Partial: gated 6 (2 worse, 1 better, 2 same, 1 inconclusive), 1 of 3 levels unmatched; judged: the plan's worse() metrics (failed, ttft_p50_ms, ttft_p99_ms, tpot_p50_ms)"
		if !strings.Contains(first, want) {
			t.Errorf("markdown %v: first line %q, want it to hold %q", md, first, want)
		}
	}
	res := fixture()
	res.Summary.Unmatched, res.Summary.Worse, res.Summary.Better, res.Summary.Same, res.Summary.Inconclusive = 0, 0, 0, 0, 6
	res.Summary.InconclusiveWhy = "the client was the bottleneck in the new run"
	res.Missing = nil
	for _, l := range res.Levels {
		for i := range l.Rows {
			if l.Rows[i].Gated {
				l.Rows[i].Verdict, l.Rows[i].Reason = "inconclusive", res.Summary.InconclusiveWhy
			}
		}
	}
	for _, md := range []bool{false, true} {
		first, _, _ := strings.Cut(render(t, md, res, Options{FailAbove: &pct}), "\n")
		if !strings.Contains(first, "Judged nothing: gated 6 (0 worse, 0 better, 0 same, 6 inconclusive), 0 of 2 levels unmatched; every gated comparison is inconclusive (the client was the bottleneck in the new run)") {
			t.Errorf("markdown %v: a blind gate's first line %q", md, first)
		}
	}
	if out := render(t, true, res, Options{FailAbove: &pct}); strings.Contains(out, "✅") || !strings.Contains(out, "🟡 The gate at 10% could judge nothing") {
		t.Errorf("a blind gate looks green:\n%s", out)
	}
}

// TestShowsWhatWasJudgedMostImportantFirst: by default only what was judged
// worse or better is listed, worse first and the larger change first, with
// one line for the rest; --all lists every row; equal counts are same; an
// interval wider than the data can say is unbounded, not a number.
func TestShowsWhatWasJudgedMostImportantFirst(t *testing.T) {
	out := render(t, false, fixture(), Options{})
	i50, i15, better := strings.Index(out, "+50.0%"), strings.Index(out, "+15.5%"), strings.Index(out, "-10.0%")
	if i50 < 0 || i15 < 0 || better < 0 || !(i50 < i15 && i15 < better) {
		t.Errorf("rows not worse first by size, then better:\n%s", out)
	}
	_, table, _ := strings.Cut(out, "\n") // the headline names the family
	for _, hidden := range []string{"ttft_p99_ms", "e2e_p95_ms", "dispatch_lag_p99_ms", "failed"} {
		if strings.Contains(table, hidden) {
			t.Errorf("default view shows %s:\n%s", hidden, out)
		}
	}
	if !strings.Contains(out, "Not shown: 1 inconclusive, 2 same, 2 not judged (--all shows every row).") {
		t.Errorf("no line for the rest:\n%s", out)
	}
	all := render(t, false, fixture(), Options{All: true})
	for _, want := range []string{"ttft_p99_ms", "unbounded", "not gated", "client: not judged"} {
		if !strings.Contains(all, want) {
			t.Errorf("--all lacks %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, "336991") || strings.Contains(all, "Not shown") {
		t.Errorf("--all shows a number for an unbounded interval, or leaves rows out:\n%s", all)
	}
	md := render(t, true, fixture(), Options{All: true})
	if !strings.Contains(md, "| sw\\|eep | c=1 | `failed` | 0 | 0 | 0 |  | ⚪ same |") || !strings.Contains(md, "| `ttft_p99_ms` | 24 | 27 | +12.5% | unbounded | 🟡 _inconclusive") {
		t.Errorf("markdown --all:\n%s", md)
	}
}

// TestGateLine: the gate's line counts what fails it, names a pass as a
// pass over the levels matched, and lists warn-only regressions apart.
func TestGateLine(t *testing.T) {
	pct := 20.0
	out := render(t, true, fixture(), Options{FailAbove: &pct})
	if !strings.Contains(out, "❌ 1 metric(s) significantly worse by more than 20%.") ||
		!strings.Contains(out, "Largest significant regression: **sw\\|eep c=4 `tpot_p50_ms`** +50.0% [+40.0%, +60.0%] (2 → 3).") {
		t.Errorf("gate at 20%%:\n%s", out)
	}
	pct = 60
	if out := render(t, true, fixture(), Options{FailAbove: &pct}); !strings.Contains(out, "✅ No gated metric significantly worse by more than 60%, in the 2 of 3 levels with a baseline level.") {
		t.Errorf("gate at 60%%:\n%s", out)
	}
}

// TestGolden holds the text and Markdown of the fixture, default and --all
// (go test ./reporters/compare -update rewrites them).
func TestGolden(t *testing.T) {
	pct := 10.0
	for name, got := range map[string]string{
		"compare.txt":     render(t, false, fixture(), Options{FailAbove: &pct}),
		"compare-all.txt": render(t, false, fixture(), Options{All: true}),
		"compare.md":      render(t, true, fixture(), Options{FailAbove: &pct}),
		"compare-all.md":  render(t, true, fixture(), Options{All: true}),
	} {
		path := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil || string(want) != got {
			t.Errorf("%s differs from the golden file (go test ./reporters/compare -update, then review the diff): %v\n%s", name, err, got)
		}
	}
}

// TestMarkdownEscapesPlanText: a stage named like a link with markup cannot
// link, inject HTML or start a heading in a pull-request comment.
func TestMarkdownEscapesPlanText(t *testing.T) {
	res := fixture()
	hostile := "[click](http://evil)<img src=x># x"
	for i := range res.Levels {
		res.Levels[i].Stage = hostile
	}
	res.Missing = []string{hostile + " c=16 is not in the baseline"}
	out := render(t, true, res, Options{All: true})
	for _, bad := range []string{"[click](", "<img", "\n# x"} {
		if strings.Contains(out, bad) {
			t.Errorf("the Markdown holds %q from a stage name:\n%s", bad, out)
		}
	}
	if !strings.Contains(out, `\[click\]\(http://evil)&lt;img src=x&gt;\# x`) {
		t.Errorf("the stage name is not shown escaped:\n%s", out)
	}
}

// TestTableFitsItsWidth: runner compare's table is fitted to the terminal
// as the run's is, with headers as written: at 100 and 72 columns no
// table line is wider, and every reason is still there whole.
func TestTableFitsItsWidth(t *testing.T) {
	res := fixture()
	wide := render(t, false, res, Options{All: true})
	if termtable.Widest([]byte(wide)) <= 100 || !strings.Contains(wide, "│ Stage ") || strings.Contains(wide, "STAGE") {
		t.Fatalf("the fixture's table (as wide as its content, headers as written):\n%s", wide)
	}
	for _, width := range []int{100, 72} {
		out := render(t, false, res, Options{All: true, Width: width})
		for _, l := range strings.Split(out, "\n") {
			if strings.ContainsAny(l[:min(len(l), 4)], "┌│├└") && twwidth.Width(l) > width {
				t.Errorf("width %d: a table line of %d columns: %q", width, twwidth.Width(l), l)
			}
		}
		flat := strings.Join(strings.Fields(strings.ReplaceAll(out, "│", " ")), " ")
		for _, why := range []string{"not gated: not a metric the gate judges", "p50 of 120 and 120 requests", "[+40.0%, +60.0%]"} {
			if !strings.Contains(flat, why) {
				t.Errorf("width %d: %q lost:\n%s", width, why, out)
			}
		}
	}
}
