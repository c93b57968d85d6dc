package scenario

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/runnerbench/runner/internal/redact"
)

// Written decodes a plan as it is written: its fields with defaults applied
// and every ${VAR} left as it stands, reading no environment variable and
// no file. It is what a result directory's plan.yaml can still say after
// the run, when its prompt files and environment may be gone: enough to
// compare two plans' load parts (LoadDiff).
func Written(name string, data []byte) (*Plan, error) {
	probs := &problems{file: name}
	if len(data) > MaxPlanBytes {
		probs.add(pos{}, "plan is larger than %d MiB", MaxPlanBytes>>20)
		return nil, probs.err()
	}
	root := parseRoot(probs, data, "plan", "a mapping with version, name, endpoints, prompts and stages")
	if root == nil {
		return nil, probs.err()
	}
	p := &Plan{Path: name, Source: data}
	d := newDecoder(probs, func(string) (string, bool) { return "", false })
	d.literal = true
	d.decode(root, reflect.ValueOf(p).Elem(), "", 0)
	if err := probs.err(); err != nil {
		return nil, err
	}
	p.ApplyDefaults()
	return p, nil
}

// What a plan's load part leaves out: what only judges the load (checks,
// the SLO of a stage that does not search with it), names it, or reaches
// the server without shaping the load (credentials, where its counters
// are, how long to wait for it). Everything else decides what was sent.
var (
	notLoadEndpoint = []string{"api_key", "headers", "metrics_url", "counters", "ready_timeout", "tls"}
	notLoadStage    = []string{"name", "checks", "slo", "undecided", "confidence"}
)

// LoadDiff returns the first difference between two plans' load parts
// (their endpoints, prompt sets and stages, but for what only judges the
// load: checks, and SLOs of stages that do not search), as "where: a in
// aName, b in bName"; "" when they send the same load. Both plans should
// come from Written, so ${VAR} compares as written. A search stage's SLO is
// load: its targets may read goodput, which chose its probes.
func LoadDiff(a, b *Plan, aName, bName string) string {
	w := &differ{aName: aName, bName: bName}
	if d := w.maps("endpoints", reflect.ValueOf(a.Endpoints), reflect.ValueOf(b.Endpoints), notLoadEndpoint); d != "" {
		return d
	}
	if d := w.maps("prompts", reflect.ValueOf(a.Prompts), reflect.ValueOf(b.Prompts), nil); d != "" {
		return d
	}
	names := func(p *Plan) []string {
		var out []string
		for _, s := range p.Stages {
			out = append(out, s.Name)
		}
		return out
	}
	if an, bn := names(a), names(b); !slices.Equal(an, bn) {
		return w.both("stages", strings.Join(an, ", "), strings.Join(bn, ", "))
	}
	for i, sa := range a.Stages {
		sb := b.Stages[i]
		skip := notLoadStage
		if sa.Search != nil || sb.Search != nil {
			skip = notLoadStage[:2]
		}
		if d := w.value(fmt.Sprintf("stages[%s]", sa.Name), reflect.ValueOf(sa), reflect.ValueOf(sb), skip); d != "" {
			return d
		}
	}
	return ""
}

// differ finds the first difference between two values of a plan's types.
type differ struct{ aName, bName string }

func (w *differ) both(path, a, b string) string {
	return fmt.Sprintf("%s: %s in %s, %s in %s", path, a, w.aName, b, w.bName)
}

