package pipeline

import (
	"strings"
	"testing"

	"github.com/runnerbench/runner/result"
)

// TestBaselineGaps: a stage or level the baseline lacks is named; a full
// match names nothing.
func TestBaselineGaps(t *testing.T) {
	rate := 4.0
	res := &result.Stage{Name: "s", Points: []result.Point{{Concurrency: 1}, {Concurrency: 8}, {Rate: &rate}}}
	base := &result.Stage{Name: "s", Points: []result.Point{{Concurrency: 1}}}
	got := baselineGaps("b.json", base, res)
	if len(got) != 1 || !strings.Contains(got[0], "baseline b.json has no level c=8, rate=4 of stage s") {
		t.Errorf("missing levels: %q", got)
	}
	if got := baselineGaps("b.json", nil, res); len(got) != 1 || !strings.Contains(got[0], "baseline b.json has no stage s") {
		t.Errorf("missing stage: %q", got)
	}
	if got := baselineGaps("b.json", res, res); len(got) != 0 {
		t.Errorf("full match: %q", got)
	}
	if got := baselineGaps("b.json", nil, &result.Stage{Name: "empty"}); len(got) != 0 {
		t.Errorf("a stage that ran no level: %q", got)
	}
}
