package result

import (
	"strings"
	"testing"

	"github.com/runnerbench/runner/internal/stats"
)

// TestBetterDirection ties the catalogue's directions to the statistics
// package's: each judged direction maps to the stats direction of the same
// name, and every metric the catalogue judges has one.
func TestBetterDirection(t *testing.T) {
	for _, b := range []Better{LowerIsBetter, HigherIsBetter} {
		d := b.Direction()
		if d != stats.LowerIsBetter && d != stats.HigherIsBetter {
			t.Fatalf("%v maps to no stats direction (%v)", b, d)
		}
		if !strings.HasPrefix(d.String(), b.String()+" ") {
			t.Errorf("%v maps to %v", b, d)
		}
	}
	if Neutral.Direction() != stats.LowerIsBetter {
		t.Errorf("neutral maps to %v", Neutral.Direction())
	}
}
