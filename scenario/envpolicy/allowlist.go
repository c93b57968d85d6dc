// Package envpolicy is the job's environment policy for a plan: which
// environment variables a plan may read and where their values may go (the
// allow-list of --allow-env and RUNNER_ALLOW_ENV), and the ${VAR} syntax a
// plan writes them in. The plan loader (package scenario) expands a plan's
// values through it and checks every value against it where it is sent.
package envpolicy

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// AllowEnvVar is the environment variable that holds the job's allow-list,
// in the syntax of --allow-env. A plan cannot set it: it is read from the
// process environment, never from the plan.
const AllowEnvVar = "RUNNER_ALLOW_ENV"

// AllowList is the job's decision, not the plan's, about which environment
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
type AllowList struct {
	rules []envRule
}

// envRule is one entry of the allow-list.
type envRule struct {
	name   string        // a variable name, or "*"
	public bool          // no @HOST: the value may go anywhere and be shown
	hosts  []HostPattern // with @HOST: where the value may be sent, as a credential
	spec   string        // the entry as written, for messages
}

// HostPattern is one HOST of an entry.
type HostPattern struct {
	host string // lower-case name or IP; "*" any; "*.x" subdomains of x
	port string // "" any port
}

// Add parses spec (one or more entries separated by white space) into the
// list. source names where spec came from (--allow-env, RUNNER_ALLOW_ENV) in
// an error.
func (a *AllowList) Add(source, spec string) error {
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
	if name != "*" && !ValidName(name) {
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

func parseHostPattern(s string) (HostPattern, error) {
	if s == "" {
		return HostPattern{}, fmt.Errorf("empty host after @ or ,")
	}
	if strings.Contains(s, "://") || strings.ContainsAny(s, "/?#@ ") {
		return HostPattern{}, fmt.Errorf("%q is not a host: give a host name or address such as api.example.com or 10.0.0.5:8000, not a URL", s)
	}
	host, port := s, ""
	if h, p, err := net.SplitHostPort(s); err == nil {
		host, port = h, p
	} else if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		host = s[1 : len(s)-1]
	} else if strings.Count(s, ":") == 1 {
		return HostPattern{}, fmt.Errorf("%q: the port must be a number", s)
	}
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return HostPattern{}, fmt.Errorf("%q: the port must be a number from 1 to 65535", s)
		}
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "" || (strings.Contains(host, "*") && host != "*" && (!strings.HasPrefix(host, "*.") || strings.Count(host, "*") > 1)) {
		return HostPattern{}, fmt.Errorf("%q: a host is a name, an address, *.domain or *", s)
	}
	return HostPattern{host: host, port: port}, nil
}

func (h HostPattern) String() string {
	if h.port == "" {
		return h.host
	}
	return net.JoinHostPort(h.host, h.port)
}

// Grant is what the allow-list says about one variable: the entries that
// name it, merged; or, when none does, the entries for "*". A named entry
// wins over "*", so "* KEY@api.example.com" makes every variable public but
// KEY, which stays a credential for that host.
type Grant struct {
	Listed bool          // an entry names the variable (or "*" does)
	Public bool          // the value may go anywhere and be shown
	Hosts  []HostPattern // where the value may be sent, as a credential
}

// Grant returns what the list says about the variable name.
func (a *AllowList) Grant(name string) Grant {
	if a == nil {
		return Grant{}
	}
	for _, want := range []string{name, "*"} {
		var g Grant
		for _, r := range a.rules {
			if r.name == want {
				g.Listed = true
				g.Public = g.Public || r.public
				g.Hosts = append(g.Hosts, r.hosts...)
			}
		}
		if g.Listed {
			return g
		}
	}
	return Grant{}
}

// Allows reports whether a credential may be sent to dest.
func (g Grant) Allows(dest Dest) bool {
	if g.Public {
		return true
	}
	return slices.ContainsFunc(g.Hosts, dest.matches)
}

// HostList formats the hosts a credential may go to, for messages.
func (g Grant) HostList() string {
	s := make([]string, len(g.Hosts))
	for i, h := range g.Hosts {
		s[i] = h.String()
	}
	return strings.Join(s, ", ")
}

// Dest is a host that receives what a plan sends: an endpoint's
// base_url or metrics_url, or the built-in simulator (loopback).
type Dest struct {
	Host string // lower-case, without brackets
	Port string // the effective port ("443" for https without one)
}

// DestOf returns where a URL sends requests; ok is false when it is
// not an http(s) URL with a host (validation reports that on its own).
func DestOf(raw string) (Dest, bool) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Dest{}, false
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return Dest{Host: strings.TrimSuffix(strings.ToLower(u.Hostname()), "."), Port: port}, true
}

// Simulator is where an in-process simulator listens.
var Simulator = Dest{Host: "localhost"}

// isLoopback reports whether host names this machine: localhost, 127.0.0.0/8
// or ::1. A value sent there does not leave the machine.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (d Dest) matches(p HostPattern) bool {
	if p.port != "" && p.port != d.Port {
		return false
	}
	switch {
	case p.host == "*":
		return true
	case strings.HasPrefix(p.host, "*."):
		return strings.HasSuffix(d.Host, p.host[1:])
	case isLoopback(p.host):
		// Every loopback name is the same machine: "localhost" in the
		// allow-list covers 127.0.0.1, ::1 and the simulator.
		return isLoopback(d.Host)
	}
	if pip, dip := net.ParseIP(p.host), net.ParseIP(d.Host); pip != nil && dip != nil {
		return pip.Equal(dip)
	}
	return p.host == d.Host
}

func (d Dest) String() string {
	if d == Simulator {
		return "the built-in simulator (localhost)"
	}
	return d.Host
}

// AllowsCredential reports whether the job allows the variable name to be
// sent, as a credential, to host:port (a server the job itself names, such
// as a results database): an entry NAME@HOST (or *@HOST) that matches it,
// or NAME listed as public.
func (a *AllowList) AllowsCredential(name, host, port string) bool {
	g := a.Grant(name)
	return g.Listed && g.Allows(Dest{Host: strings.TrimSuffix(strings.ToLower(host), "."), Port: port})
}
