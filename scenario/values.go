package scenario

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/runnerbench/runner/internal/redact"
	"gopkg.in/yaml.v3"
)

// Secret is a value that must never be printed, logged or written to a report:
// every printed form (fmt, JSON, YAML) is redacted. Reveal returns the value for
// the one place that needs it, the HTTP request.
type Secret string

// Redacted is what a non-empty secret prints as.
const Redacted = redact.Marker

// Reveal returns the secret's value.
func (s Secret) Reveal() string { return string(s) }

// String redacts the secret.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return Redacted
}

// GoString redacts the secret in %#v.
func (s Secret) GoString() string { return fmt.Sprintf("%q", s.String()) }

// MarshalJSON redacts the secret.
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// MarshalYAML redacts the secret.
func (s Secret) MarshalYAML() (any, error) { return s.String(), nil }

// Duration is a time.Duration written as a Go duration string ("30s", "2m").
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String formats the duration like time.Duration.
func (d Duration) String() string { return time.Duration(d).String() }

// UnmarshalYAML parses a scalar duration string. It decodes a scalar only, so
// it cannot switch strict decoding off for any mapping below it.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("expected a duration such as \"30s\" or \"2m\"")
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("invalid duration %q: expected a value such as \"30s\" or \"2m\"", n.Value)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration as a string.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads the duration MarshalJSON wrote (a stage's search block
// read back from a run's records).
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}
