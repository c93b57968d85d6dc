// Package build generates the plan and report JSON Schemas from the Go types
// with invopop/jsonschema. Descriptions come from the Go doc comments (or a
// field's trailing comment), so the schema documents every field in an editor.
// It runs from the schema directory (go generate and go test both do).
package build

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"

	"github.com/invopop/jsonschema"

	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
)

const module = "github.com/runnerbench/runner"

// Schemas returns the plan and report schemas, indented, with a final newline.
func Schemas() (plan, report []byte, err error) {
	comments := map[string]string{}
	for _, dir := range []string{"scenario", "sim/simconfig", "result"} {
		if err := readComments(filepath.Join("..", dir), module+"/"+dir, comments); err != nil {
			return nil, nil, err
		}
	}
	plan, err = generate(scenario.Plan{}, comments,
		"https://github.com/runnerbench/runner/schema/plan.schema.json", "Runner plan (version 1)")
	if err != nil {
		return nil, nil, err
	}
	report, err = generate(result.Report{}, comments,
		"https://github.com/runnerbench/runner/schema/report.schema.json",
		fmt.Sprintf("Runner report.json (schema_version %d)", result.SchemaVersion))
	return plan, report, err
}

var (
	lengthType   = reflect.TypeFor[scenario.Length]()
	perLevelType = reflect.TypeFor[scenario.PerLevel]()
	untilType    = reflect.TypeFor[scenario.UntilRules]()
	durationType = reflect.TypeFor[scenario.Duration]()
	secretType   = reflect.TypeFor[scenario.Secret]()
	labelsType   = reflect.TypeFor[result.Labels]()
	choiceType   = reflect.TypeFor[scenario.ToolChoice]()
	thinkType    = reflect.TypeFor[scenario.ThinkTime]()
)

// mapper gives the plan's custom scalar types the shape they have in YAML.
func mapper(t reflect.Type) *jsonschema.Schema {
	switch t {
	case lengthType:
		return &jsonschema.Schema{
			Description: "A token count: a whole number, {min, max} for a uniform range, or {mean, stdev[, min, max]} for a clipped normal.",
			OneOf: []*jsonschema.Schema{
				{Type: "integer", Minimum: json.Number("1")},
				object(
					"min", &jsonschema.Schema{Type: "integer", Minimum: json.Number("1"), Description: "Smallest length (uniform lower bound, or clip for a normal)."},
					"max", &jsonschema.Schema{Type: "integer", Minimum: json.Number("1"), Description: "Largest length (uniform upper bound, or clip for a normal)."},
					"mean", &jsonschema.Schema{Type: "number", Minimum: json.Number("1"), Description: "Mean of a normal length."},
					"stdev", &jsonschema.Schema{Type: "number", Minimum: json.Number("0"), Description: "Standard deviation of a normal length."},
				),
			},
		}
	case perLevelType:
		count := func() *jsonschema.Schema {
			return &jsonschema.Schema{Type: "integer", Minimum: json.Number("1"), Maximum: json.Number(strconv.Itoa(scenario.MaxRequests))}
		}
		return &jsonschema.Schema{
			Description: "A count for every level, or a list with one count per level, in the order the levels are listed.",
			OneOf: []*jsonschema.Schema{
				count(),
				{Type: "array", Items: count(), MinItems: ptrU64(1)},
			},
		}
	case thinkType:
		return thinkSchema()
	case untilType:
		rule := func() *jsonschema.Schema {
			return &jsonschema.Schema{Type: "string", Pattern: untilPattern,
				Description: "decided, METRIC within P% (ttft_p95_ms within 5%), or fixed (in a list: that level sends its requests or duration)."}
		}
		return &jsonschema.Schema{
			Description: "A rule for every level, or a list with one rule per level, in the order the levels are listed.",
			OneOf: []*jsonschema.Schema{
				rule(),
				{Type: "array", Items: rule(), MinItems: ptrU64(1)},
			},
		}
	case durationType:
		return &jsonschema.Schema{
			Type:        "string",
			Pattern:     `^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`,
			Description: "A duration such as \"500ms\", \"30s\", \"2m\" or \"1h30m\".",
		}
	case labelsType:
		return &jsonschema.Schema{
			Type: "object",
			Description: fmt.Sprintf("Labels: free key: value strings saying what the run is (engine, model, hardware, submission, gpus, ...). "+
				"At most %d; a key is a letter then letters, digits, '_', '.' or '-', at most %d bytes; a value is one line of at most %d bytes (untrusted text: every report escapes it).",
				result.MaxLabels, result.MaxLabelKey, result.MaxLabelValue),
			MaxProperties:        ptrU64(result.MaxLabels),
			PropertyNames:        &jsonschema.Schema{Type: "string", Pattern: result.LabelKeyPattern, MaxLength: ptrU64(result.MaxLabelKey)},
			AdditionalProperties: &jsonschema.Schema{Type: "string", MaxLength: ptrU64(result.MaxLabelValue)},
		}
	case choiceType:
		return &jsonschema.Schema{
			Description: "How the model is asked to use the stage's tools: auto, none, required, or {type: function, function: {name: NAME}} for one of them.",
			OneOf: []*jsonschema.Schema{
				{Type: "string", Enum: []any{"auto", "none", "required"}},
				object(
					"type", &jsonschema.Schema{Type: "string", Enum: []any{"function"}, Description: "function: call the function named in function."},
					"function", withDescription(object("name", &jsonschema.Schema{Type: "string", Description: "The function to call, one of the stage's tools."}),
						"The function the model is to call."),
				),
			},
		}
	case secretType:
		return &jsonschema.Schema{Type: "string", Description: "A secret; usually ${ENV_VAR}. Never printed, logged or reported."}
	}
	return nil
}

