package compare

import (
	"bytes"
	"strings"
	"testing"

	"github.com/runnerbench/runner/result"
)

func report(points ...result.Point) *result.Report {
	return &result.Report{Stages: []result.Stage{{Name: "throughput", Points: points}}}
}

func find(t *testing.T, res *Result, level, metric string) Row {
	t.Helper()
	for _, r := range res.Rows {
		if r.Level == level && r.Metric == metric {
			return r
		}
	}
	t.Fatalf("no row for %s %s", level, metric)
	return Row{}
}

func TestDirectionAndRegression(t *testing.T) {
	base := report(result.Point{Concurrency: 8, OutputTPSTotal: 1000, TTFTP95Ms: result.Ptr(200.0), Failed: 0, DurationS: 10})
	cur := report(result.Point{Concurrency: 8, OutputTPSTotal: 900, TTFTP95Ms: result.Ptr(180.0), Failed: 2, DurationS: 12})
	res := Reports(base, cur)

	tps := find(t, res, "c=8", "output_tps_total")
	if !tps.Regression || tps.Direction != result.HigherIsBetter || tps.Delta != -100 || *tps.Rel != -0.1 {
		t.Errorf("throughput drop: got %+v (rel %v)", tps, *tps.Rel)
	}
	if got := tps.RegressionPct(); got < 9.999 || got > 10.001 {
		t.Errorf("regression pct = %v, want 10", got)
	}
	ttft := find(t, res, "c=8", "ttft_p95_ms")
	if ttft.Regression || ttft.Direction != result.LowerIsBetter || ttft.mark() != "better" {
		t.Errorf("ttft improvement marked wrong: %+v", ttft)
	}
	failed := find(t, res, "c=8", "failed")
	if !failed.Regression || failed.Rel != nil {
		t.Errorf("failed 0 -> 2 must be a regression with no relative change: %+v", failed)
	}
	dur := find(t, res, "c=8", "duration_s")
	if dur.Regression || dur.mark() != "" {
		t.Errorf("duration is informational: %+v", dur)
	}
	for _, r := range res.Rows {
		if r.Metric == "concurrency" {
			t.Errorf("identity field compared: %+v", r)
		}
	}
	if got := len(res.Regressions(5)); got != 1 {
		t.Errorf("regressions above 5%% = %d, want 1 (throughput; failed has no relative change)", got)
	}
	if got := len(res.Regressions(15)); got != 0 {
		t.Errorf("regressions above 15%% = %d, want 0", got)
	}
}

func TestNullMetricsAreNotCompared(t *testing.T) {
	res := Reports(report(result.Point{Concurrency: 1}), report(result.Point{Concurrency: 1, TTFTP50Ms: result.Ptr(3.0)}))
	for _, r := range res.Rows {
		if r.Metric == "ttft_p50_ms" {
			t.Fatalf("null baseline metric compared: %+v", r)
		}
	}
}

func TestMissingLevelsAndStagesNamed(t *testing.T) {
	base := &result.Report{Stages: []result.Stage{
		{Name: "a", Points: []result.Point{{Concurrency: 1}, {Concurrency: 4}}},
		{Name: "gone"},
	}}
	rate := 2.0
	cur := &result.Report{Stages: []result.Stage{
		{Name: "a", Points: []result.Point{{Concurrency: 1}, {Concurrency: 8}, {Rate: &rate}}},
		{Name: "new"},
	}}
	res := Reports(base, cur)
	joined := strings.Join(res.Missing, "\n")
	for _, want := range []string{"a c=8 is not in the baseline", "a rate=2 is not in the baseline", "a c=4 is only in the baseline", "stage new is not in the baseline", "stage gone is only in the baseline"} {
		if !strings.Contains(joined, want) {
			t.Errorf("missing note %q in:\n%s", want, joined)
		}
	}
}

func TestRenderers(t *testing.T) {
	base := report(result.Point{Concurrency: 8, OutputTPSTotal: 1000})
	cur := report(result.Point{Concurrency: 8, OutputTPSTotal: 800})
	res := Reports(base, cur)
	var text, md bytes.Buffer
	if err := Text(&text, res, true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "-20.0%") || !strings.Contains(text.String(), "worse") {
		t.Errorf("text table lacks the change:\n%s", text.String())
	}
	pct := 10.0
	if err := Markdown(&md, res, true, &pct); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| throughput | c=8 | `output_tps_total` | 1000 | 800 | -200.00 | -20.0% | 🔴 worse |", "regressed by more than 10%", "Largest regression: **throughput c=8 output_tps_total** -20.0%"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
}
