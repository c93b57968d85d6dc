package reporters

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/runnerbench/runner/result"
)

// WriteJSON writes r as report.json: indented, HTML characters unescaped (an
// expression's "<" stays readable), with schema_version filled in when the
// caller left it zero.
func WriteJSON(w io.Writer, r *result.Report) error {
	cp := *r
	if cp.SchemaVersion == 0 {
		cp.SchemaVersion = result.SchemaVersion
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&cp); err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	return nil
}
