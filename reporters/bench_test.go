package reporters

import (
	"io"
	"testing"

	"github.com/runnerbench/runner/result"
)

// BenchmarkRender measures each reporter on the fixture report (3 stages, 5
// levels, 12 checks): they run once per run, so this only guards against a
// pathological slowdown.
func BenchmarkRender(b *testing.B) {
	r := fixture(b)
	for _, bc := range []struct {
		name   string
		render func(io.Writer, *result.Report) error
	}{
		{"table", func(w io.Writer, r *result.Report) error { return WriteTable(w, r, TableOptions{}) }},
		{"json", WriteJSON},
		{"junit", WriteJUnit},
		{"markdown", WriteMarkdown},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := bc.render(io.Discard, r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
