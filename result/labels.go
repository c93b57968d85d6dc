package result

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Labels say what a run is: free key: value strings the plan declares
// (`labels:`) and the command line adds or overrides (`--label k=v`), such
// as engine, model, hardware, submission, gpus, a CI job's commit and branch.
// They are untrusted text: keys are restricted to a safe charset, values are
// one line of bounded length, and every report escapes them where it shows
// them. The board groups and names runs by them.
type Labels map[string]string

// Limits on labels (docs/plans.md, "Labels"; the schemas say the same).
const (
	// MaxLabels is the most labels a run may carry.
	MaxLabels = 64
	// MaxLabelKey is the longest key, in bytes.
	MaxLabelKey = 64
	// MaxLabelValue is the longest value, in bytes.
	MaxLabelValue = 256
)

// LabelKeyPattern is the charset of a label key: a letter, then letters,
// digits, '_', '.' and '-' (safe in a file name, a URL, an SQL identifier
// quoted or not, a YAML key and a Markdown table alike).
const LabelKeyPattern = `^[A-Za-z][A-Za-z0-9_.-]*$`

// CheckLabelKey says what is wrong with k as a label key, or nil.
func CheckLabelKey(k string) error {
	switch {
	case k == "":
		return fmt.Errorf("empty label key")
	case len(k) > MaxLabelKey:
		return fmt.Errorf("label key %.20q… is longer than %d bytes", k, MaxLabelKey)
	}
	for i, r := range k {
		ok := r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' ||
			i > 0 && (r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-'))
		if !ok {
			return fmt.Errorf("label key %q: %q is not allowed (a key is a letter, then letters, digits, '_', '.' or '-')", k, r)
		}
	}
	return nil
}

// CheckLabelValue says what is wrong with v as the value of label k, or nil:
// a value is valid UTF-8, one line (no control character, tab or line
// break) without bidirectional overrides, and at most MaxLabelValue bytes.
// Markup is allowed: every output escapes it.
func CheckLabelValue(k, v string) error {
	if len(v) > MaxLabelValue {
		return fmt.Errorf("label %s: value is %d bytes, longer than %d", k, len(v), MaxLabelValue)
	}
	if !utf8.ValidString(v) {
		return fmt.Errorf("label %s: value is not valid UTF-8", k)
	}
	for _, r := range v {
		if r < 0x20 || (r >= 0x7f && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			return fmt.Errorf("label %s: %U is not allowed in a value (one line, shown in reports and the terminal)", k, r)
		}
	}
	return nil
}

// Check says what is wrong with the labels (the first problem in key
// order), or nil.
func (l Labels) Check() error {
	if len(l) > MaxLabels {
		return fmt.Errorf("%d labels, more than %d", len(l), MaxLabels)
	}
	for _, k := range l.Keys() {
		if err := CheckLabelKey(k); err != nil {
			return err
		}
		if err := CheckLabelValue(k, l[k]); err != nil {
			return err
		}
	}
	return nil
}

// Keys are the label keys, sorted.
func (l Labels) Keys() []string { return slices.Sorted(maps.Keys(l)) }

// With returns l with o's labels added, o's value winning for a key both
// have; nil when both are empty. Neither is modified.
func (l Labels) With(o Labels) Labels {
	if len(l)+len(o) == 0 {
		return nil
	}
	out := make(Labels, len(l)+len(o))
	maps.Copy(out, l)
	maps.Copy(out, o)
	return out
}

// String is the labels as "k=v k=v", in key order (values as they are: a
// caller showing them escapes them for its medium).
func (l Labels) String() string {
	parts := make([]string, 0, len(l))
	for _, k := range l.Keys() {
		parts = append(parts, k+"="+l[k])
	}
	return strings.Join(parts, " ")
}

// ParseLabel parses one --label argument, "key=value" (the value may be
// empty and may hold '='), and checks both.
func ParseLabel(s string) (key, value string, err error) {
	key, value, ok := strings.Cut(s, "=")
	if !ok {
		return "", "", fmt.Errorf("label %q: want key=value", s)
	}
	if err := CheckLabelKey(key); err != nil {
		return "", "", err
	}
	if err := CheckLabelValue(key, value); err != nil {
		return "", "", err
	}
	return key, value, nil
}

// Facts are what the runner itself records of a run, beside its labels:
// which Runner ran which plan, when and where. The board and the results
// database read them from report.json (Report.Facts) or the records.
type Facts struct {
	RunnerVersion string    `json:"runner_version"`
	PlanName      string    `json:"plan_name"`
	PlanHash      string    `json:"plan_hash"`
	StartedAt     time.Time `json:"started_at"`
	// Host is the name of the machine that ran it (os.Hostname; for a run
	// merged from shards, every shard's host, distinct, sorted, joined with
	// ", "); empty when unknown.
	Host string `json:"host,omitempty"`
	// Shards is how many shards a merged run was merged from (0: one run).
	Shards int `json:"shards,omitempty"`
}

// Facts returns the report's facts.
func (r *Report) Facts() Facts {
	return Facts{
		RunnerVersion: r.RunnerVersion, PlanName: r.Plan.Name, PlanHash: r.Plan.Hash,
		StartedAt: r.StartedAt, Host: r.Host, Shards: r.Shards,
	}
}
