package mdtable

import (
	"strings"
	"testing"
)

// TestWrite: headers escaped, numbers right-aligned, a cell's line break
// cannot end its row, a table without rows keeps its header.
func TestWrite(t *testing.T) {
	var b strings.Builder
	cols := Columns([]string{"stage | name", "n"}, func(i int) bool { return i == 1 })
	if err := Write(&b, cols, [][]string{{"a\nb", "3"}}); err != nil {
		t.Fatal(err)
	}
	want := "| stage \\| name | n |\n| --- | ---: |\n| a b | 3 |\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
	b.Reset()
	if err := Write(&b, cols, nil); err != nil || strings.Count(b.String(), "\n") != 2 {
		t.Errorf("no rows: %q, %v", b.String(), err)
	}
}
