package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runnerbench/runner/internal/testutil"
)

// secretValue is what every credential in these tests holds: no message may
// contain it.
const secretValue = "sk-never-print-me-4242"

// endpointPlan is a minimal plan with one base_url endpoint and extra lines
// for it, and an inline prompt set.
func endpointPlan(endpoint string) string {
	return `version: 1
name: t
endpoints:
  e:
` + endpoint + `prompts:
  p: {inline: [hello]}
stages:
  - {name: s, endpoint: e, prompts: p, concurrency: [1]}
`
}

func TestEnvPolicy(t *testing.T) {
	const api = "    base_url: https://api.example.com/v1\n"
	for _, tc := range []struct {
		name, allow, endpoint string
		want                  string // "" loads; else a substring of the one error
	}{
		{"no allow-list", "", api + "    api_key: ${KEY}\n",
			"plan.yaml:6:14: endpoints.e.api_key: the job does not allow this plan to read environment variable KEY: if api.example.com is the host this credential is for (this plan sends it there), run with --allow-env KEY@api.example.com (or add it to RUNNER_ALLOW_ENV); see docs/security.md"},
		{"public field suggests NAME", "", api + "    model: ${KEY}\n", "if it holds no secret, run with --allow-env KEY (or add it to RUNNER_ALLOW_ENV): its value is then public"},
		{"one line a variable, credential form first", "", api + "    model: ${KEY}\n    api_key: ${KEY}\n",
			"plan.yaml:6:12: endpoints.e.model: the job does not allow this plan to read environment variable KEY (here and in 1 more place): if api.example.com is the host this credential is for (this plan sends it there), run with --allow-env KEY@api.example.com"},
		{"default of an unset variable", "", api + "    model: ${UNSET:-m}\n", ""},
		{"default of a set variable not allowed", "", api + "    model: ${KEY:-m}\n",
			"environment variable KEY is set, but the job does not allow this plan to read it: unset it to use the plan's default, or, if it holds no secret, run with --allow-env KEY (or add it to RUNNER_ALLOW_ENV): its value is then public"},
		{"allowed but unset", "UNSET", api + "    model: ${UNSET}\n", "environment variable UNSET is not set"},
		{"credential to its host", "KEY@api.example.com", api + "    api_key: ${KEY}\n    headers: {X-Key: \"k ${KEY}\"}\n", ""},
		{"credential to another host", "KEY@api.example.com", "    base_url: https://evil.example.net/v1\n    api_key: ${KEY}\n",
			"endpoints.e.api_key: environment variable KEY may be sent only to api.example.com, not to evil.example.net: if evil.example.net should receive it, run with --allow-env KEY@evil.example.net"},
		{"allowed host as a user name", "KEY@api.example.com", "    base_url: https://api.example.com@evil.example.net/v1\n    api_key: ${KEY}\n", "not to evil.example.net"},
		{"allowed host as a subdomain", "KEY@api.example.com", "    base_url: https://api.example.com.evil.example.net/v1\n    api_key: ${KEY}\n", "not to api.example.com.evil.example.net"},
		{"credential in a header to another host", "KEY@api.example.com", "    base_url: http://127.0.0.1:9/v1\n    headers: {X-Key: \"${KEY}\"}\n", "not to 127.0.0.1"},
		{"credential to the simulator", "KEY@localhost", "    simulator: {}\n    api_key: ${KEY}\n", ""},
		{"credential to the simulator not allowed", "KEY@api.example.com", "    simulator: {}\n    api_key: ${KEY}\n", "not to the built-in simulator (localhost)"},
		{"credential as the model", "KEY@api.example.com", api + "    model: ${KEY}\n",
			"endpoints.e.model: environment variable KEY is allowed only as a credential (for api.example.com): it may be used in api_key, headers, or the password or key parameter of a URL"},
		{"credential in a base_url path", "KEY@api.example.com", "    base_url: https://api.example.com/${KEY}/v1\n", "allowed only as a credential"},
		{"credential as a URL user name", "KEY@api.example.com", "    base_url: https://${KEY}@api.example.com/v1\n", "allowed only as a credential"},
		{"credential in a URL password", "KEY@api.example.com", "    base_url: https://u:${KEY}@api.example.com/v1\n", ""},
		{"credential in a key parameter", "KEY@api.example.com", "    base_url: https://api.example.com/v1?api-version=1&api_key=${KEY}\n", ""},
		{"credential in another parameter", "KEY@api.example.com", "    base_url: https://api.example.com/v1?user=${KEY}\n", "allowed only as a credential"},
		{"credential in metrics_url to another host", "KEY@api.example.com", api + "    metrics_url: https://u:${KEY}@metrics.example.net/metrics\n", "not to metrics.example.net"},
		{"credential that moves the host", "KEY@api.example.com", "    base_url: https://u:${KEY}@api.example.com/v1\n", "would change the URL"},
		{"public anywhere", "KEY", "    base_url: https://evil.example.net/${KEY}\n    model: ${KEY}\n    api_key: ${KEY}\n", ""},
		{"star is public", "*", "    base_url: https://evil.example.net/v1\n    api_key: ${KEY}\n", ""},
		{"named entry beats star", "* KEY@api.example.com", "    base_url: https://evil.example.net/v1\n    api_key: ${KEY}\n", "may be sent only to api.example.com"},
		{"star credential", "*@api.example.com", api + "    api_key: ${KEY}\n    model: ${MODEL:-m}\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			value := secretValue
			if tc.name == "credential that moves the host" {
				value = "x@evil.example.net/"
			}
			opts := jobEnv("KEY", value)
			opts.AllowEnv = allowList(tc.allow)
			_, err := load(t, endpointPlan(tc.endpoint), opts)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("loaded; want %q", tc.want)
			}
			if n := len(Errors(err)); n != 1 || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %d errors:\n%v\nwant one with %q", n, err, tc.want)
			}
			if strings.Contains(err.Error(), value) || strings.Contains(err.Error(), "evil.example.net/") && value != secretValue {
				t.Errorf("the error shows the value: %v", err)
			}
		})
	}
}

