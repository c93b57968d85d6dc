package reporters

import (
	"bytes"
	"encoding/json"
	"errors"
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

// ErrSchemaVersion is wrapped by ReadJSON's error for a report written in a
// schema version this build does not read.
var ErrSchemaVersion = errors.New("unsupported report schema_version")

// ReadJSON reads a report.json (a baseline, or the input of compare). It
// rejects a report whose schema_version is missing or is not the one this
// build writes, because comparing metrics whose meaning may have changed would
// give confident wrong answers.
func ReadJSON(r io.Reader) (*result.Report, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	var head struct {
		SchemaVersion *int `json:"schema_version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("parse report: %w", err)
	}
	switch {
	case head.SchemaVersion == nil:
		return nil, fmt.Errorf("%w: the file has no schema_version (is it a runner report.json?)", ErrSchemaVersion)
	case *head.SchemaVersion != result.SchemaVersion:
		return nil, fmt.Errorf("%w %d: this runner reads version %d", ErrSchemaVersion, *head.SchemaVersion, result.SchemaVersion)
	}
	var rep result.Report
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&rep); err != nil {
		return nil, fmt.Errorf("parse report: %w", err)
	}
	return &rep, nil
}
