package mdtext

import (
	"strings"
	"testing"
)

// TestText: hostile names come out inert: no cell split, no link, no HTML,
// no heading, no new row, no bidirectional trick, no terminal control.
func TestText(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                 "plain",
		"a|b":                   `a\|b`,
		"[x](http://evil)":      `\[x\]\(http://evil)`,
		"<img src=x onerror=1>": "&lt;img src=x onerror=1&gt;",
		"# heading":             `\# heading`,
		"two\nlines\r\nhere":    "two lines here",
		"**bold** _it_ ~s~ `c`": `\*\*bold\*\* \_it\_ \~s\~ \` + "`c\\`",
		"&lt;":                  "&amp;lt;",
		"esc\x1b[31mred":        "esc\uFFFD\\[31mred",
		"rtl\u202eevil":         "rtl\uFFFDevil",
		`back\slash`:            `back\\slash`,
	} {
		if got := Text(in); got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCode(t *testing.T) {
	if got := Code("a|b`c\nd"); got != "`a\\|bˋc d`" {
		t.Errorf("Code: %q", got)
	}
	if Code("") != "" {
		t.Error("an empty code span")
	}
	if got := CodeText("x\x07y"); strings.ContainsRune(got, 7) {
		t.Errorf("a bell in code: %q", got)
	}
}
