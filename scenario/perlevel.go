package scenario

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// PerLevelOf is a value a stage gives once for every level (requests: 64,
// until: decided) or once per level, in the order its levels are listed
// (requests: [8, 32, 64] beside concurrency: [1, 8, 32]): a low level
// should not have to send as many requests as the highest needs. In YAML
// it is a value or a list.
type PerLevelOf[T int | string] struct {
	// Each is every level's value; the zero value when not given (or given
	// per level).
	Each T
	// List is one value per level; nil when given once for every level.
	List []T
}

// PerLevel is a count given once or per level (requests, min_requests,
// max_requests).
type PerLevel = PerLevelOf[int]

// IsZero reports whether the value was not given.
func (c PerLevelOf[T]) IsZero() bool {
	var zero T
	return c.Each == zero && len(c.List) == 0
}

// At is level i's value: its own from the list, else the one for every
// level; the zero value when not given.
func (c PerLevelOf[T]) At(i int) T {
	if c.List != nil {
		if i >= 0 && i < len(c.List) {
			return c.List[i]
		}
		var zero T
		return zero
	}
	return c.Each
}

// String formats the value as a plan writes it.
func (c PerLevelOf[T]) String() string {
	if c.List == nil {
		return fmt.Sprint(c.Each)
	}
	parts := make([]string, len(c.List))
	for i, v := range c.List {
		parts[i] = fmt.Sprint(v)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// MarshalYAML writes a value, or a list when given per level.
func (c PerLevelOf[T]) MarshalYAML() (any, error) {
	if c.List != nil {
		return c.List, nil
	}
	return c.Each, nil
}

// MarshalJSON writes a value, or a list when given per level.
func (c PerLevelOf[T]) MarshalJSON() ([]byte, error) {
	if c.List != nil {
		return json.Marshal(c.List)
	}
	return json.Marshal(c.Each)
}

// UnmarshalYAML accepts a value or a list, for code that decodes with
// yaml.v3 directly. Load does not use it: it decodes plans strictly itself.
func (c *PerLevelOf[T]) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.SequenceNode {
		var l []T
		if err := n.Decode(&l); err != nil {
			return err
		}
		*c = PerLevelOf[T]{List: l}
		return nil
	}
	var v T
	if n.Kind != yaml.ScalarNode || n.Decode(&v) != nil {
		return fmt.Errorf("expected a value or a list of one per level, got %q", n.Value)
	}
	*c = PerLevelOf[T]{Each: v}
	return nil
}

// UnmarshalJSON accepts a value or a list (a run's records).
func (c *PerLevelOf[T]) UnmarshalJSON(b []byte) error {
	var v T
	if err := json.Unmarshal(b, &v); err == nil {
		*c = PerLevelOf[T]{Each: v}
		return nil
	}
	var l []T
	if err := json.Unmarshal(b, &l); err != nil {
		return fmt.Errorf("expected a value or a list of one per level: %w", err)
	}
	*c = PerLevelOf[T]{List: l}
	return nil
}

// perLevelWhat says what a per-level value is, for a decoding error.
var perLevelWhat = map[reflect.Type]string{
	perLevelType: "a count or a list of one count per level",
	untilType:    "a rule (decided, or METRIC within P%) or a list of one rule per level",
}

// decodePerLevel decodes a value or a list of values, each strictly of its
// type, each element at its own path ("stages[0].requests[1]").
func (d *decoder) decodePerLevel(n *yaml.Node, v reflect.Value, path string, depth int) {
	each, list := v.FieldByName("Each"), v.FieldByName("List")
	v.SetZero()
	switch n.Kind {
	case yaml.ScalarNode:
		d.decodeScalar(n, each, path)
	case yaml.SequenceNode:
		list.Set(reflect.MakeSlice(list.Type(), 0, len(n.Content)))
		d.decodeSlice(n, list, path, depth)
	default:
		d.fail(n, path, "expected %s, got %s", perLevelWhat[v.Type()], kindName(n))
	}
}

// stageRequests checks a stage's requests: each count within its limits, a
// list with one count per level, and in closed loop at least the level's
// concurrency. A level of 20 requests at concurrency 32 never has 32 in
// flight, yet its report, its charts and its baseline key would all say
// c=32; refusing it is the only way the label stays what ran. (Someone who
// wants 20 requests at 20 streams writes concurrency 20.)
func (v *validator) stageRequests(path string, s *Stage) {
	if s.Series != nil {
		return // a series is one level of its own length (stageSeries)
	}
	rp := path + ".requests"
	r := s.Requests
	levels, load := len(s.Concurrency), "concurrency"
	switch {
	case len(s.Rate) > 0:
		levels, load = len(s.Rate), "rate"
	case len(s.Users) > 0:
		levels, load = len(s.Users), "users"
	}
	switch {
	case r.List != nil:
		if len(r.List) != levels {
			v.errf(rp, "%s: requests lists %d counts for the %d levels of %s: give one count per level, or one number for every level", rp, len(r.List), levels, load)
			return
		}
		for i, n := range r.List {
			if n < 1 || n > MaxRequests {
				ip := fmt.Sprintf("%s[%d]", rp, i)
				v.errf(ip, "%s: requests must be between 1 and %d, got %d", ip, MaxRequests, n)
			}
		}
	case r.Each < 0 || r.Each > MaxRequests:
		v.errf(rp, "%s: requests must be between 1 and %d, got %d", path, MaxRequests, r.Each)
		return
	case r.Each == 0 && v.has(rp):
		v.errf(rp, "%s: requests must be at least 1 (leave it out for the default)", path)
		return
	}
	v.requestsHoldConcurrency(rp, s)
}

// requestsHoldConcurrency refuses closed-loop levels given fewer requests
// than their concurrency, at the count that is short, and says which counts
// would do.
func (v *validator) requestsHoldConcurrency(rp string, s *Stage) {
	r := s.Requests
	levels, name := s.closedLevels()
	var short []string
	fixed := make([]string, len(levels))
	for i, c := range levels {
		n := r.At(i)
		fixed[i] = strconv.Itoa(max(n, c))
		if n < 1 || n > MaxRequests || n >= c || c > MaxConcurrency {
			continue // in range and enough, or refused already
		}
		if u, err := ParseUntil(s.Until.At(i)); err == nil && !u.Fixed() {
			continue // an until level's count is max_requests
		}
		if r.List != nil {
			ip := fmt.Sprintf("%s[%d]", rp, i)
			v.errf(ip, "%s: %d requests cannot keep %d in flight: level %s=%d would be labelled with a load it never ran; give it at least %d requests, or lower its %s", ip, n, c, name, c, c, what(name))
			continue
		}
		short = append(short, name+"="+strconv.Itoa(c))
	}
	if len(short) == 0 {
		return
	}
	fix := fmt.Sprintf("set requests to at least %d, give one count per level (requests: [%s]), or lower the %s",
		slices.Max(levels), strings.Join(fixed, ", "), what(name))
	switch {
	case name == "users":
		v.errf(rp, "%s: %d conversations a level leave some users of %s without one: they would be counted in a load they never sent; %s", rp, r.Each, strings.Join(short, ", "), fix)
	case len(short) == 1:
		c := strings.TrimPrefix(short[0], name+"=")
		v.errf(rp, "%s: %d requests a level cannot keep %s in flight at %s: that level would be labelled with a load it never ran; %s", rp, r.Each, c, short[0], fix)
	default:
		v.errf(rp, "%s: %d requests a level cannot keep levels %s at their %s: they would be labelled with a load they never ran; %s", rp, r.Each, strings.Join(short, ", "), what(name), fix)
	}
}

// what is the word for a closed loop's levels named name ("c", "users").
func what(name string) string {
	if name == "users" {
		return "users"
	}
	return "concurrency"
}