// TestEnvPolicyEveryField: a credential is refused in every field that is
// shown or sent in clear, including inline prompts, extra_body and names.
func TestEnvPolicyEveryField(t *testing.T) {
	src := `version: 1
name: t-${KEY}
description: ${KEY}
endpoints:
  e:
    base_url: http://127.0.0.1:9/v1
    model: ${KEY}
    tls: {server_name: "${KEY}"}
prompts:
  p: {inline: ["token is ${KEY}"]}
stages:
  - name: s ${KEY}
    endpoint: e
    prompts: p
    concurrency: [1]
    extra_body: {user: "${KEY}", nested: [{x: "${KEY}"}]}
    checks:
      - {name: "c ${KEY}", expr: failed == 0}
`
	opts := jobEnv("KEY", secretValue)
	opts.AllowEnv = allowList("KEY@localhost")
	_, err := load(t, src, opts)
	if err == nil {
		t.Fatal("loaded")
	}
	want := []string{"name", "description", "endpoints.e.model", "endpoints.e.tls.server_name", "prompts.p.inline[0]",
		"stages[0].name", "stages[0].extra_body.user", "stages[0].extra_body.nested[0].x", "stages[0].checks[0].name"}
	errs := Errors(err)
	if len(errs) != len(want) {
		t.Errorf("%d errors, want %d:\n%v", len(errs), len(want), err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), ": "+w+": environment variable KEY is allowed only as a credential") {
			t.Errorf("no refusal for %s", w)
		}
	}
	if strings.Contains(err.Error(), secretValue) {
		t.Errorf("an error shows the value:\n%v", err)
	}
	// As a public value, the same plan loads.
	opts.AllowEnv = allowList("KEY")
	p := mustLoad(t, src, opts)
	if p.PromptSet("p").Inline[0] != "token is "+secretValue {
		t.Errorf("inline: %q", p.PromptSet("p").Inline[0])
	}
}

