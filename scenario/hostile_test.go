package scenario

import (
	"path/filepath"
	"testing"

	"github.com/runnerbench/runner/internal/testutil"
	"github.com/runnerbench/runner/scenario/envpolicy"
)

// TestHostileCorpus loads every plan of testdata/hostile as a CI job would,
// with the secrets and allow-list of testdata/hostile/job.env, from a tree
// that holds the files a checkout could (see testutil.HostileTree). A plan
// marked "expect: refused" fails to load with exactly the messages of its
// golden file (go test -update rewrites them), none of which shows a secret
// or a secret file's content; a plan marked "expect: neutralised" loads (its
// outputs are checked by cli TestHostileMarkup).
func TestHostileCorpus(t *testing.T) {
	corpus, err := filepath.Abs("testdata/hostile")
	if err != nil {
		t.Fatal(err)
	}
	c := testutil.NewHostileCorpus(t, corpus, "127.0.0.1:9")
	t.Chdir(c.Root) // messages name plans/<case>.yaml, the same on every machine
	allow := &envpolicy.AllowList{}
	if err := allow.Add(envpolicy.AllowEnvVar, c.Env[envpolicy.AllowEnvVar]); err != nil {
		t.Fatal(err)
	}
	opts := Options{AllowEnv: allow, Getenv: func(k string) (string, bool) { v, ok := c.Env[k]; return v, ok }}
	refused := 0
	for _, hp := range c.Plans {
		t.Run(hp.Name, func(t *testing.T) {
			_, err := Load(filepath.Join("plans", hp.Name+".yaml"), opts)
			if !hp.Refused {
				if err != nil {
					t.Fatalf("a neutralised plan must load: %v", err)
				}
				return
			}
			refused++
			if err == nil {
				t.Fatal("loaded")
			}
			got := err.Error() + "\n"
			if leaks := c.Leaks(got); len(leaks) > 0 {
				t.Errorf("the messages show %q:\n%s", leaks, got)
			}
			checkGolden(t, filepath.Join(corpus, hp.Name+".golden"), got, "TestHostileCorpus")
			for _, e := range Errors(err) {
				if e.Line == 0 || e.Column == 0 {
					t.Errorf("not positioned: %v", e)
				}
			}
		})
	}
	if refused < 12 {
		t.Errorf("only %d refused plans in the corpus", refused)
	}
}
