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

// PerLevel is a count a stage gives once for every level (requests: 64) or
// once per level, in the order its levels are listed (requests: [8, 32, 64]
// beside concurrency: [1, 8, 32]): a low level should not have to send as
// many requests as the highest needs. In YAML it is a number or a list.
type PerLevel struct {
	// Each is every level's count; 0 when not given (or given per level).
	Each int
	// List is one count per level; nil when given once for every level.
	List []int
}

// IsZero reports whether the count was not given.
func (c PerLevel) IsZero() bool { return c.Each == 0 && len(c.List) == 0 }

// At is level i's count: its own from the list, else the one for every
// level; 0 when not given.
func (c PerLevel) At(i int) int {
	if c.List != nil {
		if i >= 0 && i < len(c.List) {
			return c.List[i]
		}
		return 0
	}
	return c.Each
}

// String formats the count as a plan writes it.
func (c PerLevel) String() string {
	if c.List == nil {
		return strconv.Itoa(c.Each)
	}
	parts := make([]string, len(c.List))
	for i, n := range c.List {
		parts[i] = strconv.Itoa(n)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// MarshalYAML writes a number, or a list when given per level.
func (c PerLevel) MarshalYAML() (any, error) {
	if c.List != nil {
		return c.List, nil
	}
	return c.Each, nil
}

// MarshalJSON writes a number, or a list when given per level.
func (c PerLevel) MarshalJSON() ([]byte, error) {
	if c.List != nil {
		return json.Marshal(c.List)
	}
	return json.Marshal(c.Each)
}

// UnmarshalYAML accepts a number or a list, for code that decodes with
// yaml.v3 directly. Load does not use it: it decodes plans strictly itself.
func (c *PerLevel) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.SequenceNode {
		var l []int
		if err := n.Decode(&l); err != nil {
			return err
		}
		*c = PerLevel{List: l}
		return nil
	}
	var i int
	if err := n.Decode(&i); err != nil {
		return fmt.Errorf("expected a count or a list of counts, got %q", n.Value)
	}
	*c = PerLevel{Each: i}
	return nil
}

// UnmarshalJSON accepts a number or a list.
func (c *PerLevel) UnmarshalJSON(b []byte) error {
	var i int
	if err := json.Unmarshal(b, &i); err == nil {
		*c = PerLevel{Each: i}
		return nil
	}
	var l []int
	if err := json.Unmarshal(b, &l); err != nil {
		return fmt.Errorf("expected a count or a list of counts: %w", err)
	}
	*c = PerLevel{List: l}
	return nil
}

// decodePerLevel decodes a number or a list of numbers, each strictly an
// integer, each element at its own path ("stages[0].requests[1]").
func (d *decoder) decodePerLevel(n *yaml.Node, v reflect.Value, path string, depth int) {
	c := v.Addr().Interface().(*PerLevel)
	switch n.Kind {
	case yaml.ScalarNode:
		*c = PerLevel{}
		d.decodeScalar(n, reflect.ValueOf(&c.Each).Elem(), path)
	case yaml.SequenceNode:
		*c = PerLevel{List: []int{}}
		d.decodeSlice(n, reflect.ValueOf(&c.List).Elem(), path, depth)
	default:
		d.fail(n, path, "expected a count or a list of one count per level, got %s", kindName(n))
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