// untilPattern is what the loader's ParseUntil accepts, for editors.
const untilPattern = `^\s*(decided|fixed|[A-Za-z0-9_.]+\s+within\s+[0-9]*\.?[0-9]+\s*%)\s*$`

func ptrU64(n uint64) *uint64 { return &n }

// withDescription sets s's description and returns it.
func withDescription(s *jsonschema.Schema, d string) *jsonschema.Schema {
	s.Description = d
	return s
}

// object builds a closed object schema from name, schema pairs, in order.
func object(kv ...any) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "object", AdditionalProperties: jsonschema.FalseSchema, Properties: jsonschema.NewProperties()}
	for i := 0; i+1 < len(kv); i += 2 {
		s.Properties.Set(kv[i].(string), kv[i+1].(*jsonschema.Schema))
	}
	return s
}

func generate(v any, comments map[string]string, id, title string) ([]byte, error) {
	r := &jsonschema.Reflector{
		Mapper:         mapper,
		ExpandedStruct: true,
		LookupComment: func(t reflect.Type, field string) string {
			key := t.PkgPath() + "." + t.Name()
			if field != "" {
				key += "." + field
			}
			if c := comments[key]; c != "" {
				return c
			}
			if field != "" {
				return describe(t, field)
			}
			return ""
		},
	}
	s := r.Reflect(v)
	s.ID = jsonschema.ID(id)
	s.Title = title
	if _, isPlan := v.(scenario.Plan); isPlan {
		addEnums(s)
	}
	if _, isReport := v.(result.Report); isReport {
		addReportEnums(s)
		nullable(s, reflect.TypeOf(v))
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// addEnums lists the allowed values of the plan's enumerations, so editors
// complete them and flag typos as the loader does.
func addEnums(root *jsonschema.Schema) {
	set := setEnum
	set(root.Definitions["Stage"], "api", strs(scenario.APIs))
	set(root.Definitions["Stage"], "mode", strs(scenario.Modes))
	set(root.Definitions["Stage"], "arrival", strs(scenario.Arrivals))
	set(root.Definitions["Stage"], "undecided", strs(scenario.Undecideds))
	set(root.Definitions["Check"], "scope", strs(scenario.Scopes))
	set(root.Definitions["Check"], "severity", strs(scenario.Severities))
	set(root.Definitions["Synthetic"], "sizing", strs(scenario.Sizings))
	set(root.Definitions["PromptSet"], "format", strs(scenario.Formats))
	set(root.Definitions["Search"], "over", strs(scenario.Overs))
	set(root.Definitions["Trace"], "format", strs(scenario.TraceFormats))
	set(root.Definitions["Images"], "format", strs(scenario.ImageFormats))
	set(root.Definitions["Export"], "to", scenario.ExportProtocols)
	if p, ok := root.Properties.Get("version"); ok {
		p.Const = 1
	}
}

// addReportEnums lists the allowed values of a report stage's enumerations:
// the plan's api and mode ("" for an API without output), and the kinds of
// load (result.LoadKinds).
func addReportEnums(root *jsonschema.Schema) {
	st := root.Definitions["Stage"]
	setEnum(st, "api", strs(scenario.APIs))
	setEnum(st, "mode", append(strs(scenario.Modes), ""))
	setEnum(st, "load", strs(result.LoadKinds))
}

// setEnum lists values as the allowed values of def's property prop.
func setEnum(def *jsonschema.Schema, prop string, values []string) {
	if def == nil || def.Properties == nil {
		return
	}
	if p, ok := def.Properties.Get(prop); ok {
		for _, v := range values {
			p.Enum = append(p.Enum, v)
		}
	}
}

// strs is an enumeration's values as strings.
func strs[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

// nullable marks report fields that are null in JSON (pointers, and slices and
// maps without omitempty) as "T or null", so a real report.json validates.
func nullable(root *jsonschema.Schema, t reflect.Type) {
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] || t.PkgPath() != module+"/result" {
			return
		}
		seen[t] = true
		def := root.Definitions[t.Name()]
		if t == reflect.TypeFor[result.Report]() {
			def = root
		}
		for i := range t.NumField() {
			f := t.Field(i)
			walk(f.Type)
			if def == nil || def.Properties == nil {
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			k := f.Type.Kind()
			if k != reflect.Pointer && !((k == reflect.Slice || k == reflect.Map) && !strings.Contains(opts, "omitempty")) {
				continue
			}
			p, ok := def.Properties.Get(name)
			if !ok {
				continue
			}
			desc := p.Description
			p.Description = ""
			def.Properties.Set(name, &jsonschema.Schema{AnyOf: []*jsonschema.Schema{p, {Type: "null"}}, Description: desc})
		}
	}
	walk(t)
}

// describe writes a description for a field without a comment, from its
// name's units, so every field in the schema says something.
func describe(t reflect.Type, field string) string {
	f, ok := t.FieldByName(field)
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" {
		name = strings.ToLower(field)
	}
	words := strings.ReplaceAll(name, "_", " ")
	for suffix, unit := range map[string]string{" ms": " in milliseconds", " s": " in seconds", " tps": " in tokens per second"} {
		if strings.HasSuffix(words, suffix) {
			words = strings.TrimSuffix(words, suffix) + unit
		}
	}
	return strings.ToUpper(words[:1]) + words[1:] + "."
}

// readComments collects the doc comment (or, failing that, the trailing line
// comment) of every struct type and field in dir's non-test Go files, keyed
// "importpath.Type" and "importpath.Type.Field".
func readComments(dir, importPath string, out map[string]string) error {
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return err
	}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
		if err != nil {
			return fmt.Errorf("parse %s: %w", path, err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				doc := ts.Doc
				if doc == nil && len(gd.Specs) == 1 {
					doc = gd.Doc
				}
				if doc != nil {
					out[importPath+"."+ts.Name.Name] = clean(doc.Text())
				}
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				for _, fld := range st.Fields.List {
					text := ""
					if fld.Doc != nil {
						text = fld.Doc.Text()
					} else if fld.Comment != nil {
						text = fld.Comment.Text()
					}
					if text == "" {
						continue
					}
					for _, n := range fld.Names {
						out[importPath+"."+ts.Name.Name+"."+n.Name] = clean(text)
					}
				}
			}
		}
	}
	return nil
}

// clean joins a comment's lines into one paragraph per blank-line break.
func clean(s string) string {
	paras := strings.Split(strings.TrimSpace(s), "\n\n")
	for i, p := range paras {
		paras[i] = strings.Join(strings.Fields(p), " ")
	}
	return strings.Join(paras, "\n\n")
}

// thinkSchema is a think time's: a duration, or the mapping of a drawn one.
func thinkSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		Description: "A think time: a duration, {min, max} for a uniform range, {mean, stdev[, min, max]} for a normal clipped at 0, or {exponential: MEAN}; drawn with the stage's seed.",
		OneOf: []*jsonschema.Schema{
			mapper(durationType),
			object(
				"min", withDescription(mapper(durationType), "Shortest think time (uniform lower bound, or clip for a normal)."),
				"max", withDescription(mapper(durationType), "Longest think time (uniform upper bound, or clip for a normal)."),
				"mean", withDescription(mapper(durationType), "Mean of a normal think time."),
				"stdev", withDescription(mapper(durationType), "Standard deviation of a normal think time."),
				"exponential", withDescription(mapper(durationType), "Mean of an exponential think time."),
			),
		},
	}
}
