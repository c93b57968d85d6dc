// Package redact keeps credentials that people put in URLs out of messages,
// logs, reports and printed plans: the one place that decides how a URL is
// shown.
package redact

import (
	"errors"
	"net/url"
	"strings"
)

// Marker replaces a secret where the shape must stay (a printed plan).
const Marker = "[REDACTED]"

// URL is s as messages, logs and reports show it: without user info, query
// or fragment, where credentials hide (a query may also carry Azure's
// api-version, which is not worth the risk). An unparseable URL is shown as
// "<invalid url>", since its text could be anything.
func URL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "<invalid url>"
	}
	u.User = nil
	u.RawQuery = ""
	u.Fragment = ""
	return u.String()
}

// URLs applies URL to each.
func URLs(us []string) []string {
	out := make([]string, len(us))
	for i, u := range us {
		out[i] = URL(u)
	}
	return out
}

// Error replaces the URL of a *url.Error in err with its redacted form; net/http
// puts the whole request URL in its errors.
func Error(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return &url.Error{Op: ue.Op, URL: URL(ue.URL), Err: ue.Err}
	}
	return err
}

// credentialWords mark a URL query parameter whose value is a credential
// (?api_key=, ?token=, ?sig=), by its name.
var credentialWords = []string{"key", "token", "secret", "sig", "pass", "auth", "cred"}

// IsCredentialParam reports whether a URL query parameter named name carries
// a credential, by its name. Every place that shows a URL redacts these.
func IsCredentialParam(name string) bool {
	lk := strings.ToLower(name)
	for _, w := range credentialWords {
		if strings.Contains(lk, w) {
			return true
		}
	}
	return false
}

// URLInPlan is s as a printed plan shows it: still a valid URL of the same
// shape, with a password in the user info and the value of any query
// parameter named like a credential (?api_key=) replaced by Marker, left
// percent-encoded (%5BREDACTED%5D) so the printed plan loads again.
func URLInPlan(s string) string {
	u, err := url.Parse(s)
	if err != nil || s == "" {
		return s
	}
	changed := false
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), Marker)
		changed = true
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			if IsCredentialParam(k) {
				q[k] = []string{Marker}
				changed = true
			}
		}
		u.RawQuery = q.Encode()
	}
	if !changed {
		return s
	}
	return u.String()
}
