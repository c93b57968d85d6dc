package scenario

import (
	"fmt"
	"strings"
)

// expandEnv replaces ${VAR} and ${VAR:-default} in s. "$${" is a literal "${".
// A lone "$" is kept as it is, so prices and regexps need no escaping. An unset
// variable without a default is an error: a plan that silently sends an empty
// API key wastes a whole run.
func expandEnv(s string, getenv func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		if i > 0 && s[i-1] == '$' {
			b.WriteString(s[:i-1])
			b.WriteString("${")
			s = s[i+2:]
			continue
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			// The value is not quoted: it may be (part of) a secret.
			return "", fmt.Errorf("unterminated ${ (write $${ for a literal ${)")
		}
		expr := s[i+2 : i+end]
		name, def, hasDef := strings.Cut(expr, ":-")
		if !validEnvName(name) {
			return "", fmt.Errorf("invalid environment variable name %q in ${%s}", name, expr)
		}
		v, ok := getenv(name)
		switch {
		case ok && v != "":
			b.WriteString(v)
		case hasDef:
			b.WriteString(def)
		case ok:
			// Set but empty, no default: the empty value is what was asked for.
		default:
			return "", fmt.Errorf("environment variable %s is not set (write ${%s:-default} to give a default)", name, name)
		}
		s = s[i+end+1:]
	}
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
