package compare

import (
	"bytes"
	"strings"
	"testing"

	"github.com/runnerbench/runner/comparison"
	"github.com/runnerbench/runner/result"
)

func p(v float64) *float64 { return &v }

// fixture is a comparison of one level with a verdict of each kind.
func fixture() *comparison.Result {
	return &comparison.Result{
		Summary: result.ComparisonSummary{Confidence: 0.95, Each: 0.999, Gated: 50, Threshold: 0.05, Records: true},
		Levels: []comparison.Level{{Stage: "sw|eep", Label: "c=1", Rows: []result.Comparison{
			{Metric: "tpot_p50_ms", Statistic: "p50", Base: p(2), New: p(2.31), Rel: p(0.155), Interval: &result.Interval{Lo: 0.142, Hi: 0.168},
				Abs: p(0.31), Verdict: "worse", NBase: 120, NNew: 120, Gated: true},
			{Metric: "ttft_p50_ms", Statistic: "p50", Base: p(20), New: p(20.1), Rel: p(0.005), Interval: &result.Interval{Lo: -0.01, Hi: 0.02},
				Abs: p(0.1), Verdict: "same", NBase: 120, NNew: 120, Gated: true},
			{Metric: "ttft_p99_ms", Statistic: "p99", Base: p(24), New: p(27), Rel: p(0.125), Interval: &result.Interval{Lo: -0.02, Hi: 0.3},
				Abs: p(3), Verdict: "inconclusive", Reason: "too few samples: p99 needs 100, base has 32, new 32", NBase: 32, NNew: 32},
			{Metric: "ttft_max_ms", Base: p(30), New: p(40), Rel: p(0.333), Abs: p(10), Verdict: "inconclusive", Reason: "no interval: a maximum is one request's value"},
			{Metric: "dispatch_lag_p99_ms", Base: p(0.1), New: p(5), Rel: p(49), Abs: p(4.9)},
		}}},
		Missing: []string{"sw|eep c=3 is not in the baseline"},
	}
}

// TestMarkdownShowsIntervalsAndVerdicts: the comment names the largest
// significant regression, the gate, each change's interval and verdict,
// inconclusive (with its reason) set apart from same, and the client's
// diagnostics as not judged.
func TestMarkdownShowsIntervalsAndVerdicts(t *testing.T) {
	var md bytes.Buffer
	pct := 10.0
	if err := Markdown(&md, fixture(), Options{FailAbove: &pct}); err != nil {
		t.Fatal(err)
	}
	out := md.String()
	for _, want := range []string{
		"Largest significant regression: **sw\\|eep c=1 `tpot_p50_ms`** +15.5% [+14.2%, +16.8%] (2 → 2.31).",
		"❌ 1 metric(s) significantly worse by more than 10%.",
		"1 worse, 0 better, 1 same, 2 inconclusive.",
		"95% for all 50 gated comparisons together (99.9% each, Bonferroni)",
		"| sw\\|eep | c=1 | `tpot_p50_ms` | 2 | 2.31 | +15.5% | [+14.2%, +16.8%] | 🔴 **worse** |",
		"| `ttft_p50_ms` | 20 | 20.1 | +0.50% | [-1.00%, +2.00%] | ⚪ same |",
		"| `ttft_p99_ms` | 24 | 27 | +12.5% | [-2.00%, +30.0%] | 🟡 _inconclusive: too few samples: p99 needs 100, base has 32, new 32_ |",
		"| `dispatch_lag_p99_ms` | 0.1 | 5 | +4900.0% |  | client: not judged |",
		"> note: sw\\|eep c=3 is not in the baseline",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q:\n%s", want, out)
		}
	}

	md.Reset()
	if err := Markdown(&md, fixture(), Options{ChangedOnly: true}); err != nil {
		t.Fatal(err)
	}
	out = md.String()
	for metric, shown := range map[string]bool{"tpot_p50_ms": true, "ttft_p99_ms": true, "ttft_p50_ms": false, "ttft_max_ms": false, "dispatch_lag_p99_ms": false} {
		if strings.Contains(out, "`"+metric+"` |") != shown {
			t.Errorf("--changed-only: %s shown %v, want %v:\n%s", metric, !shown, shown, out)
		}
	}
}

func TestTextAndNoRegression(t *testing.T) {
	res := fixture()
	res.Levels[0].Rows = res.Levels[0].Rows[1:] // no worse row
	var text, md bytes.Buffer
	if err := Text(&text, res, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Intervals: 95% for all 50", "[-2.00%, +30.0%]", "inconclusive", "too few samples", "client: not judged", "note: sw|eep c=3"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	pct := 5.0
	if err := Markdown(&md, res, Options{FailAbove: &pct}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "No server metric is significantly worse.") || !strings.Contains(md.String(), "✅ No metric significantly worse by more than 5%.") {
		t.Errorf("markdown without a regression:\n%s", md.String())
	}
}