func TestPlanFilesStayInTree(t *testing.T) {
	root := testutil.HostileTree(t)
	dir := filepath.Join(root, "plans")
	secret := filepath.Join(root, "secret.csv")
	for _, tc := range []struct {
		file      string
		allowDirs []string
		want      string // "" loads
	}{
		{"ok.jsonl", nil, ""},
		{"data/in.jsonl", nil, ""},
		{"./data/../ok.jsonl", nil, ""},
		{"link-in.jsonl", nil, ""},
		{filepath.Join(dir, "ok.jsonl"), nil, ""},
		{"../secret.csv", nil, `plan.yaml:8:13: prompts.x.file: "../secret.csv" leads outside the plan's directory (` + dir + `); to allow another directory, run with --allow-dir DIR`},
		{"data/../../secret.csv", nil, "leads outside the plan's directory"},
		{secret, nil, `"` + secret + `" is an absolute path: a plan reads files only inside its own directory`},
		{"/etc/hostname", nil, "is an absolute path"},
		{"/dev/zero", nil, "is an absolute path"},
		{"link-out.csv", nil, `"link-out.csv" is or passes through a symbolic link that leads outside the plan's directory`},
		{"dir-out/secret.csv", nil, "symbolic link that leads outside"},
		{".git/config", nil, `".git/config" is inside a hidden file or directory (.git): a plan may not read hidden files`},
		{"data/../.git/config", nil, "hidden file or directory (.git)"},
		{"link-git.csv", nil, "leads through a symbolic link to a hidden file or directory (.git)"},
		{"../shared/ok.jsonl", []string{filepath.Join(root, "shared")}, ""},
		{filepath.Join(root, "shared", "ok.jsonl"), []string{filepath.Join(root, "shared")}, ""},
		{"../secret.csv", []string{filepath.Join(root, "shared")}, "leads outside"},
		{"../secret.csv", []string{root}, ""},
		{"missing.jsonl", nil, `cannot read prompt file "missing.jsonl": no such file or directory`},
	} {
		t.Run(tc.file, func(t *testing.T) {
			src := strings.Replace(minimal, "  p: {synthetic: {input_tokens: 32}}\n", "  p: {synthetic: {input_tokens: 32}}\n  x: {file: \""+tc.file+"\", format: jsonl}\n", 1) +
				"  - {name: x, endpoint: sim, prompts: x, concurrency: [1]}\n" // a set is held as far as a stage sends it
			if strings.HasSuffix(tc.file, ".csv") || strings.HasSuffix(tc.file, "config") {
				src = strings.Replace(src, "format: jsonl", "format: csv", 1)
			}
			opts := env()
			opts.AllowDirs = tc.allowDirs
			p, err := LoadBytes("plan.yaml", []byte(src), dir, opts)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if len(p.PromptSet("x").Loaded) != 1 {
					t.Errorf("loaded %+v", p.PromptSet("x").Loaded)
				}
				return
			}
			if err == nil || len(Errors(err)) != 1 || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v\nwant one error with %q", err, tc.want)
			}
			if strings.Contains(err.Error(), testutil.SecretFileText) {
				t.Errorf("the error shows what the file holds: %v", err)
			}
		})
	}
	if _, err := LoadBytes("plan.yaml", []byte(minimal), dir, Options{AllowDirs: []string{filepath.Join(root, "nope")}}); err == nil || !strings.Contains(err.Error(), "--allow-dir") {
		t.Errorf("a missing --allow-dir: %v", err)
	}
}

