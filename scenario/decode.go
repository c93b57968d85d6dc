package scenario

import (
	"encoding"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"

	"github.com/runnerbench/runner/scenario/envpolicy"
)

// The plan is decoded by walking the yaml.Node tree against the Go types' yaml
// tags ourselves rather than with yaml.v3's Decode. Two reasons: a
// KnownFields(true) error has a line but no column, and any custom
// UnmarshalYAML that calls n.Decode silently turns strict decoding off for
// everything below it. Walking the tree by reflection rejects an unknown key at
// any depth (including inside simconfig.Config, whatever fields it grows) with its
// line:col, and reports every problem in one pass.

// MaxValues bounds the values (YAML nodes, after alias expansion) a plan may
// hold, so a YAML alias bomb is a quick error and not an out-of-memory crash.
// Large prompt sets belong in a prompt file, which has no such limit.
const MaxValues = 250_000

// maxDepth bounds nesting, for the same reason.
const maxDepth = 64

var (
	unmarshalerType     = reflect.TypeFor[yaml.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	lengthType          = reflect.TypeFor[Length]()
	perLevelType        = reflect.TypeFor[PerLevel]()
	untilType           = reflect.TypeFor[UntilRules]()
)

// decoder walks a yaml.Node tree into a Go value, recording problems and the
// position of every value by its path ("stages[0].checks[1].expr").
type decoder struct {
	probs  *problems
	at     map[string]pos  // value positions by path
	quoted map[string]bool // scalar values written in quotes, by path (to place expr errors)
	block  map[string]bool // scalar values written as | or > blocks
	// badTree holds paths whose value could not be decoded, badBlock blocks
	// with an unknown or duplicate key: validation says nothing more about
	// them, so one typo gives one message, not a cascade.
	badTree  map[string]bool
	badBlock map[string]bool
	tooBig   bool           // a size limit was hit: stop decoding, report it once
	keyAt    map[string]pos // key positions by path (for "missing"/"unexpected" messages)
	getenv   func(string) (string, bool)
	allow    *envpolicy.AllowList
	env      []*envString // every value written with ${VAR}, for checkEnv
	nodes    int
	literal  bool // keep ${VAR} as written, reading nothing (Written)
}

func newDecoder(probs *problems, getenv func(string) (string, bool)) *decoder {
	return &decoder{probs: probs, at: map[string]pos{}, keyAt: map[string]pos{}, quoted: map[string]bool{}, block: map[string]bool{},
		badTree: map[string]bool{}, badBlock: map[string]bool{}, getenv: getenv}
}

func posOf(n *yaml.Node) pos { return pos{n.Line, n.Column} }

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// kindName says what a node is, for "expected X, got Y" messages.
func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "null"
		}
		return strconv.Quote(n.Value)
	}
	return "an unexpected node"
}

// fail records a problem with the value at path.
func (d *decoder) fail(n *yaml.Node, path, format string, args ...any) {
	d.badTree[path] = true
	d.probs.add(posOf(n), "%s: "+format, append([]any{displayPath(path)}, args...)...)
}

func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string, depth int) {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if !d.enter(n, path, depth) {
		return
	}
	t := v.Type()
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		v.Set(reflect.Zero(t))
		return
	}
	switch {
	case t.Kind() == reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		d.decode(n, v.Elem(), path, depth)
	case t == lengthType:
		d.decodeLength(n, v, path, depth)
	case t == perLevelType || t == untilType:
		d.decodePerLevel(n, v, path, depth)
	case reflect.PointerTo(t).Implements(unmarshalerType):
		d.decodeUnmarshaler(n, v, path, depth)
	case n.Kind == yaml.ScalarNode && t.Kind() != reflect.String && reflect.PointerTo(t).Implements(textUnmarshalerType):
		if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(n.Value)); err != nil {
			d.fail(n, path, "%s", err)
		}
	case t.Kind() == reflect.Struct:
		d.decodeStruct(n, v, path, depth)
	case t.Kind() == reflect.Map:
		d.decodeMap(n, v, path, depth)
	case t.Kind() == reflect.Slice:
		d.decodeSlice(n, v, path, depth)
	case t.Kind() == reflect.Interface:
		var x any
		if err := n.Decode(&x); err != nil {
			d.fail(n, path, "%s", cleanYAMLError(err))
			return
		}
		if x != nil {
			v.Set(reflect.ValueOf(x))
		}
	default:
		d.decodeScalar(n, v, path)
	}
}

// enter counts a value against the plan's size limits and notes where it
// is (and how it is quoted); false means decoding stops here.
func (d *decoder) enter(n *yaml.Node, path string, depth int) bool {
	d.nodes++
	switch {
	case d.tooBig:
		return false
	case d.nodes > MaxValues:
		d.tooBig = true
		d.probs.add(posOf(n), "plan is too large: its aliases expand to more than %d values", MaxValues)
		return false
	case depth > maxDepth:
		d.tooBig = true
		d.probs.add(posOf(n), "plan is nested more than %d levels deep", maxDepth)
		return false
	}
	d.at[path] = posOf(n)
	switch n.Style {
	case yaml.DoubleQuotedStyle, yaml.SingleQuotedStyle:
		d.quoted[path] = true
	case yaml.LiteralStyle, yaml.FoldedStyle:
		d.block[path] = true
	}
	return true
}

