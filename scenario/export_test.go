package scenario

import (
	"strings"
	"testing"
)

// TestExportCredentials: an export block's header values and URL password
// are credentials for the URL's host, as an endpoint's are; its URL is
// shown without them.
func TestExportCredentials(t *testing.T) {
	plan := func(export string) string {
		return endpointPlan("    simulator: {}\n") + "export:\n" + export
	}
	for _, tc := range []struct{ name, allow, export, want string }{
		{"header to its host", "KEY@prom.example.com", "  - {to: prometheus-rw, url: https://prom.example.com/api/v1/write, headers: {Authorization: \"Bearer ${KEY}\"}}\n", ""},
		{"header to another host", "KEY@prom.example.com", "  - {to: otlp, url: https://evil.example.net, headers: {Authorization: \"Bearer ${KEY}\"}}\n",
			"export[0].headers.Authorization: environment variable KEY may be sent only to prom.example.com, not to evil.example.net"},
		{"not allowed at all", "", "  - {to: otlp, url: https://evil.example.net, headers: {X-Key: \"${KEY}\"}}\n",
			"if evil.example.net is the host this credential is for (this plan sends it there), run with --allow-env KEY@evil.example.net"},
		{"URL password to another host", "KEY@prom.example.com", "  - {to: prometheus-rw, url: \"https://u:${KEY}@evil.example.net/api/v1/write\"}\n", "not to evil.example.net"},
		{"credential in the URL's path", "KEY@prom.example.com", "  - {to: prometheus-rw, url: \"https://prom.example.com/${KEY}\"}\n", "allowed only as a credential"},
		{"unknown protocol", "", "  - {to: graphite, url: https://prom.example.com}\n", "export[0].to: \"graphite\" is not one of prometheus-rw, otlp"},
		{"not a URL, shown without its password", "", "  - {to: otlp, url: \"ftp://u:hunter22@prom.example.com\"}\n", "export[0].url: ftp://prom.example.com is not an http(s) URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := jobEnv("KEY", secretValue)
			opts.AllowEnv = allowList(tc.allow)
			p, err := load(t, plan(tc.export), opts)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if got := p.Export[0].Headers["Authorization"].Reveal(); got != "Bearer "+secretValue {
					t.Errorf("header = %q", got)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), secretValue) || strings.Contains(err.Error(), "hunter22") {
				t.Errorf("the error shows a credential: %v", err)
			}
		})
	}
}
