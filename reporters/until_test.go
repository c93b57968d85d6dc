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

// untilFixture is until/report.json: a real run of until/plan.yaml against
// the built-in simulator, with a fixed level, one decided by its check, one
// run to a precision, one capped with its check undecided, and a sweep
// stopped at saturation.
func untilFixture(t testing.TB) *result.Report {
	t.Helper()
	return readFixture(t, filepath.Join("testdata", "until", "report.json"))
}

func TestUntilGolden(t *testing.T) { goldenSet(t, untilFixture(t), "until") }

// TestUntilShown: every reporter says why each level stopped, names the
// undecided check as undecided, and lists the skipped levels with the
// reason; the JSON is the schema's.
func TestUntilShown(t *testing.T) {
	r := untilFixture(t)
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
		"table": {table.String(), []string{"Stopped", "fixed", "decided@81", "precise@101", "capped, undecided",
			"■ c=4: decided at 81 requests by interactive; over its 84 requests at 95%: ttft_p95_ms [44.5 ms, 48.9 ms]",
			"■ c=16: precise at 101 requests: ttft_p50_ms within 10%",
			"■ c=64: capped at max_requests, undecided: tail; over its 200 requests at 95%: ttft_p99_ms [754 ms, ∞]",
			"■ sweep: saturated at c=16: at c=64 Out tok/s changed", "; it stopped there and skipped c=256", "2 undecided"}},
		"markdown": {md.String(), []string{"| Level | OK/Failed | Stopped |", "⏹️ c=4: decided at 81 requests", "❓ UNDECIDED", "skipped c=256", "2 undecided"}},
		"junit": {junit.String(), []string{`name="gate / c=256 / level ran"`, `<skipped message="not run: the sweep stopped: saturated at c=16`,
			`<skipped message="UNDECIDED (does not fail the build): undecided when the level stopped (precise@101): ttft_p99_ms [124 ms, ∞] at 95%"`,
			"stopped: decided at 81 requests by interactive"}},
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
	for _, w := range []string{`<ul class="stops" data-stops><li data-level="c=4"><span class="mono">c=4</span>: decided at 81 requests`,
		`<li data-sweep>sweep: saturated at c=16`, `2 undecided</span>`} {
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
