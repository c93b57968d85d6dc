package scenario

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/runnerbench/runner/internal/redact"
	"github.com/runnerbench/runner/scenario/envpolicy"
)

// checkEnv holds every ${VAR} the plan wrote against the job's allow-list,
// once the plan is decoded and validated, so that it knows where each value
// would be sent. Every refusal names the variable, never its value, and says
// how the job allows it.
func (v *validator) checkEnv() {
	if v.dec == nil {
		return
	}
	v.reportRefused()
	for _, e := range v.dec.env {
		if slices.ContainsFunc(e.read, func(r envRead) bool { return r >= envUnset }) {
			continue // a value with a refused part says nothing more
		}
		for i, p := range e.parts {
			if e.read[i] == envValue && !e.grant[i].Public {
				v.checkCredential(e, i, p.Name)
			}
		}
	}
}

// refusal is a variable the plan may not read, or that is not set: reported
// once, at its first use, since the fix is one entry of the allow-list.
type refusal struct {
	e      *envString
	i      int
	others int  // uses after the first
	cred   bool // some use is a credential position
	dest   envpolicy.Dest
}

// reportRefused reports each variable the plan may not read (or that is
// allowed but not set, without a default) once.
func (v *validator) reportRefused() {
	var order []*refusal
	byName := map[string]*refusal{}
	for _, e := range v.dec.env {
		for i, p := range e.parts {
			if e.read[i] < envUnset {
				continue
			}
			r := byName[p.Name]
			if r == nil {
				r = &refusal{e: e, i: i}
				byName[p.Name] = r
				order = append(order, r)
			} else {
				r.others++
			}
			if dest, isCred, _ := v.credentialSink(e, i); isCred && !r.cred {
				r.cred, r.dest = true, dest
			}
		}
	}
	for _, r := range order {
		name, where := r.e.parts[r.i].Name, displayPath(r.e.path)
		also := ""
		if r.others > 0 {
			also = fmt.Sprintf(" (here and in %d more %s)", r.others, map[bool]string{true: "place", false: "places"}[r.others == 1])
		}
		switch r.e.read[r.i] {
		case envUnset:
			v.probs.add(r.e.at, "%s: environment variable %s is not set%s (write ${%s:-default} to give a default)", where, name, also, name)
		case envRefusedSet:
			v.probs.add(r.e.at, "%s: environment variable %s is set, but the job does not allow this plan to read it%s: unset it to use the plan's default, or, %s",
				where, name, also, r.howToAllow(name))
		default:
			v.probs.add(r.e.at, "%s: the job does not allow this plan to read environment variable %s%s: %s; see docs/security.md",
				where, name, also, r.howToAllow(name))
		}
	}
}

// howToAllow says which entry would allow the variable, and what it means:
// the message may be read by someone deciding whether to trust a plan from
// a pull request, so it names the host a credential would go to and warns
// that a public value is shown, rather than just offering a flag to copy.
func (r *refusal) howToAllow(name string) string {
	switch {
	case !r.cred:
		return fmt.Sprintf("if it holds no secret, run with --allow-env %s (or add it to %s): its value is then public", name, envpolicy.AllowEnvVar)
	case r.dest == (envpolicy.Dest{}):
		return fmt.Sprintf("run with --allow-env %s@HOST (or add it to %s), HOST being the host the credential is for", name, envpolicy.AllowEnvVar)
	}
	return fmt.Sprintf("if %s is the host this credential is for (this plan sends it there), run with --allow-env %s@%s (or add it to %s)",
		r.dest, name, suggestHost(r.dest), envpolicy.AllowEnvVar)
}

// checkCredential checks a value the job allowed only as a credential
// (NAME@HOST): it must sit where every output redacts it, and go only to the
// hosts the job named.
func (v *validator) checkCredential(e *envString, i int, name string) {
	g := e.grant[i]
	dest, isCred, msg := v.credentialSink(e, i)
	switch {
	case msg != "":
		v.probs.add(e.at, "%s: %s", displayPath(e.path), msg)
	case !isCred:
		v.probs.add(e.at, "%s: environment variable %s is allowed only as a credential (for %s): it may be used in api_key, headers, or the password or key parameter of a URL, where it is never shown; it can be used here only as a public value (--allow-env %s), which a secret must never be",
			displayPath(e.path), name, g.HostList(), name)
	case dest == (envpolicy.Dest{}):
		// The URL is invalid, which validation reports.
	case !g.Allows(dest):
		v.probs.add(e.at, "%s: environment variable %s may be sent only to %s, not to %s: if %s should receive it, run with --allow-env %s@%s",
			displayPath(e.path), name, g.HostList(), dest, suggestHost(dest), name, suggestHost(dest))
	}
}

func suggestHost(d envpolicy.Dest) string {
	if d == envpolicy.Simulator {
		return "localhost"
	}
	return d.Host
}

