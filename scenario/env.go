package scenario

import (
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// envPart is one piece of a string value: literal text, or a ${VAR} /
// ${VAR:-default} reference.
type envPart struct {
	lit    string // literal text, when name is ""
	name   string
	def    string
	hasDef bool
}

// parseEnvTemplate splits s into literal text and ${VAR} references. "$${" is
// a literal "${"; a lone "$" is kept as it is, so prices and regexps need no
// escaping. It returns nil parts for a string without references.
func parseEnvTemplate(s string) ([]envPart, error) {
	if !strings.Contains(s, "${") {
		return nil, nil
	}
	var parts []envPart
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
		if !validEnvName(name) {
			return nil, fmt.Errorf("invalid environment variable name %q in ${%s}", name, expr)
		}
		if lit.Len() > 0 {
			parts = append(parts, envPart{lit: lit.String()})
			lit.Reset()
		}
		parts = append(parts, envPart{name: name, def: def, hasDef: hasDef})
		s = s[i+end+1:]
	}
	if lit.Len() > 0 {
		parts = append(parts, envPart{lit: lit.String()})
	}
	return parts, nil
}

// envRead is what one ${VAR} reference became.
type envRead int

const (
	envLiteral    envRead = iota // not a reference
	envValue                     // the variable's value was read
	envDefault                   // the default was used (unset, empty, or not allowed and unset)
	envEmpty                     // set but empty, no default
	envUnset                     // allowed but unset, no default: an error
	envRefused                   // not allowed: an error, nothing read
	envRefusedSet                // not allowed, has a default, but set: an error
)

// envString is one plan value written with ${VAR}: where it is, its parts,
// and what each part became. The loader checks every one against the job's
// allow-list once the plan is decoded (see checkEnv), when it knows where
// each value will be sent.
type envString struct {
	path  string
	at    pos
	parts []envPart
	text  []string  // what each part became (never printed: it may be a secret)
	read  []envRead // how
	grant []envGrant
}

// value is the expanded string.
func (e *envString) value() string { return strings.Join(e.text, "") }

// expand resolves s against the environment, as far as the job allows, and
// records the references for checkEnv. A variable the allow-list does not
// name is not read, unless only to see that it is unset so that its
// default applies. ok is false when n's value is malformed (reported).
func (d *decoder) expand(n *yaml.Node, path string) (string, bool) {
	if d.literal {
		return n.Value, true
	}
	parts, err := parseEnvTemplate(n.Value)
	if err != nil {
		d.fail(n, path, "%v", err)
		return "", false
	}
	if parts == nil {
		return n.Value, true
	}
	e := &envString{path: path, at: posOf(n), parts: parts, text: make([]string, len(parts)), read: make([]envRead, len(parts)), grant: make([]envGrant, len(parts))}
	for i, p := range parts {
		if p.name == "" {
			e.text[i] = p.lit
			continue
		}
		g := d.allow.grant(p.name)
		e.grant[i] = g
		// A reference that cannot be resolved stands for itself, so the
		// value is not empty and validation adds no second message.
		e.text[i] = "${" + p.name + "}"
		v, set := d.getenv(p.name)
		switch {
		case !g.listed && p.hasDef && v == "":
			// Nothing is learnt from an unset variable but that it is
			// unset: the plan's default applies, so plans with defaults
			// run with no allow-list at all.
			e.text[i], e.read[i] = p.def, envDefault
		case !g.listed && p.hasDef:
			// Set but not allowed: running with the default would measure
			// something other than what the person who set it meant.
			e.read[i] = envRefusedSet
		case !g.listed:
			e.read[i] = envRefused
		case v != "":
			e.text[i], e.read[i] = v, envValue
		case p.hasDef:
			e.text[i], e.read[i] = p.def, envDefault
		case set:
			e.read[i] = envEmpty // set but empty, no default: the empty value is what was asked for
		default:
			e.read[i] = envUnset
		}
	}
	d.env = append(d.env, e)
	if slices.ContainsFunc(e.read, func(r envRead) bool { return r >= envUnset }) {
		d.badTree[path] = true // reported by checkEnv; nothing more to say about this value
	}
	return e.value(), true
}

func validEnvName(s string) bool {
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
