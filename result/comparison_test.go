package result

import "testing"

// TestIntervalTextUnbounded: an interval whose limit lies more than ten
// times away from the change (on the ratio of new to base) is shown as
// unbounded on that side, and as "unbounded" when both are: the data cannot
// say that much; a wide interval the data can say keeps its numbers.
func TestIntervalTextUnbounded(t *testing.T) {
	for _, tc := range []struct {
		rel, lo, hi float64
		want        string
	}{
		{0.12, -1, 3369910125.733, "unbounded"},
		{0.2, 0.12, 40, "[+12.0%, unbounded]"},
		{-0.5, -0.99, 0.1, "[unbounded, +10.0%]"},
		{14, 13, 16, "[+1300.0%, +1600.0%]"}, // a 15× regression, measured tightly
		{0.1, -0.5, 2, "[-50.0%, +200.0%]"},
		{0.155, 0.142, 0.168, "[+14.2%, +16.8%]"},
	} {
		c := Comparison{Rel: &tc.rel, Interval: &Interval{Lo: tc.lo, Hi: tc.hi}}
		if got := c.IntervalText(); got != tc.want {
			t.Errorf("change %v in [%v, %v]: %q, want %q", tc.rel, tc.lo, tc.hi, got, tc.want)
		}
	}
}

// TestHeadline: the first line of a comparison says what the gate saw.
func TestHeadline(t *testing.T) {
	fam := &GateFamily{Source: "metrics", Metrics: []string{"ttft_p95_ms"}}
	for _, tc := range []struct {
		s    ComparisonSummary
		want string
	}{
		{ComparisonSummary{NothingGated: "no stage is in both"}, "Nothing gated: no stage is in both"},
		{ComparisonSummary{Gated: 2, Same: 2, Levels: 2, Family: fam}, "Compared: gated 2 (0 worse, 0 better, 2 same, 0 inconclusive), 0 of 2 levels unmatched; judged: --metrics ttft_p95_ms"},
		{ComparisonSummary{Gated: 1, Worse: 1, Levels: 1, Unmatched: 2, Family: fam}, "Partial: gated 1 (1 worse, 0 better, 0 same, 0 inconclusive), 2 of 3 levels unmatched; judged: --metrics ttft_p95_ms"},
		{ComparisonSummary{Gated: 2, Inconclusive: 2, Levels: 2, InconclusiveWhy: "starved", Family: fam}, "Judged nothing: gated 2 (0 worse, 0 better, 0 same, 2 inconclusive), 0 of 2 levels unmatched; every gated comparison is inconclusive (starved); judged: --metrics ttft_p95_ms"},
	} {
		if got := tc.s.Headline(); got != tc.want {
			t.Errorf("headline\n got %q\nwant %q", got, tc.want)
		}
	}
}
