package scenario

import (
	"strings"
	"testing"
	"time"
)

// TestSlices: a stage's slices reach the load plan; one out of bounds is a
// plan error at its line and column; without it the load plan has none.
func TestSlices(t *testing.T) {
	p := mustLoad(t, minimal+"    slices: 10s\n", env())
	if lp := p.LoadPlan(p.Stages[0]); lp.Slices != 10*time.Second {
		t.Fatalf("slices %v, want 10s", lp.Slices)
	}
	plain := mustLoad(t, minimal, env())
	if lp := plain.LoadPlan(plain.Stages[0]); lp.Slices != 0 {
		t.Fatalf("a plan without slices has %v", lp.Slices)
	}
	for _, bad := range []string{"500ms", "2h", "-1s"} {
		_, err := load(t, minimal+"    slices: "+bad+"\n", env())
		if err == nil || !strings.Contains(err.Error(), "plan.yaml:13:") || !strings.Contains(err.Error(), "slices must be between 1s and 1h0m0s") {
			t.Errorf("slices: %s: %v", bad, err)
		}
	}
}
