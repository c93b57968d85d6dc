package protocol

import (
	"errors"
	"fmt"
)

// Tool is one function a model may call, as a stage declares it (OpenAI's
// chat form, {"type": "function", "function": {...}}). The model's calls
// are recorded, never executed: a benchmark has no tools to run.
type Tool struct {
	Name        string
	Description string
	// Parameters is the arguments' JSON Schema (an object); nil: none.
	Parameters map[string]any
	// Strict asks for arguments that follow Parameters exactly (OpenAI's
	// strict; nil: not sent).
	Strict *bool
}

// Tool choices (ToolChoice.Mode): the API's default (""), and chat's words,
// which each API writes in its own form.
const (
	ToolAuto     = "auto"
	ToolNone     = "none"
	ToolRequired = "required"
	ToolFunction = "function" // the function ToolChoice.Name
)

// ToolChoice is how the model is asked to use the tools.
type ToolChoice struct {
	Mode string
	Name string // Mode function: the function to call
}

// CheckTool says what is wrong with a tool definition ("" when nothing):
// a function name the APIs accept (1 to 64 of a-z, A-Z, 0-9, _ and -).
func CheckTool(t Tool) error {
	if t.Name == "" {
		return errors.New("function.name is required")
	}
	if len(t.Name) > 64 {
		return fmt.Errorf("function.name %.20q… is longer than 64 bytes", t.Name)
	}
	for _, r := range t.Name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return fmt.Errorf("function.name %q may hold only letters, digits, _ and - (the APIs refuse others)", t.Name)
		}
	}
	return nil
}

// chatTools is the tools in chat's form; Responses flattens them
// (flat), Messages renames parameters to input_schema.
func chatTools(ts []Tool) []any {
	out := make([]any, len(ts))
	for i, t := range ts {
		out[i] = map[string]any{"type": "function", "function": t.fields("parameters")}
	}
	return out
}

// fields is the function's name, description and schema, the schema under
// the key schema.
func (t Tool) fields(schema string) map[string]any {
	f := map[string]any{"name": t.Name}
	if t.Description != "" {
		f["description"] = t.Description
	}
	if t.Parameters != nil {
		f[schema] = t.Parameters
	}
	if t.Strict != nil && schema == "parameters" {
		f["strict"] = *t.Strict
	}
	return f
}

// chatToolChoice is chat's tool_choice (nil: not sent).
func chatToolChoice(c ToolChoice) any {
	switch c.Mode {
	case "":
		return nil
	case ToolFunction:
		return map[string]any{"type": "function", "function": map[string]any{"name": c.Name}}
	}
	return c.Mode
}

// setTools writes the tools and the choice into an OpenAI chat body.
func setChatTools(body map[string]any, r *Request) {
	if len(r.Tools) == 0 {
		return
	}
	body["tools"] = chatTools(r.Tools)
	if c := chatToolChoice(r.ToolChoice); c != nil {
		body["tool_choice"] = c
	}
}
