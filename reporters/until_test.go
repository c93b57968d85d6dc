package reporters

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runnerbench/runner/reporters/html"
	"github.com/runnerbench/runner/result"
)

// withUntil is r as a stage with until: decided and stop_at_saturation
// would have left it: c=1 decided early, c=8 capped with its TTFT check
// undecided (status undecided), c=32 the level that showed saturation,
// c=64 and c=128 skipped.
func withUntil(r *result.Report) *result.Report {
	f := func(v float64) *float64 { return &v }
	st := &r.Stages[0]
	st.Points[0].Stop = &result.LevelStop{Rule: "decided", Reason: result.StopDecided, Requests: 81, Looks: 12,
		By: []string{"interactive ttft p95 under 150ms"}, Confidence: 0.95}
	st.Points[0].Anytime = []result.AnytimeInterval{{Metric: "ttft_p95_ms", Low: f(52.1), High: f(71.04), Confidence: 0.95}}
	st.Points[1].Stop = &result.LevelStop{Rule: "decided", Reason: result.StopCapped, Cap: "max_requests", Looks: 40,
		Undecided: []string{"interactive ttft p95 under 150ms"}, Confidence: 0.95}
	st.Points[1].Anytime = []result.AnytimeInterval{{Metric: "ttft_p95_ms", Low: f(131.5), High: f(162.25), Confidence: 0.95}}
	st.Points[2].Stop = &result.LevelStop{Rule: "ttft_p50_ms within 5%", Reason: result.StopPrecise, Requests: 300, Looks: 20,
		By: []string{"ttft_p50_ms"}, Confidence: 0.95}
	st.Points[2].Anytime = []result.AnytimeInterval{{Metric: "ttft_p50_ms", Low: f(400), High: f(430), Confidence: 0.95}}
	for i := range st.Checks {
		c := &st.Checks[i]
		if c.Name == "interactive ttft p95 under 150ms" && c.LevelLabel == "c=8" {
			c.Status, c.Undecided = result.StatusUndecided, true
			c.Message = "undecided when the level stopped (capped, undecided): ttft_p95_ms [131.5 ms, 162.25 ms] at 95%"
		}
	}
	st.SweepStop = &result.SweepStop{Reason: result.SweepSaturated, Level: "c=8", Shown: "c=32", Confidence: 0.975,
		Evidence: []result.SweepEvidence{{Metric: "output_tps_total", From: 900, To: 930, Change: f(0.033), Low: f(-0.01), High: f(0.07)}},
		Skipped:  []string{"c=64", "c=128"},
		Text:     "saturated at c=8: at c=32 Out tok/s changed +3.3% [−1.0%, +7.0%], less than +10% more, while TTFT p50 grew +400.0% [+380.0%, +420.0%]"}
	return r
}

func TestUntilGolden(t *testing.T) { goldenSet(t, withUntil(fixture(t)), "until") }

// TestUntilShown: every reporter says why each level stopped, names the
// undecided check as undecided, and lists the skipped levels with the
// reason; the JSON is the schema's.
func TestUntilShown(t *testing.T) {
	r := withUntil(fixture(t))
	var table, md, junit bytes.Buffer
	if err := WriteTable(&table, r, TableOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteJUnit(&junit, r); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		out  string
		want []string
	}{
		"table": {table.String(), []string{"Stopped", "decided@81", "capped, undecided", "precise@300",
			"■ c=1: decided at 81 requests by interactive ttft p95 under 150ms; over its 8 requests at 95%: ttft_p95_ms [52.1 ms, 71.0 ms]",
			"■ c=8: capped at max_requests, undecided: interactive ttft p95 under 150ms",
			"■ sweep: saturated at c=8: at c=32 Out tok/s changed +3.3%", "; it stopped there and skipped c=64, c=128", "1 undecided"}},
		"markdown": {md.String(), []string{"| Level | OK/Failed | Stopped |", "⏹️ c=1: decided at 81 requests", "❓ UNDECIDED", "it stopped there and skipped c=64, c=128", "1 undecided"}},
		"junit": {junit.String(), []string{`name="throughput / c=64 / level ran"`, `<skipped message="not run: the sweep stopped: saturated at c=8`,
			`<skipped message="UNDECIDED (does not fail the build): undecided when the level stopped (capped, undecided): ttft_p95_ms [131.5 ms, 162.25 ms] at 95%"`,
			"stopped: decided at 81 requests by interactive ttft p95 under 150ms"}},
	} {
		for _, w := range c.want {
			if !strings.Contains(c.out, w) {
				t.Errorf("%s lacks %q:\n%s", name, w, c.out)
			}
		}
	}
	if err := validateJUnit(junit.Bytes()); err != nil {
		t.Errorf("junit: %v", err)
	}
	var page bytes.Buffer
	if err := html.Write(&page, r, nil); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`<ul class="stops" data-stops><li data-level="c=1"><span class="mono">c=1</span>: decided at 81 requests`,
		`<li data-sweep>sweep: saturated at c=8`, `1 undecided</span>`} {
		if !strings.Contains(page.String(), w) {
			t.Errorf("report.html lacks %q", w)
		}
	}
	schema, err := os.ReadFile(filepath.Join("..", "schema", "report.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := validateAgainst(t, schema, jsonOf(t, r)); err != nil {
		t.Errorf("report.json does not match the schema: %v", err)
	}
}
