package scenario

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/runnerbench/runner/sim/simconfig"
)

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLoadSimConfig decodes a simulator config with the plan's own strict
// decoder: values land, unknown keys and invalid values are positioned errors.
func TestLoadSimConfig(t *testing.T) {
	cfg, err := LoadSimConfig(writeFile(t, "ok.yaml", "ttft_ms: 40\nitl_ms: 8\nspec_k: 3\nfaults: {http_429: 0.1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TTFTMs != 40 || cfg.ITLMs != 8 || cfg.SpecK != 3 || cfg.Faults.HTTP429 != 0.1 {
		t.Errorf("decoded %+v", cfg)
	}
	d := cfg.Defaults()
	if d.SpecAcceptance != 0.7 || d.MaxNumSeqs != 256 || d.Model != "sim" || d.TTFTMs != 40 {
		t.Errorf("defaults %+v", d)
	}
	for _, c := range []struct{ body, want string }{
		{"ttft: 40\n", "x.yaml:1:1: "},
		{"itl_ms: 3\nfaults:\n  stal_ms: 5\n", "x.yaml:3:3: "},
		{"faults: {http_429: 0.7, http_500: 0.5}\n", "x.yaml:1:9: faults: fault probabilities sum to"},
		{"itl_ms: 3\nmax_num_seqs: -1\n", "x.yaml:2:15: max_num_seqs: must be >= 1"},
		{"itl_ms: [1]\n", "x.yaml:1:9: "},
		{"- a\n", "x.yaml:1:1: a simulator config is a mapping"},
	} {
		_, err := LoadSimConfig(writeFile(t, "x.yaml", c.body))
		if err == nil {
			t.Errorf("%q accepted", c.body)
			continue
		}
		errs := Errors(err)
		if len(errs) == 0 || !strings.HasSuffix(errs[0].File, "x.yaml") {
			t.Errorf("%q: error %v is not positioned", c.body, err)
			continue
		}
		if got := "x.yaml" + strings.TrimPrefix(errs[0].Error(), filepath.Dir(errs[0].File)+"/x.yaml"); !strings.HasPrefix(got, c.want) {
			t.Errorf("%q: got %q, want prefix %q", c.body, got, c.want)
		}
	}
}

// TestSampleConfigs keeps the sample configs in plans/sim decodable and valid.
func TestSampleConfigs(t *testing.T) {
	paths, _ := filepath.Glob("../plans/sim/*.yaml")
	if len(paths) < 2 {
		t.Fatalf("sample configs: %v", paths)
	}
	for _, p := range paths {
		cfg, err := LoadSimConfig(p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if err := cfg.Defaults().Validate(); err != nil {
			t.Errorf("%s: %v", p, err)
		}
		if filepath.Base(p) == "fast.yaml" && !reflect.DeepEqual(cfg.Defaults(), simconfig.FastConfig()) {
			t.Errorf("fast.yaml %+v differs from FastConfig %+v", cfg.Defaults(), simconfig.FastConfig())
		}
	}
}
