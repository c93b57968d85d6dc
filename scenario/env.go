package scenario

import (
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/runnerbench/runner/scenario/envpolicy"
)

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
	parts []envpolicy.Part
	text  []string  // what each part became (never printed: it may be a secret)
	read  []envRead // how
	grant []envpolicy.Grant
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
	parts, err := envpolicy.ParseTemplate(n.Value)
	if err != nil {
		d.fail(n, path, "%v", err)
		return "", false
	}
	if parts == nil {
		return n.Value, true
	}
	e := &envString{path: path, at: posOf(n), parts: parts, text: make([]string, len(parts)), read: make([]envRead, len(parts)), grant: make([]envpolicy.Grant, len(parts))}
	for i, p := range parts {
		if p.Name == "" {
			e.text[i] = p.Lit
			continue
		}
		g := d.allow.Grant(p.Name)
		e.grant[i] = g
		// A reference that cannot be resolved stands for itself, so the
		// value is not empty and validation adds no second message.
		e.text[i] = "${" + p.Name + "}"
		v, set := d.getenv(p.Name)
		switch {
		case !g.Listed && p.HasDef && v == "":
			// Nothing is learnt from an unset variable but that it is
			// unset: the plan's default applies, so plans with defaults
			// run with no allow-list at all.
			e.text[i], e.read[i] = p.Def, envDefault
		case !g.Listed && p.HasDef:
			// Set but not allowed: running with the default would measure
			// something other than what the person who set it meant.
			e.read[i] = envRefusedSet
		case !g.Listed:
			e.read[i] = envRefused
		case v != "":
			e.text[i], e.read[i] = v, envValue
		case p.HasDef:
			e.text[i], e.read[i] = p.Def, envDefault
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