// credentialSink says whether reference i of e is in a credential position
// (api_key, a header value, the password or a key parameter of base_url or
// metrics_url: the places every output redacts) and, if so, which host
// receives it (zero when the URL is invalid). msg is set when a credential
// would change the URL it is part of.
func (v *validator) credentialSink(e *envString, i int) (dest envpolicy.Dest, isCred bool, msg string) {
	if x, rest := v.exportOf(e.path); x != nil {
		return v.exportSink(e, i, x, rest)
	}
	if t, rest := v.telemetryOf(e.path); t != nil {
		// A telemetry target's headers and URL credentials go to its
		// URL's host, as an export block's do.
		return v.exportSink(e, i, &Export{URL: t.URL}, rest)
	}
	name, ep := v.endpointOf(e.path)
	if ep == nil {
		return envpolicy.Dest{}, false, ""
	}
	switch rest := strings.TrimPrefix(e.path, "endpoints."+name+"."); {
	case rest == "api_key" || strings.HasPrefix(rest, "headers."):
		if ep.Simulator != nil {
			return envpolicy.Simulator, true, ""
		}
		return hostOf(ep.BaseURL), true, ""
	case rest == "base_url" || rest == "metrics_url":
		if e.read[i] == envValue && strings.ContainsAny(e.text[i], "/?#@[]&=\\ \t\r\n") {
			return envpolicy.Dest{}, false, "the value of environment variable " + e.parts[i].Name +
				" contains characters that would change the URL (one of / ? # @ & = [ ] \\ or white space): percent-encode them in the variable"
		}
		if !inURLCredential(e, i) {
			return envpolicy.Dest{}, false, ""
		}
		return hostOf(e.value()), true, ""
	}
	return envpolicy.Dest{}, false, ""
}

// exportOf returns the export block path is in, and the rest of the path.
func (v *validator) exportOf(path string) (*Export, string) {
	for i, x := range v.plan.Export {
		if rest, ok := strings.CutPrefix(path, fmt.Sprintf("export[%d].", i)); ok && x != nil {
			return x, rest
		}
	}
	return nil, ""
}

// telemetryOf returns the telemetry target path is in, and the rest of the path.
func (v *validator) telemetryOf(path string) (*TelemetryTarget, string) {
	if v.plan.Telemetry == nil {
		return nil, ""
	}
	for i, t := range v.plan.Telemetry.Targets {
		if rest, ok := strings.CutPrefix(path, fmt.Sprintf("telemetry.targets[%d].", i)); ok && t != nil {
			return t, rest
		}
	}
	return nil, ""
}

// exportSink is credentialSink for an export block: its headers' values
// and the password or key parameter of its url go to the url's host.
func (v *validator) exportSink(e *envString, i int, x *Export, rest string) (envpolicy.Dest, bool, string) {
	switch {
	case strings.HasPrefix(rest, "headers."):
		return hostOf(x.URL), true, ""
	case rest == "url":
		if e.read[i] == envValue && strings.ContainsAny(e.text[i], "/?#@[]&=\\ \t\r\n") {
			return envpolicy.Dest{}, false, "the value of environment variable " + e.parts[i].Name +
				" contains characters that would change the URL (one of / ? # @ & = [ ] \\ or white space): percent-encode them in the variable"
		}
		if !inURLCredential(e, i) {
			return envpolicy.Dest{}, false, ""
		}
		return hostOf(e.value()), true, ""
	}
	return envpolicy.Dest{}, false, ""
}

// standIn matches what an unresolved ${VAR} left in a value (see expand).
var standIn = regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*\}`)

// hostOf is where a URL sends requests, also when a reference in its
// password or query could not be resolved (so a refusal can still suggest
// the host); zero when the host itself is unknown or the URL invalid.
func hostOf(raw string) envpolicy.Dest {
	if d, ok := envpolicy.DestOf(raw); ok {
		return d
	}
	// Only a value with an unresolved reference (which fails the plan
	// anyway) or an invalid URL (which validation reports) gets here.
	const unresolved = "runnerenvunresolved"
	d, ok := envpolicy.DestOf(standIn.ReplaceAllString(raw, unresolved))
	if !ok || strings.Contains(d.Host, unresolved) {
		return envpolicy.Dest{}
	}
	return d
}

// endpointOf returns the endpoint whose field path is (the longest name
// matching, since a name may hold dots).
func (v *validator) endpointOf(path string) (string, *Endpoint) {
	best := ""
	var ep *Endpoint
	for name, e := range v.plan.Endpoints {
		if strings.HasPrefix(path, "endpoints."+name+".") && len(name) >= len(best) && e != nil {
			best, ep = name, e
		}
	}
	return best, ep
}

// inURLCredential reports whether reference i of a URL value lands in its
// password or in the value of a credential parameter (?api_key=...), the
// parts every output redacts. It parses the URL with the reference replaced
// by a marker; the value itself has no character that could move a
// boundary of the URL (checked by the caller), so the marker lands where the
// value does.
func inURLCredential(e *envString, i int) bool {
	marker := "runnerenvmark" + strconv.Itoa(i) + "x"
	for strings.Contains(e.value(), marker) {
		marker += "x"
	}
	var b strings.Builder
	for j, t := range e.text {
		switch {
		case j == i:
			b.WriteString(marker)
		case e.read[j] >= envUnset:
			b.WriteString("unresolved") // a stand-in "${X}" would not parse
		default:
			b.WriteString(t)
		}
	}
	u, err := url.Parse(b.String())
	if err != nil {
		return false
	}
	shown := []string{u.Scheme, u.User.Username(), u.Host, u.Path, u.RawPath, u.Fragment, u.Opaque}
	inCred := false
	if pw, ok := u.User.Password(); ok && strings.Contains(pw, marker) {
		inCred = true
	}
	for k, vals := range u.Query() {
		shown = append(shown, k)
		for _, val := range vals {
			if redact.IsCredentialParam(k) && strings.Contains(val, marker) {
				inCred = true
			} else {
				shown = append(shown, val)
			}
		}
	}
	return inCred && !strings.Contains(strings.Join(shown, "\x00"), marker)
}
