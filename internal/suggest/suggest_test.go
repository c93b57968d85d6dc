package suggest

import (
	"slices"
	"testing"
)

func TestClosest(t *testing.T) {
	names := []string{"sim", "run", "validate", "compare", "ttft_p95_ms", "ttft_p50_ms"}
	for _, c := range []struct{ in, want string }{
		{"smi", "sim"},              // transposition
		{"valdate", "validate"},     // deletion
		{"Compare", "compare"},      // case
		{"ttft_p95", "ttft_p95_ms"}, // prefix
		{"zzzzzz", ""},              // nothing near
		{"x", ""},
	} {
		if got := Closest(c.in, names); got != c.want {
			t.Errorf("Closest(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if h := Hint("smi", names); h != ` (did you mean "sim"?)` {
		t.Errorf("Hint = %q", h)
	}
	if h := Hint("qqqq", names); h != "" {
		t.Errorf("Hint of nothing = %q", h)
	}
}

func TestSeveral(t *testing.T) {
	names := []string{"ttft_p50_ms", "ttft_p90_ms", "ttft_p95_ms", "ttft_p99_ms", "failed"}
	got := Several("ttft_p59_ms", names, 3)
	if len(got) != 3 || !slices.Contains(got, "ttft_p50_ms") || !slices.Contains(got, "ttft_p99_ms") {
		t.Errorf("Several = %v", got)
	}
	if got := Several("TTFT_p95_ms", names, 3); len(got) == 0 || got[0] != "ttft_p95_ms" {
		t.Errorf("Several ignores case: got %v, want ttft_p95_ms first", got)
	}
	if got := Several("nothing-like-it", names, 3); len(got) != 0 {
		t.Errorf("Several of a stranger = %v", got)
	}
}

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"a", "", 1}, {"ab", "ba", 1}, {"kitten", "sitting", 3}, {"héllo", "hello", 1}} {
		if got := Distance(c.a, c.b); got != c.d {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.d)
		}
	}
}