// value compares a and b (of one type) at path; skip names the yaml keys of
// a struct at this level not to compare.
func (w *differ) value(path string, a, b reflect.Value, skip []string) string {
	switch {
	case a.Kind() == reflect.Pointer || a.Kind() == reflect.Interface:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				return w.both(path, show(path, a), show(path, b))
			}
			return ""
		}
		if a.Kind() == reflect.Interface {
			break
		}
		return w.value(path, a.Elem(), b.Elem(), skip)
	case a.Kind() == reflect.Map:
		return w.maps(path, a, b, skip)
	case a.Kind() == reflect.Struct && !a.Type().Implements(yamlMarshaler):
		return w.fields(path, a, b, skip)
	case a.Kind() == reflect.Slice && a.Len() == b.Len() && elementwise(a.Type().Elem().Kind()):
		for i := range a.Len() {
			if d := w.value(fmt.Sprintf("%s[%d]", path, i), a.Index(i), b.Index(i), nil); d != "" {
				return d
			}
		}
		return ""
	}
	if !reflect.DeepEqual(a.Interface(), b.Interface()) {
		return w.both(path, show(path, a), show(path, b))
	}
	return ""
}

var yamlMarshaler = reflect.TypeFor[yaml.Marshaler]()

// elementwise says whether a list of these is compared element by element
// (prompts, targets, stages), not written whole (levels: [1, 2, 4]).
func elementwise(k reflect.Kind) bool {
	return k == reflect.Pointer || k == reflect.String || k == reflect.Struct || k == reflect.Map
}

// fields compares two structs field by field, by their yaml names; fields
// the loader fills (yaml "-") are not the plan's text and are left out.
func (w *differ) fields(path string, a, b reflect.Value, skip []string) string {
	for _, f := range yamlFields(a.Type()) {
		if slices.Contains(skip, f.name) {
			continue
		}
		fa, fb := a.FieldByIndex(f.index), b.FieldByIndex(f.index)
		if d := w.value(join(path, f.name), fa, fb, nil); d != "" {
			return d
		}
	}
	return ""
}

// maps compares two maps entry by entry, in key order: a key only one has
// is the difference.
func (w *differ) maps(path string, a, b reflect.Value, skip []string) string {
	keys := map[string]bool{}
	for _, m := range []reflect.Value{a, b} {
		for _, k := range m.MapKeys() {
			keys[k.String()] = true
		}
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	slices.Sort(sorted)
	for _, k := range sorted {
		kv := reflect.ValueOf(k).Convert(a.Type().Key())
		va, vb := a.MapIndex(kv), b.MapIndex(kv)
		at := join(path, k)
		switch {
		case !va.IsValid() && !vb.IsValid():
		case !va.IsValid():
			return w.both(at, "not set", brief(at, vb))
		case !vb.IsValid():
			return w.both(at, brief(at, va), "not set")
		default:
			if d := w.value(at, va, vb, skip); d != "" {
				return d
			}
		}
	}
	return ""
}

// brief is a map entry only one plan has: a plain value as show writes
// it, an endpoint or prompt set as "set" (written whole it would be long,
// and an endpoint's URL may hold a credential).
func brief(path string, v reflect.Value) string {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return "set"
		}
		v = v.Elem()
	}
	if k := v.Kind(); k == reflect.Struct || k == reflect.Map || k == reflect.Slice {
		return "set"
	}
	return show(path, v)
}

// show writes a value as a plan would, on one line; a URL without its
// credentials.
func show(path string, v reflect.Value) string {
	if (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface || v.Kind() == reflect.Map || v.Kind() == reflect.Slice) && v.IsNil() {
		return "not set"
	}
	if s, ok := v.Interface().(string); ok && strings.HasSuffix(path, "_url") {
		return fmt.Sprintf("%q", redact.URLInPlan(s))
	}
	var n yaml.Node
	if err := n.Encode(v.Interface()); err != nil {
		return fmt.Sprintf("%v", v.Interface())
	}
	flow(&n)
	out, err := yaml.Marshal(&n)
	if err != nil {
		return fmt.Sprintf("%v", v.Interface())
	}
	s := strings.Join(strings.Fields(string(out)), " ")
	if len(s) > 120 {
		// An inline prompt or a body can be long: enough to recognise it.
		cut := 120
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

func flow(n *yaml.Node) {
	n.Style |= yaml.FlowStyle
	for _, c := range n.Content {
		flow(c)
	}
}
