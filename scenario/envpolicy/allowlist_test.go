package envpolicy

import (
	"strings"
	"testing"
)

// allowList is the list of spec, which must parse.
func allowList(t *testing.T, spec string) *AllowList {
	t.Helper()
	a := &AllowList{}
	if err := a.Add(AllowEnvVar, spec); err != nil {
		t.Fatal(err)
	}
	return a
}

func TestAllowListSyntax(t *testing.T) {
	for _, tc := range []struct{ spec, err string }{
		{"KEY", ""},
		{"KEY@api.example.com", ""},
		{"KEY@api.example.com,10.0.0.5:8000,[::1]:9,::1,*.corp.example,localhost", ""},
		{"  A   B@h\tC  ", ""},
		{"*", ""},
		{"*@localhost", ""},
		{"KEY@*", ""},
		{"A,B", "separate entries with spaces"},
		{"1KEY", "not an environment variable name"},
		{"KEY@", "empty host"},
		{"KEY@https://api.example.com", "not a URL"},
		{"KEY@api.example.com/v1", "not a URL"},
		{"KEY@host:http", "port must be a number"},
		{"KEY@host:0", "from 1 to 65535"},
		{"KEY@a.*.com", "a host is a name"},
		{"KEY@a,,b", "empty host"},
	} {
		err := (&AllowList{}).Add("--allow-env", tc.spec)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.spec, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !strings.HasPrefix(err.Error(), "--allow-env: ")):
			t.Errorf("%q: got %v, want an error with %q", tc.spec, err, tc.err)
		}
	}
}

func TestHostMatching(t *testing.T) {
	for _, tc := range []struct {
		pattern, url string
		want         bool
	}{
		{"api.example.com", "https://api.example.com/v1", true},
		{"api.example.com", "https://API.Example.com./v1", true},
		{"api.example.com", "https://api.example.com.evil.net/v1", false},
		{"api.example.com", "https://evil.net/api.example.com", false},
		{"api.example.com:443", "https://api.example.com/v1", true},
		{"api.example.com:8443", "https://api.example.com/v1", false},
		{"*.example.com", "https://eu.api.example.com/v1", true},
		{"*.example.com", "https://example.com/v1", false},
		{"*.example.com", "https://badexample.com/v1", false},
		{"localhost", "http://127.0.0.1:8000/v1", true},
		{"localhost", "http://127.9.9.9:8000/v1", true},
		{"localhost", "http://[::1]:8000/v1", true},
		{"127.0.0.1", "http://localhost:8000/v1", true},
		{"localhost", "http://10.0.0.1:8000/v1", false},
		{"localhost:8000", "http://127.0.0.1:8001/v1", false},
		{"10.0.0.5", "http://10.0.0.5:8000/v1", true},
		{"::ffff:10.0.0.5", "http://10.0.0.5:8000/v1", true},
		{"*", "https://anything.example/v1", true},
	} {
		a := allowList(t, "K@"+tc.pattern)
		d, ok := DestOf(tc.url)
		if !ok {
			t.Fatalf("%s: not a URL", tc.url)
		}
		if got := a.Grant("K").Allows(d); got != tc.want {
			t.Errorf("K@%s → %s: %v, want %v", tc.pattern, tc.url, got, tc.want)
		}
	}
	if !allowList(t, "K@localhost").Grant("K").Allows(Simulator) || allowList(t, "K@api.example.com").Grant("K").Allows(Simulator) {
		t.Error("the simulator is loopback, and only loopback")
	}
	// A named entry wins over "*".
	a := allowList(t, "* KEY@api.example.com")
	if g := a.Grant("KEY"); g.Public || len(g.Hosts) != 1 {
		t.Errorf("KEY: %+v, want a credential for one host", g)
	}
	if g := a.Grant("OTHER"); !g.Public {
		t.Errorf("OTHER: %+v, want public through *", g)
	}
	if g := (*AllowList)(nil).Grant("KEY"); g.Listed {
		t.Error("a nil list allows something")
	}
}

func TestParseTemplate(t *testing.T) {
	parts, err := ParseTemplate("a${X}b${Y:-d}$${lit}")
	if err != nil {
		t.Fatal(err)
	}
	want := []Part{{Lit: "a"}, {Name: "X"}, {Lit: "b"}, {Name: "Y", Def: "d", HasDef: true}, {Lit: "${lit}"}}
	if len(parts) != len(want) {
		t.Fatalf("parts %+v, want %+v", parts, want)
	}
	for i := range want {
		if parts[i] != want[i] {
			t.Errorf("part %d: %+v, want %+v", i, parts[i], want[i])
		}
	}
	if parts, err := ParseTemplate("no reference $5"); parts != nil || err != nil {
		t.Errorf("plain text: %+v, %v", parts, err)
	}
	for _, bad := range []string{"${", "${1X}", "${A B}"} {
		if _, err := ParseTemplate(bad); err == nil {
			t.Errorf("ParseTemplate(%q) should fail", bad)
		}
	}
}
