package scenario

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/runnerbench/runner/protocol"
)

// ToolDef is one tool a stage sends, in OpenAI's chat form:
// {type: function, function: {name, description, parameters}}. Each API
// gets it in its own form (Responses flat, Messages with input_schema).
type ToolDef struct {
	// Type is function (the only kind of tool).
	Type string `yaml:"type" json:"type"`
	// Function is the function the model may call.
	Function ToolFunction `yaml:"function" json:"function"`
}

// ToolFunction is a tool's function.
type ToolFunction struct {
	// Name is the function's name: 1 to 64 letters, digits, _ or -.
	Name string `yaml:"name" json:"name"`
	// Description says what the function does (the model reads it).
	Description string `yaml:"description,omitempty" json:"description,omitempty"`
	// Parameters is the arguments' JSON Schema, an object schema.
	Parameters map[string]any `yaml:"parameters,omitempty" json:"parameters,omitempty"`
	// Strict asks the server for arguments that follow the schema exactly (OpenAI's strict).
	Strict *bool `yaml:"strict,omitempty" json:"strict,omitempty"`
}

// ToolChoice is how a stage asks the model to use its tools: auto, none or
// required, or {type: function, function: {name: NAME}} for one function.
type ToolChoice struct {
	// Mode is auto, none, required or function (set from either form).
	Mode string `yaml:"-" json:"-"`
	// Type is function, in the mapping form.
	Type string `yaml:"type,omitempty" json:"type,omitempty"`
	// Function names the function to call, in the mapping form.
	Function *ToolChoiceFunction `yaml:"function,omitempty" json:"function,omitempty"`
}

// ToolChoiceFunction names the function a tool choice asks for.
type ToolChoiceFunction struct {
	// Name is the function's name, one of the stage's tools.
	Name string `yaml:"name" json:"name"`
}

// Tool choice words.
var toolModes = []string{protocol.ToolAuto, protocol.ToolNone, protocol.ToolRequired}

// UnmarshalYAML accepts a word (auto, none, required) or the mapping form
// (whose keys the plan decoder has checked strictly before this runs).
func (c *ToolChoice) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*c = ToolChoice{Mode: n.Value}
		return nil
	}
	type plain ToolChoice
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*c = ToolChoice(p)
	c.Mode = protocol.ToolFunction
	if c.Type != "function" {
		c.Mode = "" // validation names the type
	}
	return nil
}

// protocolTools is the stage's tools for the engine.
func protocolTools(ts []*ToolDef) []protocol.Tool {
	if len(ts) == 0 {
		return nil
	}
	out := make([]protocol.Tool, 0, len(ts))
	for _, t := range ts {
		if t == nil {
			continue
		}
		out = append(out, protocol.Tool{Name: t.Function.Name, Description: t.Function.Description,
			Parameters: t.Function.Parameters, Strict: t.Function.Strict})
	}
	return out
}

// protocolChoice is the stage's tool choice for the engine.
func protocolChoice(c *ToolChoice) protocol.ToolChoice {
	if c == nil {
		return protocol.ToolChoice{}
	}
	pc := protocol.ToolChoice{Mode: c.Mode}
	if c.Function != nil {
		pc.Name = c.Function.Name
	}
	return pc
}

// stageTools checks a stage's tools and tool choice: each a function with
// a valid name (unique in the stage) and an object schema, an API that
// takes tools, and a choice the tools can meet.
func (v *validator) stageTools(path string, s *Stage) {
	if len(s.Tools) == 0 {
		if s.ToolChoice != nil {
			v.errf(path+".tool_choice", "%s: tool_choice without tools: give the stage tools: [...]", path)
		}
		return
	}
	api := s.API
	if api == "" {
		api = DefaultAPI
	}
	if p, ok := protocol.Lookup(string(api)); ok {
		if _, takes := p.(protocol.ToolTaker); !takes {
			v.errf(path+".tools", "%s: api %s takes no tools (chat, responses and messages do)", path, api)
		}
	}
	names := map[string]int{}
	for i, t := range s.Tools {
		tp := fmt.Sprintf("%s.tools[%d]", path, i)
		if t == nil {
			v.errf(tp, "%s: empty tool: give {type: function, function: {name: ...}}", tp)
			continue
		}
		if t.Type != "function" {
			v.errf(tp+".type", "%s.type: %q is not a tool type Runner sends (function)", tp, t.Type)
		}
		if err := protocol.CheckTool(protocol.Tool{Name: t.Function.Name}); err != nil {
			v.errf(tp+".function.name", "%s: %v", tp, err)
		} else if j, dup := names[t.Function.Name]; dup {
			v.errf(tp+".function.name", "%s: function %q is also tools[%d]", tp, t.Function.Name, j)
		} else {
			names[t.Function.Name] = i
		}
		if err := checkSchema(t.Function.Parameters); err != nil {
			v.errf(tp+".function.parameters", "%s.function.parameters: %v", tp, err)
		}
	}
	c := s.ToolChoice
	if c == nil {
		return
	}
	cp := path + ".tool_choice"
	switch {
	case c.Type == "" && c.Function == nil:
		if !slices.Contains(toolModes, c.Mode) {
			v.errf(cp, "%s: %q is not one of %s, or {type: function, function: {name: ...}}%s", cp, c.Mode,
				strings.Join(toolModes, ", "), didYouMean(c.Mode, toolModes))
		}
	case c.Type != "function":
		v.errf(cp+".type", "%s.type: %q is not function", cp, c.Type)
	case c.Function == nil || c.Function.Name == "":
		v.errf(cp, "%s: name the function: {type: function, function: {name: ...}}", cp)
	default:
		if _, ok := names[c.Function.Name]; !ok {
			v.errf(cp+".function.name", "%s: function %q is not one of the stage's tools", cp, c.Function.Name)
		}
	}
}

// checkSchema says what is wrong with a function's parameters: when given,
// a JSON Schema of an object (every API requires that of a tool's input).
func checkSchema(p map[string]any) error {
	if p == nil {
		return nil
	}
	t, ok := p["type"]
	if !ok {
		return errors.New(`give the arguments' JSON Schema, an object schema: {type: object, properties: {...}}`)
	}
	if t != "object" {
		return fmt.Errorf("type is %v: a tool's arguments are an object (type: object)", t)
	}
	if props, ok := p["properties"]; ok {
		if _, isMap := props.(map[string]any); !isMap {
			return errors.New("properties must be a mapping of argument names to schemas")
		}
	}
	return nil
}