// decodeUnmarshaler decodes a type with its own UnmarshalYAML, checking a
// mapping's keys strictly first: its own method may use n.Decode, which is
// not strict.
func (d *decoder) decodeUnmarshaler(n *yaml.Node, v reflect.Value, path string, depth int) {
	if n.Kind != yaml.ScalarNode && v.Kind() == reflect.Struct {
		before := len(d.probs.list)
		d.decodeStruct(n, reflect.New(v.Type()).Elem(), path, depth)
		if len(d.probs.list) > before {
			return
		}
	}
	if err := v.Addr().Interface().(yaml.Unmarshaler).UnmarshalYAML(n); err != nil {
		d.fail(n, path, "%s", cleanYAMLError(err))
	}
}

func (d *decoder) decodeSlice(n *yaml.Node, v reflect.Value, path string, depth int) {
	if n.Kind != yaml.SequenceNode {
		d.fail(n, path, "expected a list, got %s", kindName(n))
		return
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, c := range n.Content {
		d.decode(c, s.Index(i), fmt.Sprintf("%s[%d]", path, i), depth+1)
	}
	v.Set(s)
}

// decodeScalar decodes a string, bool or number, strictly by its YAML tag:
// "8" is not a number and yes is not a bool.
func (d *decoder) decodeScalar(n *yaml.Node, v reflect.Value, path string) {
	bad := func(want string) { d.fail(n, path, "expected %s, got %s", want, kindName(n)) }
	scalar := n.Kind == yaml.ScalarNode
	switch v.Kind() {
	case reflect.String:
		if !scalar {
			bad("a string")
			return
		}
		s, ok := d.expand(n, path)
		if !ok {
			return
		}
		if r, isCtl := controlChar(s); isCtl {
			// An escape sequence in a name or expression would reach the
			// terminal and CI logs through the reports.
			d.fail(n, path, "control character %U is not allowed (only tabs and line breaks)", r)
			return
		}
		v.SetString(s)
	case reflect.Bool:
		var b bool
		if !scalar || n.Tag != "!!bool" || n.Decode(&b) != nil {
			bad("true or false")
			return
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		var i int64
		if !scalar || n.Tag != "!!int" || n.Decode(&i) != nil {
			bad("an integer")
		} else if v.OverflowInt(i) {
			d.fail(n, path, "%d is out of range", i)
		} else {
			v.SetInt(i)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		var i uint64
		if !scalar || n.Tag != "!!int" || n.Decode(&i) != nil {
			bad("a non-negative integer")
		} else if v.OverflowUint(i) {
			d.fail(n, path, "%d is out of range", i)
		} else {
			v.SetUint(i)
		}
	case reflect.Float32, reflect.Float64:
		var f float64
		if !scalar || (n.Tag != "!!int" && n.Tag != "!!float") || n.Decode(&f) != nil {
			bad("a number")
			return
		}
		v.SetFloat(f)
	default:
		d.fail(n, path, "unsupported field type %s", v.Type())
	}
}

// field is one settable field of a struct, by its yaml name.
type field struct {
	name  string
	index []int
}

// yamlFields lists the fields a struct accepts in YAML, following yaml.v3's
// rules: the tag's name or the lower-cased field name, "-" skipped, ",inline"
// flattened.
func yamlFields(t reflect.Type) []field {
	var out []field
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if slices.Contains(strings.Split(opts, ","), "inline") {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for _, sub := range yamlFields(ft) {
					out = append(out, field{sub.name, append([]int{i}, sub.index...)})
				}
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out = append(out, field{name, []int{i}})
	}
	return out
}

// structFieldsOf holds each struct type's fields and their names, read by
// reflection once: a plan decodes the same few types over and over (a
// stage's checks, and an alias bomb's many copies until MaxValues stops it,
// where reading them anew was a third of the time).
var structFieldsOf sync.Map // reflect.Type → structInfo

type structInfo struct {
	fields []field
	names  []string
}

// structFields is yamlFields of t and the fields' names, cached; callers
// must not change them.
func structFields(t reflect.Type) ([]field, []string) {
	if si, ok := structFieldsOf.Load(t); ok {
		return si.(structInfo).fields, si.(structInfo).names
	}
	fields := yamlFields(t)
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
	}
	structFieldsOf.Store(t, structInfo{fields, names})
	return fields, names
}

func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value, path string, depth int) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "expected a mapping, got %s", kindName(n))
		return
	}
	fields, names := structFields(v.Type())
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.probs.add(posOf(k), "%s: keys must be plain names", displayPath(path))
			continue
		}
		if k.Value == "<<" {
			d.probs.add(posOf(k), "%s: merge keys (<<) are not supported; write the fields out", displayPath(path))
			continue
		}
		idx := slices.Index(names, k.Value)
		if idx < 0 {
			d.badBlock[path] = true
			d.probs.add(posOf(k), "unknown key %q in %s%s", k.Value, where(path), didYouMean(k.Value, names))
			continue
		}
		if seen[k.Value] {
			d.badBlock[path] = true
			d.probs.add(posOf(k), "duplicate key %q in %s", k.Value, where(path))
			continue
		}
		seen[k.Value] = true
		p := join(path, k.Value)
		d.keyAt[p] = posOf(k)
		fv := v
		for j, x := range fields[idx].index {
			if j > 0 && fv.Kind() == reflect.Pointer {
				if fv.IsNil() {
					fv.Set(reflect.New(fv.Type().Elem()))
				}
				fv = fv.Elem()
			}
			fv = fv.Field(x)
		}
		d.decode(val, fv, p, depth+1)
	}
}