func TestCAFileLoaded(t *testing.T) {
	root := testutil.HostileTree(t)
	dir := filepath.Join(root, "plans")
	pemCert := "-----BEGIN CERTIFICATE-----\nMIIBhTCCASugAwIBAgIQIRi6zePL6mKjOipn+dNuaTAKBggqhkjOPQQDAjASMRAw\nDgYDVQQKEwdBY21lIENvMB4XDTE3MTAyMDE5NDMwNloXDTE4MTAyMDE5NDMwNlow\nEjEQMA4GA1UEChMHQWNtZSBDbzBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABD0d\n7VNhbWvZLWPuj/RtHFjvtJBEwOkhbN/BnnE8rnZR8+sbwnc/KhCk3FhnpHZnQz7B\n5aETbbIgmuvewdjvSBSjYzBhMA4GA1UdDwEB/wQEAwICpDATBgNVHSUEDDAKBggr\nBgEFBQcDATAPBgNVHRMBAf8EBTADAQH/MCkGA1UdEQQiMCCCDmxvY2FsaG9zdDo1\nNDUzgg4xMjcuMC4wLjE6NTQ1MzAKBggqhkjOPQQDAgNIADBFAiEA2zpJEPQyz6/l\nWf86aX6PepsntZv2GYlA5UpabfT2EZICICpJ5h/iI+i341gBmLiAFQOyTDT+/wQc\n6MF9+Yw1Yy0t\n-----END CERTIFICATE-----\n"
	if err := os.WriteFile(filepath.Join(dir, "ca.pem"), []byte(pemCert), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ file, want string }{
		{"ca.pem", ""},
		{"../secret.csv", `plan.yaml:6:20: endpoints.e.tls.ca_file: "../secret.csv" leads outside the plan's directory`},
		{"/etc/ssl/certs/ca-certificates.crt", "is an absolute path"},
		{"ok.jsonl", `endpoints.e.tls.ca_file: no PEM certificates found in CA file "ok.jsonl"`},
		{"missing.pem", `cannot read CA file "missing.pem"`},
	} {
		src := endpointPlan("    base_url: https://127.0.0.1:9/v1\n    tls: {ca_file: \"" + tc.file + "\"}\n")
		p, err := LoadBytes("plan.yaml", []byte(src), dir, env())
		if tc.want == "" {
			if err != nil {
				t.Fatalf("%s: %v", tc.file, err)
			}
			if string(p.Endpoint("e").TLS.CAPEM) != pemCert {
				t.Errorf("%s: CAPEM not the file's bytes", tc.file)
			}
			continue
		}
		if err == nil || len(Errors(err)) != 1 || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v\nwant one error with %q", tc.file, err, tc.want)
		}
	}
}

func TestNamesAndControlCharacters(t *testing.T) {
	for _, tc := range []struct{ old, new, want string }{
		{"name: t", `name: "t\n::error::forged"`, `name: U+000A is not allowed in a name`},
		{"name: t", `name: "t\u202Egnp.exe"`, `name: U+202E is not allowed in a name`},
		{"  - name: s", `  - name: "s\r"`, `stages[0].name: U+000D is not allowed in a name`},
		{"  - name: s", `  - name: "s\tx"`, `stages[0].name: U+0009 is not allowed in a name`},
		{"concurrency: [1]", "concurrency: [1]\n    checks: [{name: \"ok\\n::warning::x\", expr: failed == 0}]", `stages[0].checks[0].name: U+000A is not allowed in a name`},
		{"name: t", "name: t\ndescription: \"\\e[2J cleared\"", `description: control character U+001B is not allowed (only tabs and line breaks)`},
		{"concurrency: [1]", "concurrency: [1]\n    checks: [{expr: \"failed == 0 || \\\"\\e]8;;x\\\" == \\\"\\\"\"}]", `stages[0].checks[0].expr: control character U+001B`},
		{"  sim:", "  \"sim\\e[31m\":", `endpoints: key "sim\x1b[31m": U+001B is not allowed in a name`},
		{"  p: {synthetic", "  \"p\\x07\": {synthetic", `prompts: key "p\a": U+0007 is not allowed in a name`},
	} {
		src := strings.Replace(minimal, tc.old, tc.new, 1)
		if src == minimal {
			t.Fatalf("%q not in the plan", tc.old)
		}
		_, err := load(t, src, env())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.new, err, tc.want)
		}
		for _, e := range Errors(err) {
			if r, bad := controlChar(e.Msg); bad || strings.ContainsAny(e.Msg, "\n\r") {
				t.Errorf("%s: the message carries %U: %q", tc.new, r, e.Msg)
			}
		}
	}
	// A multi-line description or expression is fine.
	mustLoad(t, strings.Replace(minimal, "name: t", "name: t\ndescription: |\n  two\n  lines", 1), env())
}

// TestPlanDirUnresolvable: a plan whose directory does not exist (or cannot
// be resolved) loads what needs no file and refuses a file with a message,
// not a crash.
func TestPlanDirUnresolvable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gone")
	if _, err := LoadBytes("plan.yaml", []byte(minimal), dir, env()); err != nil {
		t.Fatalf("a plan without files: %v", err)
	}
	src := strings.Replace(minimal, "  p: {synthetic: {input_tokens: 32}}\n", "  p: {file: x.jsonl}\n", 1)
	if _, err := LoadBytes("plan.yaml", []byte(src), dir, env()); err == nil || !strings.Contains(err.Error(), `prompts.p.file: cannot read prompt file "x.jsonl"`) {
		t.Errorf("got %v", err)
	}
}
