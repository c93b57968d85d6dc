package wire

import (
	"strings"
	"testing"
)

// TestImplausibleUsage holds each bound of what usage can be.
func TestImplausibleUsage(t *testing.T) {
	for _, c := range []struct {
		st        streamEnd
		max, sent int
		want      string
	}{
		{streamEnd{usage: true, promptTok: 12, compTok: 8}, 8, 400, ""},
		{streamEnd{}, 8, 400, ""},
		{streamEnd{usage: true, usageBad: true, promptTok: 12}, 8, 400, "not an integer"},
		{streamEnd{usage: true, promptTok: -5, compTok: 8}, 8, 400, "prompt_tokens -5 is negative"},
		{streamEnd{usage: true, promptTok: 5, compTok: -1}, 8, 400, "completion_tokens -1 is negative"},
		{streamEnd{usage: true, promptTok: 5, compTok: 32}, 8, 400, ""}, // 2×8+16
		{streamEnd{usage: true, promptTok: 5, compTok: 33}, 8, 400, "far above max_tokens 8"},
		{streamEnd{usage: true, promptTok: 5, compTok: 1 << 40}, 0, 400, ""}, // no max_tokens known
		{streamEnd{usage: true, promptTok: 400 + 1<<16, compTok: 8}, 8, 400, ""},
		{streamEnd{usage: true, promptTok: 401 + 1<<16, compTok: 8}, 8, 400, "far above the 400 bytes sent"},
	} {
		got := c.st.implausibleUsage(c.max, c.sent)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%+v max %d sent %d: %q, want %q", c.st, c.max, c.sent, got, c.want)
		}
	}
}
