package scenario

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/runnerbench/runner/internal/redact"
)

// AllowEnvVar is the environment variable that holds the job's allow-list,
// in the syntax of --allow-env. A plan cannot set it: it is read from the
// process environment, never from the plan.
const AllowEnvVar = "RUNNER_ALLOW_ENV"

// EnvAllowList is the job's decision, not the plan's, about which environment
// variables a plan may read and where their values may go. It is built from
// --allow-env flags and RUNNER_ALLOW_ENV, entries separated by spaces:
//
//	NAME             the value is public: any field, any host, shown in reports
//	NAME@HOST,HOST   the value is a credential: only in api_key, headers or the
//	                 password or key parameter of a URL, only to these hosts,
//	                 never shown
//	*  / *@HOST      the same for every variable not named in an entry
//
// HOST is a host name or IP address, optionally with :PORT; "*.example.com"
// matches its subdomains, "*" any host, and "localhost" (or 127.0.0.1, ::1)
// every loopback address and the built-in simulator. A variable that is
// listed in no entry cannot be read. The zero value allows nothing.
type EnvAllowList struct {
	rules []envRule
}

// envRule is one entry of the allow-list.
type envRule struct {
	name   string        // a variable name, or "*"
	public bool          // no @HOST: the value may go anywhere and be shown
	hosts  []hostPattern // with @HOST: where the value may be sent, as a credential
	spec   string        // the entry as written, for messages
}

// hostPattern is one HOST of an entry.
type hostPattern struct {
	host string // lower-case name or IP; "*" any; "*.x" subdomains of x
	port string // "" any port
}

// Add parses spec (one or more entries separated by white space) into the
// list. source names where spec came from (--allow-env, RUNNER_ALLOW_ENV) in
// an error.
func (a *EnvAllowList) Add(source, spec string) error {
	for _, entry := range strings.Fields(spec) {
		r, err := parseEnvRule(entry)
		if err != nil {
			return fmt.Errorf("%s: %q: %v", source, entry, err)
		}
		a.rules = append(a.rules, r)
	}
	return nil
}

func parseEnvRule(entry string) (envRule, error) {
	name, hosts, hasHosts := strings.Cut(entry, "@")
	if name != "*" && !validEnvName(name) {
		if strings.Contains(name, ",") {
			return envRule{}, fmt.Errorf("separate entries with spaces, not commas (commas separate the hosts after @)")
		}
		return envRule{}, fmt.Errorf("%q is not an environment variable name (letters, digits, _) or *", name)
	}
	r := envRule{name: name, public: !hasHosts, spec: entry}
	if !hasHosts {
		return r, nil
	}
	for _, h := range strings.Split(hosts, ",") {
		hp, err := parseHostPattern(h)
		if err != nil {
			return envRule{}, err
		}
		r.hosts = append(r.hosts, hp)
	}
	return r, nil
}

func parseHostPattern(s string) (hostPattern, error) {
	if s == "" {
		return hostPattern{}, fmt.Errorf("empty host after @ or ,")
	}
	if strings.Contains(s, "://") || strings.ContainsAny(s, "/?#@ ") {
		return hostPattern{}, fmt.Errorf("%q is not a host: give a host name or address such as api.example.com or 10.0.0.5:8000, not a URL", s)
	}
	host, port := s, ""
	if h, p, err := net.SplitHostPort(s); err == nil {
		host, port = h, p
	} else if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		host = s[1 : len(s)-1]
	} else if strings.Count(s, ":") == 1 {
		return hostPattern{}, fmt.Errorf("%q: the port must be a number", s)
	}
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return hostPattern{}, fmt.Errorf("%q: the port must be a number from 1 to 65535", s)
		}
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "" || (strings.Contains(host, "*") && host != "*" && (!strings.HasPrefix(host, "*.") || strings.Count(host, "*") > 1)) {
		return hostPattern{}, fmt.Errorf("%q: a host is a name, an address, *.domain or *", s)
	}
	return hostPattern{host: host, port: port}, nil
}

func (h hostPattern) String() string {
	if h.port == "" {
		return h.host
	}
	return net.JoinHostPort(h.host, h.port)
}

// envGrant is what the allow-list says about one variable: the entries that
// name it, merged; or, when none does, the entries for "*". A named entry
// wins over "*", so "* KEY@api.example.com" makes every variable public but
// KEY, which stays a credential for that host.
type envGrant struct {
	listed bool
	public bool
	hosts  []hostPattern
}

func (a *EnvAllowList) grant(name string) envGrant {
	if a == nil {
		return envGrant{}
	}
	for _, want := range []string{name, "*"} {
		var g envGrant
		for _, r := range a.rules {
			if r.name == want {
				g.listed = true
				g.public = g.public || r.public
				g.hosts = append(g.hosts, r.hosts...)
			}
		}
		if g.listed {
			return g
		}
	}
	return envGrant{}
}

// allows reports whether a credential may be sent to dest.
func (g envGrant) allows(dest destination) bool {
	if g.public {
		return true
	}
	return slices.ContainsFunc(g.hosts, dest.matches)
}

// hostList formats the hosts a credential may go to, for messages.
func (g envGrant) hostList() string {
	s := make([]string, len(g.hosts))
	for i, h := range g.hosts {
		s[i] = h.String()
	}
	return strings.Join(s, ", ")
}

// destination is a host that receives what a plan sends: an endpoint's
// base_url or metrics_url, or the built-in simulator (loopback).
type destination struct {
	host string // lower-case, without brackets
	port string // the effective port ("443" for https without one)
}

// destinationOf returns where a URL sends requests; ok is false when it is
// not an http(s) URL with a host (validation reports that on its own).
func destinationOf(raw string) (destination, bool) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return destination{}, false
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return destination{host: strings.TrimSuffix(strings.ToLower(u.Hostname()), "."), port: port}, true
}

// simulatorDestination is where an in-process simulator listens.
var simulatorDestination = destination{host: "localhost"}

// isLoopback reports whether host names this machine: localhost, 127.0.0.0/8
// or ::1. A value sent there does not leave the machine.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (d destination) matches(p hostPattern) bool {
	if p.port != "" && p.port != d.port {
		return false
	}
	switch {
	case p.host == "*":
		return true
	case strings.HasPrefix(p.host, "*."):
		return strings.HasSuffix(d.host, p.host[1:])
	case isLoopback(p.host):
		// Every loopback name is the same machine: "localhost" in the
		// allow-list covers 127.0.0.1, ::1 and the simulator.
		return isLoopback(d.host)
	}
	if pip, dip := net.ParseIP(p.host), net.ParseIP(d.host); pip != nil && dip != nil {
		return pip.Equal(dip)
	}
	return p.host == d.host
}

func (d destination) String() string {
	if d == simulatorDestination {
		return "the built-in simulator (localhost)"
	}
	return d.host
}

// IsCredentialParam reports whether a URL query parameter named name carries
// a credential, by its name (see redact.IsCredentialParam). Every place that
// shows a URL redacts these, so a credential may be passed there.
func IsCredentialParam(name string) bool { return redact.IsCredentialParam(name) }

// AllowsCredential reports whether the job allows the variable name to be
// sent, as a credential, to host:port (a server the job itself names, such
// as a results database): an entry NAME@HOST (or *@HOST) that matches it,
// or NAME listed as public.
func (a *EnvAllowList) AllowsCredential(name, host, port string) bool {
	g := a.grant(name)
	return g.listed && g.allows(destination{host: strings.TrimSuffix(strings.ToLower(host), "."), port: port})
}
