package testutil

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// SecretFileText is what the files outside a hostile tree's plan directory
// (and its .git/config) hold: no output may ever contain it.
const SecretFileText = "the-job-secret-file-7f3a"

// HostileTree builds the files a CI checkout could hold around a plan, in a
// temporary directory, and returns its root:
//
//	secret.csv                  outside the plan's directory
//	shared/ok.jsonl             outside, for --allow-dir
//	plans/                      the plan's directory
//	plans/ok.jsonl, plans/data/in.jsonl
//	plans/link-in.jsonl         → data/in.jsonl (stays inside)
//	plans/link-out.csv          → ../secret.csv
//	plans/dir-out               → ..
//	plans/.git/config           where actions/checkout leaves the job's token
//	plans/link-git.csv          → .git/config
//
// It skips the test where symbolic links cannot be made.
func HostileTree(t testing.TB) string {
	t.Helper()
	root := t.TempDir()
	for name, body := range map[string]string{
		"secret.csv":          "prompt\n" + SecretFileText + "\n",
		"shared/ok.jsonl":     `{"prompt": "shared"}` + "\n",
		"plans/ok.jsonl":      `{"prompt": "ok"}` + "\n",
		"plans/data/in.jsonl": `{"prompt": "in"}` + "\n",
		"plans/.git/config":   "prompt\n[http] extraheader = AUTHORIZATION: basic " + SecretFileText + "\n",
	} {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"plans/link-in.jsonl": "data/in.jsonl",
		"plans/link-out.csv":  "../secret.csv",
		"plans/dir-out":       "..",
		"plans/link-git.csv":  ".git/config",
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Skipf("no symbolic links here: %v", err)
		}
	}
	return root
}

// HostilePlan is one plan of the hostile corpus (scenario/testdata/hostile).
type HostilePlan struct {
	Name string // file name without .yaml
	Path string // the copy inside the tree
	// Refused is true for "# expect: refused" (exit 2 before any traffic),
	// false for "# expect: neutralised" (it runs; its outputs are safe).
	Refused bool
}

// HostileCorpus is the hostile corpus copied into a HostileTree, with
// TRIPWIRE in every plan replaced by tripwire (a host:port that must receive
// nothing).
type HostileCorpus struct {
	Root  string
	Plans []HostilePlan
	// Env is job.env: the CI job's environment, RUNNER_ALLOW_ENV included.
	Env map[string]string
	// Secrets are the values no output may contain: every variable of Env
	// but the allow-list and the public model, and SecretFileText.
	Secrets []string
}

// NewHostileCorpus copies the corpus at dir into a new HostileTree.
func NewHostileCorpus(t testing.TB, dir, tripwire string) *HostileCorpus {
	t.Helper()
	c := &HostileCorpus{Root: HostileTree(t), Env: map[string]string{}, Secrets: []string{SecretFileText}}
	f, err := os.Open(filepath.Join(dir, "job.env"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			c.Env[k] = v
			if k != "RUNNER_ALLOW_ENV" && !strings.HasPrefix(k, "PUBLIC_") {
				c.Secrets = append(c.Secrets, v)
			}
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if len(files) == 0 {
		t.Fatalf("no plans in %s", dir)
	}
	for _, src := range files {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		body := strings.ReplaceAll(string(b), "TRIPWIRE", tripwire)
		hp := HostilePlan{Name: strings.TrimSuffix(filepath.Base(src), ".yaml"), Path: filepath.Join(c.Root, "plans", filepath.Base(src))}
		switch {
		case strings.Contains(body, "\n# expect: refused"):
			hp.Refused = true
		case !strings.Contains(body, "\n# expect: neutralised"):
			t.Fatalf("%s says neither \"# expect: refused\" nor \"# expect: neutralised\"", src)
		}
		if err := os.WriteFile(hp.Path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		c.Plans = append(c.Plans, hp)
	}
	slices.SortFunc(c.Plans, func(a, b HostilePlan) int { return strings.Compare(a.Name, b.Name) })
	return c
}

// Leaks returns the secrets that s contains.
func (c *HostileCorpus) Leaks(s string) []string {
	var out []string
	for _, sec := range c.Secrets {
		if strings.Contains(s, sec) {
			out = append(out, sec)
		}
	}
	return out
}
