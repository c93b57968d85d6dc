package scenario

import (
	"strings"
	"testing"
)

// TestErrorRateCheck: error_rate is a metric a check may name, and the names
// people write for it (failure_rate) or misspell (eror_rate) are pointed to it.
func TestErrorRateCheck(t *testing.T) {
	if _, err := load(t, minimal+"    checks:\n      - expr: error_rate < 0.01\n", env()); err != nil {
		t.Fatalf("error_rate check: %v", err)
	}
	for _, name := range []string{"failure_rate", "fail_rate", "eror_rate"} {
		_, err := load(t, minimal+"    checks:\n      - expr: "+name+" < 0.01\n", env())
		if err == nil || !strings.Contains(err.Error(), "did you mean error_rate?") {
			t.Errorf("%s: want a suggestion of error_rate, got %v", name, err)
		}
	}
}
