package reporters

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

var ansiRE = regexp.MustCompile("\x1b\\[[0-9;]*m")

// TestTableColour: colours appear only when asked for, and stripping them
// gives back exactly the plain table (so colour never shifts a column).
func TestTableColour(t *testing.T) {
	r := fixture(t)
	var plain, colour bytes.Buffer
	if err := WriteTable(&plain, r, TableOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := WriteTable(&colour, r, TableOptions{Color: true}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), "\x1b[") {
		t.Error("plain table contains ANSI escapes")
	}
	if !strings.Contains(colour.String(), ansiRed+"FAIL"+ansiReset) || !strings.Contains(colour.String(), ansiGreen+"PASS"+ansiReset) {
		t.Error("coloured table lacks coloured statuses")
	}
	stripped := ansiRE.ReplaceAllString(colour.String(), "")
	if stripped != plain.String() {
		t.Errorf("coloured table minus escapes differs from the plain one:\n%s\n---\n%s", stripped, plain.String())
	}
}

// TestTableLinesAligned: every line of a rendered table has the same display
// width, so right-aligned numbers and the low-confidence mark line up.
func TestTableLinesAligned(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteTable(&buf, fixture(t), TableOptions{Color: true}); err != nil {
		t.Fatal(err)
	}
	width := -1
	for _, line := range strings.Split(ansiRE.ReplaceAllString(buf.String(), ""), "\n") {
		if !strings.HasPrefix(line, "│") && !strings.HasPrefix(line, "┌") && !strings.HasPrefix(line, "├") && !strings.HasPrefix(line, "└") {
			width = -1 // a new table may start after any non-table line
			continue
		}
		w := utf8.RuneCountInString(line)
		if width >= 0 && w != width {
			t.Errorf("table line width %d, want %d: %q", w, width, line)
		}
		width = w
	}
}

func TestUseColor(t *testing.T) {
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	for _, tc := range []struct {
		tty  bool
		env  map[string]string
		want bool
	}{
		{true, nil, true},
		{false, nil, false},
		{true, map[string]string{"NO_COLOR": "1"}, false},
		{true, map[string]string{"NO_COLOR": ""}, true}, // empty means unset, per no-color.org
		{false, map[string]string{"TERM": "xterm"}, false},
	} {
		if got := UseColor(tc.tty, env(tc.env)); got != tc.want {
			t.Errorf("UseColor(%v, %v) = %v, want %v", tc.tty, tc.env, got, tc.want)
		}
	}
}
