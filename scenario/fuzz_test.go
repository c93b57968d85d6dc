package scenario

import (
	"os"
	"path/filepath"
	"testing"

	"gopkg.in/yaml.v3"
)

// FuzzLoad feeds arbitrary bytes to the plan loader: it must never panic, and
// a plan it accepts must be internally consistent.
func FuzzLoad(f *testing.F) {
	for _, glob := range []string{"../plans/*.yaml", "testdata/invalid/*.yaml", "testdata/hostile/*.yaml"} {
		files, _ := filepath.Glob(glob)
		for _, name := range files {
			if b, err := os.ReadFile(name); err == nil {
				f.Add(b)
			}
		}
	}
	f.Add([]byte(minimal))
	dir := f.TempDir()
	opts := env("KEY", "v", "EMPTY", "")
	f.Fuzz(func(t *testing.T, data []byte) {
		// A result directory's plan.yaml is read as written (report --plan):
		// whatever it holds, that must not panic.
		w, werr := Written("fuzz.yaml", data)
		p, err := LoadBytes("fuzz.yaml", data, dir, opts)
		if err == nil && werr != nil {
			t.Fatalf("a plan that loads is not read as written: %v", werr)
		}
		if err == nil && LoadDiff(w, w, "a", "b") != "" {
			t.Fatalf("a plan's load differs from itself: %s", LoadDiff(w, w, "a", "b"))
		}
		if err != nil {
			if p != nil {
				t.Fatal("a plan and an error")
			}
			if len(Errors(err)) == 0 {
				t.Fatalf("error without positions: %v", err)
			}
			return
		}
		if len(p.Stages) == 0 || len(p.Endpoints) == 0 || len(p.Prompts) == 0 {
			t.Fatalf("accepted an incomplete plan: %+v", p)
		}
		for _, s := range p.Stages {
			if p.Endpoint(s.Endpoint) == nil || p.PromptSet(s.Prompts) == nil {
				t.Fatalf("stage %q has a dangling reference", s.Name)
			}
			loads := 0
			for _, has := range []bool{len(s.Concurrency) > 0, len(s.Rate) > 0, s.Search != nil, len(s.Users) > 0, s.Series != nil} {
				if has {
					loads++
				}
			}
			if loads != 1 {
				t.Fatalf("stage %q: concurrency %v rate %v search %v users %v series %v", s.Name, s.Concurrency, s.Rate, s.Search, s.Users, s.Series)
			}
			if sr := s.Search; sr != nil {
				for _, tg := range sr.Targets {
					if tg.Program == nil {
						t.Fatalf("search target %q not compiled", tg.Name)
					}
				}
				if !(sr.Min > 0 && sr.Max > sr.Min && sr.Step > 0 && sr.Budget.Probes > 0 && *sr.Repeats >= 0) {
					t.Fatalf("stage %q: search %+v", s.Name, sr)
				}
			}
			for _, c := range s.Checks {
				if c.Program == nil || (c.When != "" && c.WhenProgram == nil) {
					t.Fatalf("check %q not compiled", c.Name)
				}
			}
		}
		if _, err := yaml.Marshal(p); err != nil {
			t.Fatalf("accepted plan does not print: %v", err)
		}
	})
}