func (d *decoder) decodeMap(n *yaml.Node, v reflect.Value, path string, depth int) {
	t := v.Type()
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "expected a mapping, got %s", kindName(n))
		return
	}
	if t.Key().Kind() != reflect.String || t.Elem().Kind() == reflect.Interface {
		// Free-form maps (extra_body) take YAML's own decoding, after
		// ${VAR} is expanded in their string values like everywhere else.
		if !d.expandFree(n, path) {
			return
		}
		m := reflect.New(t)
		if err := n.Decode(m.Interface()); err != nil {
			d.fail(n, path, "%s", cleanYAMLError(err))
			return
		}
		v.Set(m.Elem())
		return
	}
	if v.IsNil() {
		v.Set(reflect.MakeMapWithSize(t, len(n.Content)/2))
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Value == "" {
			d.probs.add(posOf(k), "%s: keys must be non-empty names", displayPath(path))
			continue
		}
		if seen[k.Value] {
			d.probs.add(posOf(k), "duplicate key %q in %s", k.Value, where(path))
			continue
		}
		if r, bad := nameChar(k.Value); bad {
			// Reported, and still decoded, so its references do not cascade.
			d.probs.add(posOf(k), "%s: key %q: %U is not allowed in a name (names are shown in reports, logs and the terminal)", displayPath(path), k.Value, r)
		}
		seen[k.Value] = true
		p := join(path, k.Value)
		d.keyAt[p] = posOf(k)
		e := reflect.New(t.Elem()).Elem()
		d.decode(val, e, p, depth+1)
		v.SetMapIndex(reflect.ValueOf(k.Value).Convert(t.Key()), e)
	}
}

// decodeLength accepts a number or a {min, max} / {mean, stdev, min, max} mapping.
func (d *decoder) decodeLength(n *yaml.Node, v reflect.Value, path string, depth int) {
	l := v.Addr().Interface().(*Length)
	switch n.Kind {
	case yaml.ScalarNode:
		var i int64
		if n.Tag != "!!int" || n.Decode(&i) != nil || i > 1<<31 || i < -(1<<31) {
			d.fail(n, path, "expected a token count (a whole number) or a mapping {min, max} or {mean, stdev}, got %s", kindName(n))
			return
		}
		*l = Length{Fixed: int(i)}
	case yaml.MappingNode:
		*l = Length{}
		d.decodeStruct(n, v, path, depth)
	default:
		d.fail(n, path, "expected a token count or a mapping {min, max} or {mean, stdev}, got %s", kindName(n))
	}
}

// displayPath turns an internal path into what a user reads in a message.
func displayPath(path string) string {
	if path == "" {
		return "plan"
	}
	return path
}

func where(path string) string {
	if path == "" {
		return "the plan"
	}
	return path
}

// cleanYAMLError strips yaml.v3's "yaml: unmarshal errors:\n  line N:" framing,
// since the position is already given.
func cleanYAMLError(err error) string {
	s := err.Error()
	s = strings.TrimPrefix(s, "yaml: unmarshal errors:\n")
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "line ") {
		if _, rest, ok := strings.Cut(s, ": "); ok {
			s = rest
		}
	}
	return strings.TrimPrefix(s, "yaml: ")
}

// expandFree expands ${VAR} in the string scalars of a free-form value (map
// values and list items, never keys), in place, reporting an unset variable
// at its position. It reports whether every expansion succeeded.
func (d *decoder) expandFree(n *yaml.Node, path string) bool {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag != "!!str" {
			return true
		}
		s, ok := d.expand(n, path)
		n.Value = s
		return ok
	case yaml.MappingNode:
		ok := true
		for i := 0; i+1 < len(n.Content); i += 2 {
			ok = d.expandFree(n.Content[i+1], path+"."+n.Content[i].Value) && ok
		}
		return ok
	case yaml.SequenceNode:
		ok := true
		for i, c := range n.Content {
			ok = d.expandFree(c, fmt.Sprintf("%s[%d]", path, i)) && ok
		}
		return ok
	}
	return true
}
