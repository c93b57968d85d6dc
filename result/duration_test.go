package result

import (
	"testing"
	"time"
)

func TestFormatMs(t *testing.T) {
	for _, c := range []struct {
		in   float64
		want string
	}{
		{0, "0.00 ms"}, {0.42, "0.42 ms"}, {2.744, "2.74 ms"}, {9.996, "10.0 ms"},
		{49.571468, "49.6 ms"}, {99.96, "100 ms"}, {496.2, "496 ms"}, {999.6, "1.00 s"},
		{1250, "1.25 s"}, {12_540, "12.5 s"}, {59_999, "1m00s"}, {125_000, "2m05s"},
		{3_725_000, "1h02m"}, {-3.5, "-3.50 ms"},
	} {
		if got := FormatMs(c.in); got != c.want {
			t.Errorf("FormatMs(%v) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := FormatDuration(49571468 * time.Nanosecond); got != "49.6 ms" {
		t.Errorf("FormatDuration(49.571468ms) = %q, want 49.6 ms", got)
	}
}
