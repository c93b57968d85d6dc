package scenario

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"

	"gopkg.in/yaml.v3"
)

// IsZero reports whether the length was not given.
func (l Length) IsZero() bool { return l == Length{} }

// IsFixed reports whether the length is a single number.
func (l Length) IsFixed() bool { return l.Mean == 0 && l.Stdev == 0 && l.Min == 0 && l.Max == 0 }

// IsNormal reports whether the length is normal(Mean, Stdev), clipped to [Min, Max] when set.
func (l Length) IsNormal() bool { return l.Mean != 0 || l.Stdev != 0 }

// Sample draws one length from r: the fixed value, a uniform integer in
// [Min, Max], or a rounded normal draw clipped to [Min, Max] (and never below 1,
// since a request for zero tokens is meaningless).
func (l Length) Sample(r *rand.Rand) int {
	switch {
	case l.IsFixed():
		return l.Fixed
	case l.IsNormal():
		v := int(math.Round(l.Mean + l.Stdev*r.NormFloat64()))
		if l.Min > 0 {
			v = max(v, l.Min)
		}
		if l.Max > 0 {
			v = min(v, l.Max)
		}
		return max(v, 1)
	default:
		if l.Max <= l.Min {
			return l.Min
		}
		return l.Min + r.IntN(l.Max-l.Min+1)
	}
}

// Nominal is the length a report names the level by: the fixed value, the
// mean of a normal, or the midpoint of a uniform range.
func (l Length) Nominal() int {
	switch {
	case l.IsFixed():
		return l.Fixed
	case l.IsNormal():
		return int(math.Round(l.Mean))
	default:
		return (l.Min + l.Max) / 2
	}
}

// String formats the length as it would be written in a plan.
func (l Length) String() string {
	switch {
	case l.IsFixed():
		return fmt.Sprint(l.Fixed)
	case l.IsNormal():
		s := fmt.Sprintf("normal(mean=%g, stdev=%g", l.Mean, l.Stdev)
		if l.Min != 0 || l.Max != 0 {
			s += fmt.Sprintf(", min=%d, max=%d", l.Min, l.Max)
		}
		return s + ")"
	default:
		return fmt.Sprintf("uniform(%d..%d)", l.Min, l.Max)
	}
}

// lengthFields is Length without its methods, so encoding does not recurse.
type lengthFields struct {
	Min   int     `yaml:"min,omitempty" json:"min,omitempty"`
	Max   int     `yaml:"max,omitempty" json:"max,omitempty"`
	Mean  float64 `yaml:"mean,omitempty" json:"mean,omitempty"`
	Stdev float64 `yaml:"stdev,omitempty" json:"stdev,omitempty"`
}

// MarshalYAML writes a fixed length as a number and any other as a mapping.
func (l Length) MarshalYAML() (any, error) {
	if l.IsFixed() {
		return l.Fixed, nil
	}
	return lengthFields{l.Min, l.Max, l.Mean, l.Stdev}, nil
}

// MarshalJSON writes a fixed length as a number and any other as an object.
func (l Length) MarshalJSON() ([]byte, error) {
	if l.IsFixed() {
		return json.Marshal(l.Fixed)
	}
	return json.Marshal(lengthFields{l.Min, l.Max, l.Mean, l.Stdev})
}

// UnmarshalYAML accepts a number or a mapping, for code that decodes a Length
// with yaml.v3 directly. Load does not use it: it decodes plans strictly itself.
func (l *Length) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		var i int
		if err := n.Decode(&i); err != nil {
			return fmt.Errorf("expected a token count, got %q", n.Value)
		}
		*l = Length{Fixed: i}
		return nil
	}
	var f lengthFields
	if err := n.Decode(&f); err != nil {
		return err
	}
	*l = Length{Min: f.Min, Max: f.Max, Mean: f.Mean, Stdev: f.Stdev}
	return nil
}

// UnmarshalJSON accepts a number or an object.
func (l *Length) UnmarshalJSON(b []byte) error {
	var i int
	if err := json.Unmarshal(b, &i); err == nil {
		*l = Length{Fixed: i}
		return nil
	}
	var f lengthFields
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("expected a token count or an object: %w", err)
	}
	*l = Length{Min: f.Min, Max: f.Max, Mean: f.Mean, Stdev: f.Stdev}
	return nil
}
