package scenario

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Set is one command-line override of a plan field (--set PATH=VALUE): the
// value, written in YAML, replaces (or adds) the field at Path before the
// plan is decoded, so it is validated exactly as if the plan said it.
//
// Path is dotted: a mapping is entered by its key, a list by an element's
// name (stages.sweep is the stage named sweep) or its index from 0
// (stages.0). A key that is not there is added, with any mappings above it.
type Set struct {
	// Flag is how the override was given, for messages ("--set").
	Flag  string
	Path  string
	Value string
}

// ParseSet splits a --set argument at its first "=".
func ParseSet(flag, arg string) (Set, error) {
	path, value, ok := strings.Cut(arg, "=")
	path = strings.TrimSpace(path)
	if !ok || path == "" {
		return Set{}, fmt.Errorf("%s %s: want PATH=VALUE (e.g. %s stages.sweep.concurrency=[1,2])", flag, arg, flag)
	}
	return Set{Flag: flag, Path: path, Value: value}, nil
}

// Where an override's values sit: far below any line of a plan (≤ 4 MiB),
// each override in a band of its own, so a problem found in its value is
// told apart from the file's and named by its flag (problems.err).
const (
	setLineBase   = 1 << 40
	setLineStride = 1 << 30
)

// name is what a problem in override i is reported under.
func (s Set) name() string { return s.Flag + " " + s.Path }

// applySets applies each override to the plan's tree (doc, whose mapping
// is root) in order, and returns the plan's text with them: what the run
// records as its plan.yaml. A path that leads nowhere is a problem, named by
// its flag.
func applySets(probs *problems, doc, root *yaml.Node, sets []Set) []byte {
	probs.sets = sets
	for i, s := range sets {
		if err := applySet(root, s, i); err != nil {
			probs.add(pos{setLineBase + i*setLineStride, 0}, "%v", err)
		}
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		probs.add(pos{}, "cannot write the plan with %s: %v", sets[0].Flag, err)
	}
	_ = enc.Close()
	return buf.Bytes()
}

// applySet puts override i's value at its path under root.
func applySet(root *yaml.Node, s Set, i int) error {
	val, err := setValue(s, i)
	if err != nil {
		return err
	}
	segs := strings.Split(s.Path, ".")
	n := root
	for k, seg := range segs {
		if seg == "" {
			return fmt.Errorf("empty name in the path %q", s.Path)
		}
		last := k == len(segs)-1
		at := strings.Join(segs[:k], ".")
		var slot **yaml.Node
		switch n.Kind {
		case yaml.MappingNode:
			slot = mappingSlot(n, seg, i)
		case yaml.SequenceNode:
			if slot, err = listSlot(n, seg, at); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s is %s, not a mapping or a list: %q cannot be set in it", orPlan(at), kindName(n), seg)
		}
		if last {
			*slot = val
			return nil
		}
		if (*slot).Kind == yaml.AliasNode {
			// Set this use only, not every use of the anchor.
			*slot = copyNode((*slot).Alias)
		}
		n = *slot
	}
	return nil
}

func orPlan(path string) string {
	if path == "" {
		return "the plan"
	}
	return path
}

// setValue parses an override's value as YAML, its nodes placed in the
// override's band of lines.
func setValue(s Set, i int) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(s.Value), &doc); err != nil {
		_, msg := yamlSyntaxError(err)
		return nil, fmt.Errorf("%s", msg)
	}
	val := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: ""}
	if len(doc.Content) > 0 {
		val = doc.Content[0]
	}
	shift(val, setLineBase+i*setLineStride)
	return val, nil
}

// shift moves every node of a value into its band of lines.
func shift(n *yaml.Node, base int) {
	n.Line += base
	for _, c := range n.Content {
		shift(c, base)
	}
}

// mappingSlot is where key's value is in mapping n, added (with a key in
// override i's band, and an empty mapping to go on into) when missing.
func mappingSlot(n *yaml.Node, key string, i int) **yaml.Node {
	for j := 0; j+1 < len(n.Content); j += 2 {
		if n.Content[j].Kind == yaml.ScalarNode && n.Content[j].Value == key {
			return &n.Content[j+1]
		}
	}
	line := setLineBase + i*setLineStride
	n.Content = append(n.Content,
		&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key, Line: line},
		&yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: line})
	return &n.Content[len(n.Content)-1]
}

// listSlot is list n's element named name (a mapping whose name is name),
// or at index name.
func listSlot(n *yaml.Node, name, at string) (**yaml.Node, error) {
	var names []string
	for j, el := range n.Content {
		if el.Kind != yaml.MappingNode {
			continue
		}
		for k := 0; k+1 < len(el.Content); k += 2 {
			if el.Content[k].Value == "name" {
				if v := el.Content[k+1].Value; v == name {
					return &n.Content[j], nil
				} else {
					names = append(names, v)
				}
			}
		}
	}
	if idx, err := strconv.Atoi(name); err == nil && idx >= 0 && idx < len(n.Content) {
		return &n.Content[idx], nil
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s has no element %q (it has %d: give an index from 0)", at, name, len(n.Content))
	}
	return nil, fmt.Errorf("%s has no element named %q%s (names: %s)", at, name, didYouMean(name, names), strings.Join(names, ", "))
}

// copyNode is a deep copy of n, without its anchor.
func copyNode(n *yaml.Node) *yaml.Node {
	c := *n
	c.Anchor = ""
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, x := range n.Content {
		c.Content[i] = copyNode(x)
	}
	return &c
}
