package envpolicy

import (
	"fmt"
	"strings"
)

// Part is one piece of a string value: literal text, or a ${VAR} /
// ${VAR:-default} reference.
type Part struct {
	Lit    string // literal text, when Name is ""
	Name   string // the variable's name
	Def    string // the default after :-
	HasDef bool
}

// ParseTemplate splits s into literal text and ${VAR} references. "$${" is
// a literal "${"; a lone "$" is kept as it is, so prices and regexps need no
// escaping. It returns nil parts for a string without references.
func ParseTemplate(s string) ([]Part, error) {
	if !strings.Contains(s, "${") {
		return nil, nil
	}
	var parts []Part
	var lit strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			lit.WriteString(s)
			break
		}
		if i > 0 && s[i-1] == '$' {
			lit.WriteString(s[:i-1])
			lit.WriteString("${")
			s = s[i+2:]
			continue
		}
		lit.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			// The value is not quoted: it may be (part of) a secret.
			return nil, fmt.Errorf("unterminated ${ (write $${ for a literal ${)")
		}
		expr := s[i+2 : i+end]
		name, def, hasDef := strings.Cut(expr, ":-")
		if !ValidName(name) {
			return nil, fmt.Errorf("invalid environment variable name %q in ${%s}", name, expr)
		}
		if lit.Len() > 0 {
			parts = append(parts, Part{Lit: lit.String()})
			lit.Reset()
		}
		parts = append(parts, Part{Name: name, Def: def, HasDef: hasDef})
		s = s[i+end+1:]
	}
	if lit.Len() > 0 {
		parts = append(parts, Part{Lit: lit.String()})
	}
	return parts, nil
}

// ValidName reports whether s is an environment variable name: letters,
// digits and _, not starting with a digit.
func ValidName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
